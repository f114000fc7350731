/*
 * dump.c - statistics: the dump of D and malloc_gdump, in OpenBSD's layout.
 *
 * One section per pool, printed under that pool's lock (after its delayed
 * ring is flushed, so delayed chunks do not count as in use), then one leak
 * report for the process.  Nothing here allocates from the heap: output
 * goes through om_buf, and the leak table lives in pages of its own.
 * The fatal path dumps with trylock, since it may hold a pool lock.
 */
#include "internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <errno.h>
#include <unistd.h>

struct leak {
	void *f;
	size_t bytes;
	size_t count;
};

struct leaks {
	struct leak *t;
	size_t total;		/* slots, a power of two */
	size_t used;
	size_t dropped;		/* allocations that found no slot */
};

static void
leak_add(struct leaks *l, void *f, size_t bytes)
{
	size_t i, mask = l->total - 1;

	if (l->t == NULL)
		return;
	i = (size_t)(((uintptr_t)f >> 4) * 0x9E3779B97F4A7C15ULL >> 40) & mask;
	for (;;) {
		if (l->t[i].count == 0) {
			if (l->used * 4 >= l->total * 3) {
				l->dropped++;
				return;
			}
			l->t[i].f = f;
			l->used++;
			break;
		}
		if (l->t[i].f == f)
			break;
		i = (i + 1) & mask;
	}
	l->t[i].bytes += bytes;
	l->t[i].count++;
}

/* The chunks threads have freed but still hold in their queues of frees
 * into other pools (api.c), sorted: they are not leaks. */
struct queued {
	void **p;
	size_t n, len;
};

static void
queued_gather(struct queued *q, int for_fatal)
{
	size_t n, gap, i, j;

	q->n = 0;
	n = om_pool_rq_gather(NULL, 0, for_fatal);
	if (n == 0)
		return;
	/* Room for the queues that fill meanwhile. */
	q->len = OM_PAGEROUND((n + 2 * OM_RQ_LEN) * sizeof(void *));
	if ((q->p = om_os_map(q->len, 0)) == NULL)
		return;
	n = om_pool_rq_gather(q->p, q->len / sizeof(void *), for_fatal);
	q->n = n < q->len / sizeof(void *) ? n : q->len / sizeof(void *);
	/* Shell sort, with no call out of the library. */
	for (gap = q->n / 2; gap > 0; gap /= 2)
		for (i = gap; i < q->n; i++) {
			void *v = q->p[i];

			for (j = i; j >= gap &&
			    (uintptr_t)q->p[j - gap] > (uintptr_t)v; j -= gap)
				q->p[j] = q->p[j - gap];
			q->p[j] = v;
		}
}

static int
queued_has(const struct queued *q, const void *p)
{
	size_t lo = 0, hi = q->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)q->p[mid] < (uintptr_t)p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < q->n && q->p[lo] == p;
}

/* Every live allocation of d, by caller, but the queued frees.  Pool
 * locked. */
static void
leak_gather(struct dir_info *d, struct leaks *l, const struct queued *q)
{
	size_t i;
	unsigned int s;

	for (i = 0; i < d->regions_total; i++) {
		struct region_info *r = &d->r[i];

		if (r->p == 0)
			continue;
		if (!OM_REGION_IS_CHUNK(r)) {
			leak_add(l, r->f, r->size);
			continue;
		}
		struct chunk_info *info = om_region_chunk(r);
		for (s = 0; s < info->total; s++)
			if (om_chunk_slot_used(info, s) && (q->n == 0 ||
			    !queued_has(q, (char *)info->page +
			    (size_t)s * info->size)))
				leak_add(l, om_chunk_caller(info, s),
				    om_chunk_slot_reqsize(info, s));
	}
}

static void
print_caller(struct om_buf *o, void *f)
{
	Dl_info info;

	if (f != NULL && dladdr(f, &info) != 0 && info.dli_fname != NULL) {
		/* The full path, so that addr2line -e can be given it. */
		const char *name = info.dli_fname;

		if (*name == '\0')
			name = program_invocation_name;
		om_buf_printf(o, "%18s+0x%lx", name,
		    (unsigned long)((uintptr_t)f - (uintptr_t)info.dli_fbase));
	} else
		om_buf_printf(o, "%18p", f);
}

static void
leak_print(struct om_buf *o, struct leaks *l)
{
	size_t i, j, n = 0;

	om_buf_puts(o, "Leak report:\n");
	om_buf_puts(o, "                 f     sum      #    avg\n");
	if (l->t == NULL) {
		om_buf_puts(o, "(no memory for the leak table)\n");
		return;
	}
	/* Compact, then sort by bytes, largest first (insertion sort). */
	for (i = 0; i < l->total; i++)
		if (l->t[i].count != 0)
			l->t[n++] = l->t[i];
	for (i = 1; i < n; i++) {
		struct leak t = l->t[i];

		for (j = i; j > 0 && l->t[j - 1].bytes < t.bytes; j--)
			l->t[j] = l->t[j - 1];
		l->t[j] = t;
	}
	for (i = 0; i < n; i++) {
		size_t count = l->t[i].count;

		print_caller(o, l->t[i].f);
		om_buf_printf(o, " %7zu %6zu %6zu\n", l->t[i].bytes, count,
		    count != 0 ? l->t[i].bytes / count : 0);
	}
	if (l->dropped)
		om_buf_printf(o, "(%zu allocations not listed: table full)\n",
		    l->dropped);
}

