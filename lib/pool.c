/*
 * pool.c - the pool array, thread -> pool, canaries, fork hooks.
 *
 * Initialisation is lazy, serialised by init_mtx and allocation-free: it
 * reads the options, seeds the random generator, reserves the pools'
 * pages and places each at a random offset, registers the fork hooks and
 * makes the option page read-only.  A thread's pool is tid & (npools - 1),
 * opened by the first thread that needs it; the tid is cached in om_self,
 * a word of initial-exec TLS (the other is om_rq, the queue of a thread's
 * frees into other pools).
 *
 * Invariant: mopts never changes after `ready` is set, so the fast path
 * reads it without a lock.
 */
#include "internal.h"

#include <sched.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* om_ready ahead of om_ro in the source puts it after om_ro in memory
 * (GCC emits the last defined first), on the page of the variables
 * below rather than alone on the page before. */
int om_ready;
union om_readonly_page om_ro __attribute__((aligned(4096)));
__thread uint64_t om_self __attribute__((tls_model("initial-exec")));
__thread struct om_rq om_rq __attribute__((tls_model("initial-exec")));

static pthread_mutex_t init_mtx = PTHREAD_MUTEX_INITIALIZER;

/* Every thread's queue of frees into other pools, under init_mtx. */
static struct om_rq *rq_head;

/* Fork bookkeeping: the forking thread and its nesting depth (a static
 * glibc calls the __malloc_fork_* hooks inside the pthread_atfork ones). */
static int fork_owner;
static int fork_nest;

/* A pool's pages: its struct and first region table, and a spare page
 * for the random offset.  What the offset leaves of them after the table
 * holds the pool's first chunk_info records (see pool_setup). */
static size_t
pool_body(void)
{
	return OM_PAGEROUND(OM_POOL_BYTES) + OM_PAGE_SIZE;
}

/* The body a pool was placed in (the offset is less than a page). */
static char *
body_of(const struct dir_info *d)
{
	return (char *)((uintptr_t)d & ~(uintptr_t)OM_PAGE_MASK);
}

/* Where a pool goes in its body: at a random cache-line offset inside the
 * spare page, so that neither a linear overflow nor a guess of the
 * address reaches it. */
static struct dir_info *
pool_place(char *body)
{
	uint16_t r;

	om_random_buf(&r, sizeof(r));
	return (struct dir_info *)(body +
	    (size_t)(r % (OM_PAGE_SIZE / 64)) * 64);
}

/* A pool's generator keyed from the process one, and the draws it keeps
 * ready: the next chunk's, and the delayed ring's next slot. */
static void
pool_key(struct dir_info *d)
{
	om_random_seed(&d->rng);
	d->rnext = om_rword(&d->rng);
	d->rring = om_rbyte(&d->rng) & (OM_DELAYED - 1);
}

/* Fill in a pool on zeroed pages: fields, region table and cache. */
static int
pool_setup(struct dir_info *d, unsigned int index, int conceal)
{
	om_mutex_init(&d->mtx);
	d->bias_after = OM_BIAS_FIRST;
	d->index = index;
	d->conceal = conceal;
	d->func = "malloc";
	d->junk = conceal ? 0 : mopts.opt.junk;
	/* Chunks take a short path unless an option asks for more. */
	d->extras = conceal || d->junk != 1 || mopts.junk_validate_full ||
	    mopts.opt.dump || mopts.opt.chunk_canaries || mopts.opt.freecheck;
	d->cache_max = conceal ? 0 : (unsigned int)mopts.opt.cache_pages;
	/* Never ownerless (conceal, private pools) unless om_pool_open
	 * starts the count at 0 for its threads to count themselves in. */
	d->threads = 1;
	pool_key(d);
	d->mapped = pool_body() + 2 * OM_PAGE_SIZE;
	om_region_table_init(d);
	/* The first records come from the rest of the body, a few hundred
	 * bytes to 4 KiB by the offset: a pool of a few chunk pages then
	 * maps no page of records and touches none apart. */
	d->info_next = (char *)d + OM_POOL_BYTES;
	d->info_left = (size_t)(body_of(d) + pool_body() - d->info_next);
	if (om_cache_init(d) != 0)
		return -1;
	d->canary1 = mopts.canary ^ (uintptr_t)d;
	d->canary2 = ~d->canary1;
	return 0;
}

/* A pool of its own, between two guard pages (the array's pools are
 * reserved together instead, see init_locked). */
