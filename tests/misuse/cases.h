/*
 * The misuse cases: attack x MALLOC_OPTIONS x expected outcome.  Each
 * row that is not informational is one Check test case; the informational
 * rows show, in the table only, what the same attack does under options
 * that are not meant to catch it.
 *
 * Reasons use OpenBSD's wording, matched loosely where the exact text
 * carries numbers (the size mistakes of freezero and recallocarray).
 */
#ifndef MISUSE_CASES_H
#define MISUSE_CASES_H

#include "runner.h"

#define R_DOUBLE "double free"
#define R_BOGUS "bogus pointer"
#define R_MODIFIED "modified chunk-pointer"
#define R_CANARY "chunk canary corrupted"
#define R_WAF "write after free"
#define R_SIZE "size"
#define R_OOM "out of memory"
#define R_RECURSE "recursive call"
#define R_FREED "use of freed pointer"

#define ABORT(a, o, f, r, p, w) {a, o, EXPECT_ABORT, f, r, p, 0, w}
#define SEGV(a, o, w) {a, o, EXPECT_SEGV, NULL, NULL, 0, 0, w}
#define EXIT0(a, o, w) {a, o, EXPECT_EXIT0, NULL, NULL, 0, 0, w}
/* Shown in the table with the outcome as seen; never a failure. */
#define INFO(a, o, w) {a, o, EXPECT_EXIT0, NULL, NULL, 0, 1, w}

