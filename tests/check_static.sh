#!/bin/sh
# The statically linked program must contain omalloc and no trace of
# glibc's malloc, run, and print a dump with the compiled-in options.
set -eu
prog="$1"
if nm "$prog" | grep -q ' _int_malloc$'; then
	echo "FAIL: glibc's malloc was linked in" >&2
	exit 1
fi
nm "$prog" | grep -q ' om_chunk_alloc$' || { echo "FAIL: omalloc missing" >&2; exit 1; }
out=$("$prog")
echo "$out" | grep -q '^MT=1 M=8 .* C=1 ' || { echo "FAIL: options line: $out" >&2; exit 1; }
echo "static link: ok"