struct dir_info *
om_pool_create(unsigned int index, int conceal)
{
	size_t body = pool_body();
	size_t len = body + 2 * OM_PAGE_SIZE;
	char *base;
	struct dir_info *d;

	base = om_os_map(len, conceal);
	if (base == NULL)
		return NULL;
	om_os_guard(base, OM_PAGE_SIZE);
	om_os_guard(base + OM_PAGE_SIZE + body, OM_PAGE_SIZE);
	d = pool_place(base + OM_PAGE_SIZE);
	if (pool_setup(d, index, conceal) != 0) {
		om_os_unmap(base, len);
		return NULL;
	}
	return d;
}

/*
 * The pools of the array and the conceal pool are placed at
 * initialisation in one reservation, body after body with a guard page
 * between each two and at both ends, and stay inaccessible until a thread
 * of their own (or malloc_conceal) first needs them: a process pays only
 * for the pools its threads use, and starting one costs one mmap instead
 * of five system calls a pool.  open_pools[] says which are in use, by the
 * index of om_pool_at; each is set once, after the pool is complete.
 */
static unsigned char open_pools[OM_MAX_POOLS + 1];

int
om_pool_used(unsigned int i)
{
	return __atomic_load_n(&open_pools[i], __ATOMIC_ACQUIRE);
}

/* Open pool i (om_pool_at's index) if nobody has.  0, or -1 when memory
 * for it could not be had (a later call tries again). */
