#!/bin/sh
# Every symbol the shared library exports, and every global symbol of the
# archive, is a standard heap name, an omalloc.h name, or an internal om_*
# name (hidden): a static archive's globals land in the daemon's namespace.
set -eu
so="$1"; ar="$2"
allowed='^(malloc|calloc|realloc|free|cfree|free_sized|free_aligned_sized|reallocarray|recallocarray|freezero|aligned_alloc|posix_memalign|memalign|valloc|pvalloc|malloc_usable_size|malloc_conceal|calloc_conceal|malloc_gdump|mallopt|mallinfo|mallinfo2|malloc_trim|malloc_stats|malloc_info|__libc_malloc|__libc_calloc|__libc_realloc|__libc_free|__libc_memalign|__libc_valloc|__libc_pvalloc|__posix_memalign|omalloc_version|omalloc_fault_mmap)$'
bad=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^OMALLOC\|^$' | grep -Ev "$allowed" || true)
if [ -n "$bad" ]; then
	echo "FAIL: unexpected exports of $so:" >&2; echo "$bad" >&2; exit 1
fi
internal='^(om_[a-z_]+|__malloc_fork_lock_parent|__malloc_fork_unlock_parent|__malloc_fork_unlock_child)$'
bad=$(nm -g --defined-only "$ar" 2>/dev/null | awk 'NF==3 {print $3}' | grep -Ev "$allowed" | grep -Ev "$internal" || true)
if [ -n "$bad" ]; then
	echo "FAIL: unexpected globals in $ar:" >&2; echo "$bad" >&2; exit 1
fi
n=$(nm -D --defined-only "$so" | grep -Ec ' (malloc|free|posix_memalign|malloc_gdump)$')
[ "$n" -eq 4 ] || { echo "FAIL: standard names not exported" >&2; exit 1; }
echo "symbols: ok"
