/*
 * omalloc.h - the extensions omalloc offers beyond the C and glibc heap API.
 *
 * The standard functions (malloc, free, posix_memalign, malloc_usable_size,
 * mallinfo2, ...) keep their usual headers: <stdlib.h> and <malloc.h>.
 * This header declares only what OpenBSD and omalloc add, and C23's sized
 * frees for C libraries whose <stdlib.h> does not have them yet.
 */
#ifndef OMALLOC_H
#define OMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write the statistics dump (the layout of MALLOC_OPTIONS=D) to fd.
 * Safe while other threads allocate: each pool is locked only while it is
 * being printed.  Must not be called from a signal handler.
 */
void malloc_gdump(int fd);

/*
 * Clear the first size bytes of ptr, then free it.  size must not exceed
 * the size the block was allocated with; a larger size aborts.
 */
void freezero(void *ptr, size_t size);

/*
 * C23: free ptr, which was allocated with size bytes (by malloc, calloc or
 * realloc; by aligned_alloc with alignment for free_aligned_sized).  A
 * size larger than the block's, or a ptr not so aligned, aborts.  Declared
 * as a C library that has them declares them (no exceptions in C++), so
 * both declarations may meet.
 */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define OMALLOC_NOTHROW noexcept
#elif defined(__cplusplus)
#define OMALLOC_NOTHROW throw()
#else
#define OMALLOC_NOTHROW
#endif
void free_sized(void *ptr, size_t size) OMALLOC_NOTHROW;
void free_aligned_sized(void *ptr, size_t alignment, size_t size)
    OMALLOC_NOTHROW;

/*
 * Resize ptr, an array of oldnmemb elements of size bytes, to newnmemb
 * elements.  New memory is zeroed; memory given up is cleared before it is
 * released.  Products are overflow-checked (ENOMEM).  oldnmemb must match
 * the allocation; ptr NULL behaves as calloc.
 */
void *recallocarray(void *ptr, size_t oldnmemb, size_t newnmemb, size_t size);

/*
 * Allocate from the conceal pool: kept out of core dumps, never cached,
 * cleared on free, always moved by realloc.  Free with free().
 */
void *malloc_conceal(size_t size);
void *calloc_conceal(size_t nmemb, size_t size);

/*
 * Program-supplied options, read after /etc/malloc.conf and
 * MALLOC_OPTIONS (so they win).  A statically linked daemon defines
 *     const char *const malloc_options = "CJ+";
 */
extern const char *const malloc_options;

/* The omalloc version string, e.g. "0.1.0". */
const char *omalloc_version(void);

#ifdef OMALLOC_FAULT_INJECTION
/*
 * Test builds only (meson -Dfault_injection=true): make the next n calls
 * that map memory fail as if the kernel had refused them; n < 0 fails
 * every one until omalloc_fault_mmap(0) is called.
 */
void omalloc_fault_mmap(long n);
#endif

#ifdef __cplusplus
}
#endif

#endif /* OMALLOC_H */