static const struct misuse_case misuse_cases[] = {
	/* Double free. */
	ABORT("chunk_double_free_now", "", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 32-byte chunk, p still in the delayed ring"),
	ABORT("chunk_double_free_now", "F", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 32-byte chunk, p still in the delayed ring"),
	ABORT("chunk_double_free_now", "S", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 32-byte chunk, p still in the delayed ring"),
	ABORT("chunk_double_free_later", "", "free", R_DOUBLE, 1,
	    "second free of a chunk after 200 other frees"),
	ABORT("region_double_free", "", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 64 KiB region"),
	ABORT("region_double_free", "U", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 64 KiB region"),
	ABORT("region_double_free", "S", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 64 KiB region"),
	ABORT("realloc_after_free", "", "realloc", R_FREED, 1,
	    "free(p); realloc(p, 64) of a 32-byte chunk"),
	ABORT("realloc_after_free", "F", "realloc", R_FREED, 1,
	    "free(p); realloc(p, 64) of a 32-byte chunk"),
	ABORT("realloc_after_free_same_class", "", "realloc", R_FREED, 1,
	    "free(p); realloc(p, 20) of a 32-byte chunk, p still in the ring"),
	ABORT("realloc_after_free_same_class", "F", "realloc", R_FREED, 1,
	    "free(p); realloc(p, 20) of a 32-byte chunk, p still in the ring"),
	ABORT("realloc_region_after_free", "", "realloc", R_DOUBLE, 1,
	    "free(p); realloc(p, 128 KiB) of a 64 KiB region"),
	ABORT("usable_after_free", "", "malloc_usable_size", R_FREED, 1,
	    "free(p); malloc_usable_size(p) of a 32-byte chunk"),
	ABORT("remote_double_free", "", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 32-byte chunk of another pool, both queued"),
	ABORT("remote_double_free", "F", "free", R_DOUBLE, 1,
	    "free(p); free(p) of a 32-byte chunk of another pool, both queued"),
	ABORT("remote_realloc_after_free", "", "realloc", R_FREED, 1,
	    "free(p); realloc(p, 64) of a 32-byte chunk of another pool"),

	/* Pointers that are not ours, or not the start of a block. */
	ABORT("free_stack", "", "free", R_BOGUS, 1, "free of a stack array"),
	ABORT("free_static", "", "free", R_BOGUS, 1, "free of a static array"),
	ABORT("realloc_stack", "", "realloc", R_BOGUS, 1,
	    "realloc of a stack array"),
	ABORT("chunk_plus1", "", "free", R_MODIFIED, 1,
	    "free(p + 1), p a 64-byte chunk"),
	ABORT("chunk_plus8", "", "free", R_MODIFIED, 1,
	    "free(p + 8), p a 64-byte chunk"),
	ABORT("chunk_plus8", "S", "free", R_MODIFIED, 1,
	    "free(p + 8), p a 64-byte chunk"),
	ABORT("remote_chunk_plus8", "", "free", R_MODIFIED, 1,
	    "free(p + 8), p a 32-byte chunk of another pool"),
	ABORT("chunk_mid_slot", "", "free", R_MODIFIED, 1,
	    "free(p + 16), p a 32-byte chunk"),
	ABORT("chunk_other_class", "", "free", R_MODIFIED, 1,
	    "free(p + 32), p a 64-byte chunk (a 32-class slot boundary)"),
	ABORT("chunk_unallocated_slot", "", "free", R_DOUBLE "|" R_BOGUS, 1,
	    "free of a never-allocated slot next to a 1024-byte chunk"),
	ABORT("realloc_chunk_interior", "", "realloc", R_MODIFIED, 1,
	    "realloc(p + 16, 100), p a 64-byte chunk"),
	ABORT("region_plus_page", "", "free", "bogus", 1,
	    "free(p + 4096), p a 64 KiB region"),
	ABORT("region_plus_page", "G", "free", "bogus", 1,
	    "free(p + 4096), p a 64 KiB region"),
	ABORT("region_plus16", "", "free", "bogus", 1,
	    "free(p + 16), p a 64 KiB region"),
	ABORT("medium_plus16", "", "free", "bogus", 1,
	    "free(p + 16), p a 3000-byte block (shifted to its page end)"),
	ABORT("medium_stale_after_realloc", "", "free", "bogus", 1,
	    "free(p) after realloc(p, 3100) moved a 3000-byte block in its "
	    "page"),
	ABORT("realloc_region_interior", "", "realloc", "bogus", 1,
	    "realloc(p + 4096, 10), p a 64 KiB region"),
	ABORT("realloc_region_plus16", "", "realloc", "bogus", 1,
	    "realloc(p + 16, 65600), p a 64 KiB region (grows in place)"),
	ABORT("realloc_page_count_plus16", "", "realloc", "bogus", 1,
	    "realloc(p + 16, 8000), p an 8 KiB region (same page count)"),
	ABORT("realloc_medium_plus16", "", "realloc", "bogus", 1,
	    "realloc(p + 16, 3010), p a 3000-byte block (moves in its page)"),
	ABORT("usable_region_plus16", "", "malloc_usable_size", "bogus", 1,
	    "malloc_usable_size(p + 16), p a 64 KiB region"),
	ABORT("recalloc_region_plus16", "", "recallocarray", "bogus", 1,
	    "recallocarray(p + 16, 65536, 60000, 1), p a 64 KiB region"),

	/* Write after free. */
	ABORT("chunk_waf_churn", "", "free|malloc", R_WAF, 1,
	    "write into a freed 64-byte chunk, then 2000 malloc/free of 64"),
	ABORT("chunk_waf_next_free", "F", "free", R_WAF, 1,
	    "write into a freed 64-byte chunk, then free one other chunk"),
	ABORT("chunk_waf_next_free", "S", "free", R_WAF, 1,
	    "write into a freed 64-byte chunk, then free one other chunk"),
	INFO("chunk_waf_next_free", "",
	    "write into a freed 64-byte chunk, then free one other chunk"),
	ABORT("thread_waf_exit", "", "pthread_exit", R_WAF, 1,
	    "a thread writes into a 64-byte chunk it freed, then exits"),
	SEGV("page_waf", "U", "write into a freed 16 KiB region"),
	SEGV("page_waf", "F", "write into a freed 16 KiB region"),
	SEGV("page_waf", "S", "write into a freed 16 KiB region"),
	INFO("page_waf", "", "write into a freed 16 KiB region"),

	/* Overflows and size mistakes. */
	ABORT("chunk_canary", "C", "free", R_CANARY, 1,
	    "malloc(13), write p[13], free"),
	ABORT("chunk_canary", "S", "free", R_CANARY, 1,
	    "malloc(13), write p[13], free"),
	INFO("chunk_canary", "", "malloc(13), write p[13], free"),
	ABORT("freezero_chunk_big", "", "freezero", R_SIZE, 1,
	    "freezero(p, 48), p = malloc(32)"),
	ABORT("freezero_chunk_C", "C", "freezero", R_SIZE, 1,
	    "freezero(p, 14), p = malloc(13)"),
	INFO("freezero_chunk_C", "", "freezero(p, 14), p = malloc(13)"),
	ABORT("freezero_region_big", "", "freezero", R_SIZE, 1,
	    "freezero(p, 40000), p = malloc(20000)"),
	ABORT("free_sized_chunk_big", "", "free_sized", R_SIZE, 1,
	    "free_sized(p, 48), p = malloc(32)"),
	ABORT("free_sized_chunk_C", "C", "free_sized", R_SIZE, 1,
	    "free_sized(p, 14), p = malloc(13)"),
	INFO("free_sized_chunk_C", "", "free_sized(p, 14), p = malloc(13)"),
	ABORT("free_sized_region_big", "", "free_sized", R_SIZE, 1,
	    "free_sized(p, 40000), p = malloc(20000)"),
	ABORT("free_sized_double", "", "free_sized", R_DOUBLE, 1,
	    "free(p); free_sized(p, 32) of a 32-byte chunk"),
	ABORT("freezero_double", "", "freezero", R_DOUBLE, 1,
	    "free(p); freezero(p, 32) of a 32-byte chunk"),
	ABORT("freezero_double", "F", "freezero", R_DOUBLE, 1,
	    "free(p); freezero(p, 32) of a 32-byte chunk"),
	ABORT("freezero_region_double", "", "freezero", R_DOUBLE, 1,
	    "free(p); freezero(p, 65536) of a 64 KiB region"),
	ABORT("remote_free_sized_double", "", "free_sized", R_DOUBLE, 1,
	    "free(p); free_sized(p, 32) of another pool's 32-byte chunk"),
	ABORT("remote_free_sized_double", "F", "free_sized", R_DOUBLE, 1,
	    "free(p); free_sized(p, 32) of another pool's 32-byte chunk"),
	ABORT("remote_free_aligned_sized_double", "", "free_aligned_sized",
	    R_DOUBLE, 1, "free(p); free_aligned_sized(p, 16, 32) of another "
	    "pool's 32-byte chunk"),
	ABORT("remote_free_sized_big", "", "free_sized", R_SIZE, 1,
	    "free_sized(p, 48) of another pool's 32-byte chunk"),
	ABORT("free_aligned_sized_misaligned", "", "free_aligned_sized",
	    "alignment", 1,
	    "free_aligned_sized(p, 2a, 48), p = malloc(48) aligned to a"),
	ABORT("recalloc_chunk_big", "", "recallocarray", R_SIZE, 1,
	    "recallocarray(p, 20, 30, 10) of a 10 x 10 array"),
	ABORT("recalloc_region_small", "", "recallocarray", R_SIZE, 1,
	    "recallocarray(p, 10, 200, 100) of a 100 x 100 array"),
	ABORT("recalloc_chunk_C", "C", "recallocarray", R_SIZE, 1,
	    "recallocarray(p, 9, 20, 10) of a 10 x 10 array"),
	INFO("recalloc_chunk_C", "",
	    "recallocarray(p, 9, 20, 10) of a 10 x 10 array"),
	SEGV("region_overflow", "G", "malloc(3 * 4096), write p[3 * 4096]"),
	SEGV("region_overflow", "S", "malloc(3 * 4096), write p[3 * 4096]"),
	INFO("region_overflow", "", "malloc(3 * 4096), write p[3 * 4096]"),
	SEGV("medium_overflow", "G", "malloc(3000), write p[3000 + 16]"),
	INFO("medium_overflow", "", "malloc(3000), write p[3000 + 16]"),

	/* malloc(0). */
	SEGV("malloc0_read", "", "read p[0], p = malloc(0)"),
	SEGV("malloc0_write", "", "write p[0], p = malloc(0)"),
	SEGV("realloc0_read", "", "read p[0], p = realloc(q, 0)"),

	/* Out of memory. */
	ABORT("oom_malloc", "X", "malloc", R_OOM, 0, "malloc(SIZE_MAX / 2)"),
	EXIT0("oom_malloc", "", "malloc(SIZE_MAX / 2) returns NULL, ENOMEM"),
	ABORT("oom_calloc", "X", "calloc", R_OOM, 0,
	    "calloc(SIZE_MAX / 2, 4) as the first call of the process"),
	EXIT0("oom_calloc", "", "calloc(SIZE_MAX / 2, 4) returns NULL, ENOMEM"),
	ABORT("oom_calloc_warm", "X", "calloc", R_OOM, 0,
	    "calloc(SIZE_MAX / 2, 4) after a malloc/free"),

	/* A signal handler that allocates while the allocator runs. */
	ABORT("recursion", "", "[a-z_]+", R_RECURSE, 0,
	    "SIGALRM handler calls malloc during a malloc/free loop"),
	ABORT("recursion_init", "", "[a-z_]+", R_RECURSE, 0,
	    "the same, the timer started before the first allocation"),

	/* Conceal blocks work like ordinary ones. */
#define CONCEAL_WHAT "malloc_conceal / calloc_conceal / realloc / free"
	EXIT0("conceal", "", CONCEAL_WHAT),
	EXIT0("conceal", "S", CONCEAL_WHAT),
	EXIT0("conceal", "J", CONCEAL_WHAT),
};

#define MISUSE_NCASES (sizeof(misuse_cases) / sizeof(misuse_cases[0]))

#endif