/* Pool `at` of om_pool_at, whose counters are d's. */
static void
dump_pool(struct om_buf *o, unsigned int at, const struct dir_info *d,
    unsigned long other, unsigned long searches)
{
	unsigned int b, k;
	size_t i;

	if (at == mopts.npools)
		om_buf_printf(o, "Malloc dir of %s pool conceal at %p\n",
		    om_progname(), (void *)om_pool_at(at));
	else
		om_buf_printf(o, "Malloc dir of %s pool %u at %p\n",
		    om_progname(), at, (void *)om_pool_at(at));
	om_buf_printf(o, "Region slots free %zu/%zu\n", d->regions_free,
	    d->regions_total);
	om_buf_printf(o, "Finds %lu/%lu\n", d->finds, d->find_collisions);
	om_buf_printf(o, "Inserts %lu/%lu\n", d->inserts,
	    d->insert_collisions);
	om_buf_printf(o, "Deletes %lu/%lu\n", d->deletes, d->delete_moves);
	om_buf_printf(o, "Cheap reallocs %lu/%lu\n", d->cheap_reallocs,
	    d->cheap_realloc_tries);
	om_buf_printf(o, "Other pool searches %lu/%lu\n", other, searches);
	om_buf_printf(o, "Lock acquisitions %lu/%lu, waited %llu ns, "
	    "biased %lu, revoked %lu\n", d->lock_contended,
	    d->lock_plain + d->lock_biased,
	    d->lock_wait_ns, d->lock_biased, d->lock_revoked);
	om_buf_printf(o, "In use %zu\n", d->inuse);
	om_buf_printf(o, "Guarded %zu\n", d->guarded);
	om_buf_puts(o, "Free chunk structs:\n");
	for (b = 0; b < OM_NBUCKETS; b++) {
		unsigned int pages = 0, slots = 0, total = 0;

		for (k = 0; k < OM_CHUNK_LISTS; k++) {
			struct chunk_info *c;

			for (c = d->chunk_dir[b][k]; c != NULL; c = c->next) {
				pages++;
				slots += c->free;
				total += c->total;
			}
		}
		if (pages > 0)
			om_buf_printf(o, "%6u: %u/%u slots free in %u pages\n",
			    b == 0 ? 0 : om_bucket_size[b], slots, total,
			    pages);
	}
	om_buf_printf(o, "Free pages cached: %zu\n", om_cache_held(d));
	if (mopts.opt.verbose) {
		size_t n = 0;

		if (d->cache_front != 0)
			om_buf_printf(o, "  cache %zu: %p %u pages junked "
			    "front\n", n++, (void *)d->cache_front,
			    d->cache_front_npages);

		for (unsigned int c = 0; c < OM_CACHE_CLASSES; c++)
			for (i = 0; i < d->cache_n[c]; i++) {
				const struct om_cache_entry *e =
				    &d->cache[d->cache_base[c] + i];

				om_buf_printf(o, "  cache %zu: %p %u pages"
				    "%s%s%s\n", n++, (void *)e->p, e->npages,
				    e->guarded ? " guarded" : "",
				    e->junked ? " junked" : "",
				    e->noaccess ? " noaccess" : "");
			}
		om_buf_puts(o, "Hash table:\n");
		for (i = 0; i < d->regions_total; i++) {
			struct region_info *r = &d->r[i];

			if (r->p == 0)
				continue;
			if (OM_REGION_IS_CHUNK(r))
				om_buf_printf(o, "  %5zu %p chunks of %u\n", i,
				    (void *)OM_REGION_PAGE(r),
				    om_region_chunk(r)->size);
			else
				om_buf_printf(o, "  %5zu %p %zu bytes\n", i,
				    (void *)(OM_REGION_PAGE(r) +
				    OM_REGION_OFFSET(r)), (size_t)r->size);
		}
	}
}

/* Lock d for the dump: the fatal path only tries (it may hold a lock and
 * the heap may be corrupt).  Returns whether d is locked. */
static int
dump_lock(struct dir_info *d, int for_fatal)
{
	if (for_fatal) {
		int me = om_owner();

		if (!om_mutex_trylock(&d->mtx, me))
			return 0;
		/* A bias is taken back, but the wait for its holder is
		 * bounded; a pool this thread holds through its bias is
		 * busy, like one whose w it holds. */
		if (d->bias != 0 && (OM_BIAS_TID(d->bias) == me ?
		    *OM_BIAS_FLAG(d, d->bias) :
		    om_pool_bias_revoke(d, 1000, 0) != 0)) {
			om_mutex_unlock(&d->mtx);
			return 0;
		}
		return 1;
	}
	om_lock(d);
	d->func = "malloc_gdump";
	return 1;
}