int
om_pool_open(unsigned int i)
{
	struct dir_info *d = om_pool_at(i);
	char *body = body_of(d);
	int conceal = i == mopts.npools, rc = 0;

	pthread_mutex_lock(&init_mtx);
	if (!om_pool_used(i)) {
		rc = om_os_commit(body, pool_body(), conceal);
		if (rc == 0)
			rc = pool_setup(d, conceal ? OM_MAX_POOLS : i, conceal);
		if (rc == 0 && !conceal && mopts.exit_key_ok)
			d->threads = 0;
		if (rc == 0)
			__atomic_store_n(&open_pools[i], 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&init_mtx);
	return rc;
}

/*
 * The biased lock's two slow steps (the fast ones are lock() and
 * release_lock() in api.c).  Both run holding d's word w.
 */

/* A bias refused or revoked: the run that earns it starts again, twice
 * as long. */
static void
bias_backoff(struct dir_info *d)
{
	d->bias_run = 0;
	if (d->bias_after < OM_BIAS_MAX)
		d->bias_after *= 2;
}

/* The slot of bias_in that owner enters d through: its own, else one
 * never used, else one whose thread has exited (no store of that thread's
 * can come any more).  -1 if every slot serves a live thread. */
static int
bias_slot(struct dir_info *d, int owner)
{
	int s, free = -1;

	for (s = 0; s < OM_BIAS_SLOTS; s++) {
		if (d->bias_who[s] == owner)
			return s;
		if (free < 0 && d->bias_who[s] == 0)
			free = s;
	}
	for (s = 0; free < 0 && s < OM_BIAS_SLOTS; s++)
		if (!om_os_thread_alive(d->bias_who[s]))
			free = s;
	if (free >= 0) {
		d->bias_who[free] = owner;
		d->bias_in[free] = 0;
	}
	return free;
}

/* owner took w bias_after times in a row: from now on it enters d without
 * an atomic instruction.  Every other thread takes w first and so finds
 * the bias and revokes it.  A slot of bias_in serves one thread while it
 * lives (see internal.h); with none left, asking costs system calls, so
 * a refusal doubles the run too. */
void
om_pool_bias_grant(struct dir_info *d, int owner)
{
	int s;

	if (!mopts.bias_locks || d->conceal) {
		/* Never: keep the run from asking again at every lock. */
		d->bias_run = 0;
		d->bias_after = OM_BIAS_MAX;
		return;
	}
	if ((s = bias_slot(d, owner)) < 0) {
		bias_backoff(d);
		return;
	}
	d->bias_since = d->lock_biased;
	__atomic_store_n(&d->bias, OM_BIAS(owner, s), __ATOMIC_RELAXED);
}

/* Wait for the biased thread's current hold, if any, to end.
 * spins > 0 bounds the wait (the fatal path must not hang): returns -1
 * when the holder is still inside after that many tries, else 0. */
static int
bias_wait(struct dir_info *d, unsigned int slot, int spins)
{
	int i;

	for (i = 0; __atomic_load_n(&d->bias_in[slot], __ATOMIC_ACQUIRE);
	    i++) {
		if (spins > 0 && i >= spins)
			return -1;
		if (i < 100)
			OM_CPU_RELAX();
		else
			sched_yield();
	}
	return 0;
}

/* Take the bias back.  After the barrier the biased thread either is
 * visibly inside (its flag set) or will see w taken and the bias gone.
 * backoff: a thread that needs the pool took it, so the pool is shared:
 * unless the bias served OM_BIAS_PAYS acquisitions, the next costs a
 * longer run.  A visit of every pool (fork, a dump, a trim, statistics)
 * says nothing of that. */
static void
bias_clear(struct dir_info *d, int backoff)
{
	__atomic_store_n(&d->bias, 0, __ATOMIC_RELAXED);
	if (!backoff)
		d->bias_run = 0;
	else if (d->lock_biased - d->bias_since < OM_BIAS_PAYS)
		bias_backoff(d);
	else {
		d->bias_run = 0;
		d->bias_after = OM_BIAS_FIRST;
	}
	d->lock_revoked++;
}

static void
barrier_all(void)
{
	/* Granted at start-up, so this cannot fail short of a kernel bug;
	 * should it, a pause far longer than any store buffer takes to
	 * drain is the fallback. */
	if (om_os_membarrier() != 0) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
}

int
om_pool_bias_revoke(struct dir_info *d, int spins, int backoff)
{
	unsigned int slot = OM_BIAS_SLOT(d->bias);

	if (!om_os_thread_alive(OM_BIAS_TID(d->bias))) {
		/* Its thread has exited, and so left every pool: there is
		 * nothing to wait for, and the pool was not shared with it.
		 * Whoever runs it long enough now may have the bias. */
		__atomic_store_n(&d->bias, 0, __ATOMIC_RELAXED);
		d->bias_in[slot] = 0;
		d->bias_who[slot] = 0;
		d->bias_run = 0;
		d->bias_after = OM_BIAS_FIRST;
		d->lock_revoked++;
		return 0;
	}
	bias_clear(d, backoff);
	barrier_all();
	return bias_wait(d, slot, spins);
}

/*
 * Add d's lookup counts to other[] and searches[], indexed by the pool the
 * lookups started in (npools for the conceal pool): the owner counts them
 * (searches_from, left_from), the dump reports them per starting pool.
 * Pool locked.
 */
void
om_pool_add_searches(const struct dir_info *d, unsigned long *other,
    unsigned long *searches)
{
	unsigned int k;

	for (k = 0; k <= OM_MAX_POOLS; k++) {
		unsigned int to = k < mopts.npools ? k : mopts.npools;

		other[to] += d->left_from[k];
		searches[to] += d->searches_from[k];
	}
}

/* Returns 0 when ready, -1 when memory for the pools could not be had. */
static int
init_locked(void)
{
	struct om_options o;
	unsigned int i;
	/* As the kernel passed it: sysconf reads a table in libc's
	 * read-only data for the same answer, a page fault that maps the
	 * pages around it too. */
	unsigned long ps = getauxval(AT_PAGESZ);

	if (ps != OM_PAGE_SIZE) {
		om_warn("page size %lu is not supported", ps);
		return -1;
	}
	om_options_init(&o);
	om_random_global_init();
	mopts.opt = o;
	om_random_buf(&mopts.canary, sizeof(mopts.canary));
	mopts.npools = (unsigned int)o.pools;
	mopts.pool_mask = mopts.npools - 1;
	mopts.guard = o.guard ? OM_PAGE_SIZE : 0;
	mopts.junk_validate_full = o.junk >= 2 || o.freecheck;
	mopts.bias_locks = om_os_membarrier_register() == 0;
	om_chunk_init_sizes();

	if (mopts.conceal == NULL) {
		size_t stride = pool_body() + OM_PAGE_SIZE;
		char *area = om_os_reserve((mopts.npools + 1) * stride +
		    OM_PAGE_SIZE);

		if (area == NULL)
			return -1;
		for (i = 0; i <= mopts.npools; i++) {
			struct dir_info *d = pool_place(area + OM_PAGE_SIZE +
			    i * stride);

			if (i < mopts.npools)
				mopts.pools[i] = d;
			else
				mopts.conceal = d;
		}
	}
	pthread_atfork(om_pool_fork_prepare, om_pool_fork_parent,
	    om_pool_fork_child);
	mopts.exit_key_ok = pthread_key_create(&mopts.exit_key,
	    om_thread_exit) == 0;
	/* A queue is emptied when its thread exits, so only with the key;
	 * and F asks for every free to be checked at once. */
	mopts.batch_frees = mopts.exit_key_ok && !mopts.opt.freecheck &&
	    mopts.npools > 1;

	/* The options and the pool array never change from here on. */
	om_os_readonly(&om_ro, sizeof(om_ro));
	return 0;
}

/*
 * First call of a thread: make sure the heap is initialised and the
 * thread's pool open, and cache the thread id.  Returns 0, or -1 when
 * either failed for lack of memory (the caller fails with ENOMEM and a
 * later call tries again).
 */
int
om_thread_init(void)
{
	uint32_t tid;

	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE)) {
		int rc;

		/* Busy while initialising: a signal handler that allocates
		 * now is a recursive call, not a deadlock on init_mtx. */
		om_self = (uint64_t)OM_SELF_INIT << 32;
		pthread_mutex_lock(&init_mtx);
		rc = om_ready ? 0 : init_locked();
		if (rc == 0)
			__atomic_store_n(&om_ready, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&init_mtx);
		om_self = 0;
		if (rc != 0)
			return -1;
	}
	tid = (uint32_t)om_os_gettid();
	if (!om_pool_used(tid & mopts.pool_mask)) {
		int rc;

		om_self = (uint64_t)OM_SELF_INIT << 32;
		rc = om_pool_open(tid & mopts.pool_mask);
		om_self = 0;
		if (rc != 0)
			return -1;
	}
	om_self = tid;
	/* Counted in its pool until its exit (om_thread_exit).  A key
	 * beyond glibc's first block is set with calloc: after om_self. */
	if (mopts.exit_key_ok) {
		__atomic_fetch_add(&mopts.pools[tid & mopts.pool_mask]->threads,
		    1, __ATOMIC_RELAXED);
		pthread_setspecific(mopts.exit_key, (void *)1);
	}
	return 0;
}

