/*
 * os.c - the only caller of mmap, mremap, munmap, mprotect and madvise.
 *
 * Every function here leaves errno as it found it: the allocator sets
 * ENOMEM itself when an allocation fails, and a successful malloc must not
 * change errno.  System calls are counted (relaxed atomics) for the dump.
 * Guard pages use MADV_GUARD_INSTALL where the kernel has it (Linux 6.13+),
 * which costs no extra mapping, and fall back to mprotect(PROT_NONE).
 */
#include "internal.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

static struct om_os_counts counts;
static int guard_madvise = 1;	/* cleared once the kernel refuses it */

#if OM_FAULT_INJECTION
static long fault_mmap;		/* > 0: fail that many more; < 0: fail all */

OM_EXPORT void omalloc_fault_mmap(long n);

void
omalloc_fault_mmap(long n)
{
	__atomic_store_n(&fault_mmap, n, __ATOMIC_SEQ_CST);
}

static int
fault(void)
{
	long n = __atomic_load_n(&fault_mmap, __ATOMIC_SEQ_CST);

	if (n == 0)
		return 0;
	if (n > 0)
		__atomic_fetch_sub(&fault_mmap, 1, __ATOMIC_SEQ_CST);
	return 1;
}
#else
#define fault() 0
#endif

#define COUNT(field) __atomic_fetch_add(&counts.field, 1, __ATOMIC_RELAXED)

/* Keep [p, p+len) out of core dumps (conceal memory). */
static void
dontdump(void *p, size_t len)
{
	COUNT(madvise);
	madvise(p, len, MADV_DONTDUMP);
}

static void *
map(void *hint, size_t len, int flags, int conceal)
{
	int saved = errno;
	void *p;

	if (fault())
		return NULL;
	COUNT(mmap);
	p = mmap(hint, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (p == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	if (conceal)
		dontdump(p, len);
	errno = saved;
	return p;
}

/* Map len bytes of fresh, zeroed, read-write memory; NULL on failure. */
void *
om_os_map(size_t len, int conceal)
{
	return map(NULL, len, 0, conceal);
}

/*
 * Reserve len bytes of address space: no access and no commit charge
 * until om_os_commit opens part of it.  NULL on failure.
 */
void *
om_os_reserve(size_t len)
{
	int saved = errno;
	void *p;

	if (fault())
		return NULL;
	COUNT(mmap);
	p = mmap(NULL, len, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = saved;
	return p == MAP_FAILED ? NULL : p;
}

/* Make [p, p+len) of a reservation zeroed read-write memory, kept out of
 * core dumps if conceal.  Returns 0 or -1. */
int
om_os_commit(void *p, size_t len, int conceal)
{
	int saved = errno;

	if (fault())
		return -1;
	if (om_os_protect(p, len, 1) != 0)
		return -1;
	if (conceal)
		dontdump(p, len);
	errno = saved;
	return 0;
}

/*
 * Grow the mapping [p, p+oldlen) to newlen bytes: in place when the pages
 * behind it are free, else moved elsewhere by the kernel, which moves the
 * page tables and copies nothing; the old range is then unmapped.  The
 * new pages are zero.  Returns the mapping's address, NULL on failure (p
 * untouched).  Counted with mmap.
 */
void *
om_os_remap(void *p, size_t oldlen, size_t newlen)
{
	int saved = errno;
	void *q;

	if (fault())
		return NULL;
	COUNT(mmap);
	q = mremap(p, oldlen, newlen, MREMAP_MAYMOVE);
	errno = saved;
	return q == MAP_FAILED ? NULL : q;
}

void
om_os_unmap(void *p, size_t len)
{
	int saved = errno;

	COUNT(munmap);
	if (munmap(p, len) != 0)
		om_fatal(NULL, "munmap failed", p);
	errno = saved;
}

/* access: 0 none, 1 read-write.  Returns 0 or -1. */
int
om_os_protect(void *p, size_t len, int access)
{
	int saved = errno, rc;

	COUNT(mprotect);
	rc = mprotect(p, len, access ? PROT_READ | PROT_WRITE : PROT_NONE);
	errno = saved;
	return rc;
}

/* Make [p, p+len) fault on any access. */
int
om_os_guard(void *p, size_t len)
{
	int saved = errno;

	if (__atomic_load_n(&guard_madvise, __ATOMIC_RELAXED)) {
		COUNT(madvise);
		if (madvise(p, len, MADV_GUARD_INSTALL) == 0) {
			errno = saved;
			return 0;
		}
		__atomic_store_n(&guard_madvise, 0, __ATOMIC_RELAXED);
	}
	errno = saved;
	return om_os_protect(p, len, 0);
}

/* Undo om_os_guard: the pages become zeroed read-write memory. */
int
om_os_unguard(void *p, size_t len)
{
	int saved = errno;

	if (__atomic_load_n(&guard_madvise, __ATOMIC_RELAXED)) {
		COUNT(madvise);
		if (madvise(p, len, MADV_GUARD_REMOVE) == 0) {
			errno = saved;
			return 0;
		}
	}
	errno = saved;
	return om_os_protect(p, len, 1);
}

/* Make [p, p+len) read-only for good: mprotect, then mseal(2) where the
 * kernel has it (Linux 6.10+), so it cannot be made writable again. */
void
om_os_readonly(void *p, size_t len)
{
	int saved = errno;

	COUNT(mprotect);
	if (mprotect(p, len, PROT_READ) != 0)
		om_fatal(NULL, "mprotect of the option page failed", p);
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
	syscall(SYS_mseal, p, len, 0UL);
	errno = saved;
}

void
om_os_futex_wait(int *w, int val, long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000L,
		.tv_nsec = ns % 1000000000L };
	int saved = errno;

	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
	errno = saved;
}

void
om_os_futex_wake(int *w)
{
	int saved = errno;

	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

static int
membarrier_cmd(int cmd)
{
	int saved = errno;
	long rc = syscall(SYS_membarrier, cmd, 0, 0);

	errno = saved;
	return rc == 0 ? 0 : -1;
}

/* Ask for the expedited private barrier of the biased pool locks.
 * Returns 0 when the kernel grants it. */
int
om_os_membarrier_register(void)
{
	return membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

/* A full memory barrier on every CPU running a thread of this process.
 * Returns 0, or -1 when the kernel refused. */
int
om_os_membarrier(void)
{
	return membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

/* Whether a thread of this process has that id. */
int
om_os_thread_alive(int tid)
{
	int saved = errno, alive;

	alive = syscall(SYS_tgkill, om_os_getpid(), tid, 0) == 0 ||
	    errno != ESRCH;
	errno = saved;
	return alive;
}

void
om_os_counts(struct om_os_counts *c)
{
	c->mmap = __atomic_load_n(&counts.mmap, __ATOMIC_RELAXED);
	c->munmap = __atomic_load_n(&counts.munmap, __ATOMIC_RELAXED);
	c->mprotect = __atomic_load_n(&counts.mprotect, __ATOMIC_RELAXED);
	c->madvise = __atomic_load_n(&counts.madvise, __ATOMIC_RELAXED);
}

long
om_os_gettid(void)
{
	return syscall(SYS_gettid);
}

long
om_os_getpid(void)
{
	return syscall(SYS_getpid);
}

/* Write all of buf, retrying on EINTR and short writes.  0 or -1. */
int
om_os_write(int fd, const void *buf, size_t len)
{
	const char *c = buf;
	int saved = errno;

	while (len > 0) {
		ssize_t n = write(fd, c, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			errno = saved;
			return -1;
		}
		c += n;
		len -= (size_t)n;
	}
	errno = saved;
	return 0;
}