static void
dump_unlock(struct dir_info *d, int for_fatal, int locked)
{
	if (locked && for_fatal)
		om_mutex_unlock(&d->mtx);
	else if (locked)
		om_unlock(d);
}

/*
 * The whole dump to fd.  for_fatal: the caller may hold a pool lock and
 * the heap may be corrupt, so locks are only tried and nothing is freed.
 */
void
om_dump_fd(int fd, int for_fatal)
{
	struct om_buf o = { .fd = fd };
	struct om_os_counts c;
	struct leaks l = { 0 };
	struct queued q = { 0 };
	size_t len = 0;
	unsigned int i;
	unsigned long other[OM_MAX_POOLS + 1], searches[OM_MAX_POOLS + 1];
	struct om_os_kept k;

	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE))
		return;
	if (!for_fatal)
		om_rq_flush();
	if (mopts.opt.dump) {
		l.total = 16384;
		len = l.total * sizeof(struct leak);
		l.t = om_os_map(len, 0);
		queued_gather(&q, for_fatal);
	}
	om_buf_printf(&o, "******** Start dump %s *******\n", om_progname());
	om_buf_printf(&o, "MT=%d M=%u I=1 F=%d U=%d J=%d R=%d X=%d C=%d "
	    "cache=%d G=%zu\n", !__libc_single_threaded, mopts.npools,
	    mopts.opt.freecheck, mopts.opt.freeunmap, mopts.opt.junk,
	    mopts.opt.realloc_move, mopts.opt.xmalloc, mopts.opt.chunk_canaries,
	    mopts.opt.cache_pages, mopts.guard);
	/* Lookups are counted by the pool that owned the pointer: add them
	 * up per starting pool first. */
	memset(other, 0, sizeof(other));
	memset(searches, 0, sizeof(searches));
	for (i = 0; i <= mopts.npools; i++) {
		struct dir_info *d = om_pool_if_open(i);
		int locked;

		if (d == NULL)
			continue;
		locked = dump_lock(d, for_fatal);
		om_pool_add_searches(d, other, searches);
		dump_unlock(d, for_fatal, locked);
	}
	om_os_counts(&c);
	om_buf_printf(&o, "Syscalls mmap %lu munmap %lu mprotect %lu "
	    "madvise %lu\n", c.mmap, c.munmap, c.mprotect, c.madvise);
	om_buf_printf(&o, "Depot pages %zu/%zu\n", om_cache_depot_pages(),
	    om_cache_depot_limit());
	om_os_kept(&k);
	if (k.held != 0)
		om_buf_printf(&o, "Mappings %ld of %ld at the last count, "
		    "releases held back %lu%s\n", k.maps, k.maps_limit, k.held,
		    k.holding ? ", holding back" : "");
	if (k.refused != 0 || k.held != 0)
		om_buf_printf(&o, "Munmap refused %lu, released in place: "
		    "kept %u runs %zu pages, list %u pages, lost %lu runs\n",
		    k.refused, k.runs, k.pages, k.blocks, k.lost);
	for (i = 0; i <= mopts.npools; i++) {
		struct dir_info *d = om_pool_if_open(i);
		int locked;

		if (d == NULL) {
			/* Never opened: every counter is zero (in .bss, not
			 * a page of zeros in the library file). */
			static struct dir_info none;

			dump_pool(&o, i, &none, 0, 0);
			continue;
		}
		locked = dump_lock(d, for_fatal);
		if (!for_fatal)
			om_chunk_flush_delayed(d);
		dump_pool(&o, i, d, other[i], searches[i]);
		if (mopts.opt.dump)
			leak_gather(d, &l, &q);
		dump_unlock(d, for_fatal, locked);
	}
	if (mopts.opt.dump)
		leak_print(&o, &l);
	om_buf_printf(&o, "******** End dump %s *******\n", om_progname());
	om_buf_flush(&o);
	if (l.t != NULL)
		om_os_unmap(l.t, len);
	if (q.p != NULL)
		om_os_unmap(q.p, q.len);
}

/* D at exit or before a fatal abort: append to MALLOC_DUMP_FILE or to
 * malloc.out in the current directory. */
void
om_dump_exit(void)
{
	const char *path = secure_getenv("MALLOC_DUMP_FILE");
	int fd, saved = errno;

	if (path == NULL || *path == '\0')
		path = "malloc.out";
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		om_warn("cannot open the dump file %s, no dump written", path);
		errno = saved;
		return;
	}
	om_dump_fd(fd, om_self >> 32 != 0);
	close(fd);
	errno = saved;
}