/* Put the calling thread's queue on the list (its first queued free). */
void
om_pool_rq_list(struct om_rq *q)
{
	pthread_mutex_lock(&init_mtx);
	q->prev = NULL;
	q->next = rq_head;
	if (rq_head != NULL)
		rq_head->prev = q;
	rq_head = q;
	q->state = OM_RQ_LISTED;
	pthread_mutex_unlock(&init_mtx);
}

/* Take it off as its thread exits: the TLS block goes with the thread. */
void
om_pool_rq_unlist(struct om_rq *q)
{
	pthread_mutex_lock(&init_mtx);
	if (q->prev != NULL)
		q->prev->next = q->next;
	else
		rq_head = q->next;
	if (q->next != NULL)
		q->next->prev = q->prev;
	pthread_mutex_unlock(&init_mtx);
}

/*
 * Copy up to max of the pointers queued by every thread into out; returns
 * how many there are.  The other threads go on queueing and emptying
 * their queues meanwhile, so the copy is only as exact as a dump of a
 * running process can be.  try: the fatal path, which may hold init_mtx.
 */
size_t
om_pool_rq_gather(void **out, size_t max, int try)
{
	const struct om_rq *q;
	size_t k = 0;
	unsigned int i, n;

	if (try ? pthread_mutex_trylock(&init_mtx) != 0 :
	    pthread_mutex_lock(&init_mtx) != 0)
		return 0;
	for (q = rq_head; q != NULL; q = q->next) {
		n = __atomic_load_n(&q->n, __ATOMIC_ACQUIRE);
		for (i = 0; i < n && i < OM_RQ_LEN; i++, k++)
			if (k < max)
				out[k] = OM_RQ_PTR(__atomic_load_n(&q->p[i],
				    __ATOMIC_RELAXED));
	}
	pthread_mutex_unlock(&init_mtx);
	return k;
}

/*
 * Fork: every pool lock is taken before fork and released after it in the
 * parent; the child re-initialises them, since it has one thread.  A
 * thread that forks from a signal handler interrupting the allocator may
 * already hold a pool lock (its word holds this thread's id): that one is
 * skipped, and the interrupted call releases it when the handler returns.
 * A lock the interrupted call was only waiting for is taken like any
 * other.  fork_took[] remembers which locks the prepare hook took.  Biases
 * of other threads are revoked, with one barrier for all pools, so that
 * nobody is inside a pool while the child is made; in the child, whose
 * only thread is new, no bias survives.
 */
static unsigned char fork_took[OM_MAX_POOLS + 1];

/*
 * glibc's stdio list lock.  glibc's fork takes it before its own malloc's
 * locks; pthread_atfork handlers run earlier still, so a thread blocked in
 * fflush(NULL) behind a FILE whose owner waits for a pool lock would
 * deadlock with a fork holding every pool.  Taking the (recursive) list
 * lock first, as glibc's own malloc effectively does, keeps that order.
 */
extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);
extern void _IO_list_resetlock(void);

/*
 * Whether the thread whose per-thread word is self is inside d through
 * its bias: its own flag, named in self, is set.  Not the bias word: a
 * thread that takes w to revoke the bias clears that first, then waits
 * for the flag, so when a signal handler forks on a thread inside d that
 * way, d must not be waited for.
 */
static int
inside_through_bias(struct dir_info *d, uint64_t self)
{
	return OM_SELF_BUSY(self) == d->index + 1 &&
	    self >> OM_BIAS_SHIFT != 0 &&
	    __atomic_load_n(OM_BIAS_FLAG(d, self), __ATOMIC_RELAXED) != 0;
}

void
om_pool_fork_prepare(void)
{
	unsigned int i, s;
	int me, revoked = 0;

	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE))
		return;
	me = om_owner();
	if (__atomic_load_n(&fork_owner, __ATOMIC_RELAXED) == me) {
		fork_nest++;
		return;
	}
	_IO_list_lock();
	pthread_mutex_lock(&init_mtx);
	fork_owner = me;
	for (i = 0; i <= mopts.npools; i++) {
		/* Unopened pools stay so: init_mtx is held. */
		struct dir_info *d = om_pool_if_open(i);

		fork_took[i] = d != NULL &&
		    __atomic_load_n(&d->mtx.w, __ATOMIC_RELAXED) != me &&
		    !inside_through_bias(d, om_self);
		if (!fork_took[i])
			continue;
		om_mutex_lock(&d->mtx, me);
		/* Other threads' biases go, with one barrier for them all. */
		if (d->bias != 0 && OM_BIAS_TID(d->bias) != me) {
			bias_clear(d, 0);
			revoked = 1;
		}
	}
	if (revoked) {
		barrier_all();
		/* Every slot: the one the bias named, and any other
		 * thread's try that has yet to see w taken. */
		for (i = 0; i <= mopts.npools; i++)
			for (s = 0; fork_took[i] && s < OM_BIAS_SLOTS; s++)
				bias_wait(om_pool_at(i), s, 0);
	}
	om_cache_fork_prepare();
	om_os_fork_prepare();
}

void
om_pool_fork_parent(void)
{
	unsigned int i;

	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE))
		return;
	if (fork_nest > 0) {
		fork_nest--;
		return;
	}
	om_os_fork_parent();
	om_cache_fork_parent();
	for (i = 0; i <= mopts.npools; i++)
		if (fork_took[i])
			om_mutex_unlock(&om_pool_at(i)->mtx);
	fork_owner = 0;
	pthread_mutex_unlock(&init_mtx);
	_IO_list_unlock();
}

void
om_pool_fork_child(void)
{
	unsigned int i;
	uint64_t busy;

	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE))
		return;
	if (fork_nest > 0) {
		fork_nest--;
		return;
	}
	for (i = 0; i <= mopts.npools; i++) {
		struct dir_info *d = om_pool_if_open(i);

		if (d == NULL)
			continue;
		if (fork_took[i])
			om_mutex_init(&d->mtx);
		/* The threads the biases name do not exist here. */
		d->bias = 0;
		memset(d->bias_in, 0, sizeof(d->bias_in));
		memset(d->bias_who, 0, sizeof(d->bias_who));
		/* Nor the threads counted: this one is counted again by its
		 * next call. */
		if (i < mopts.npools && mopts.exit_key_ok)
			d->threads = 0;
	}
	om_os_fork_child();
	om_cache_fork_child();
	/* Random bytes of the child's own, in every pool nobody was inside
	 * (see om_random_fork_child). */
	om_random_fork_child();
	for (i = 0; i <= mopts.npools; i++)
		if (fork_took[i])
			pool_key(om_pool_at(i));
	/* The child is a new thread of its own, whose pool may not be open
	 * yet: its next call looks up the tid again (om_thread_init). */
	busy = om_self & ~(uint64_t)0xffffffff;
	om_self = busy;
	/* Only this thread's queue is left; the chunks the others had
	 * queued stay in use here. */
	rq_head = NULL;
	if (om_rq.state == OM_RQ_LISTED) {
		om_rq.next = om_rq.prev = NULL;
		rq_head = &om_rq;
	}
	fork_owner = 0;
	pthread_mutex_init(&init_mtx, NULL);
	_IO_list_resetlock();
}

