#!/bin/sh
# Real programs under LD_PRELOAD=libomalloc.so, each with MALLOC_OPTIONS=D
# so that the dump proves omalloc served them; then again under each
# hardening option, where a program that works must go on working, and
# with a sort that runs threads.
set -eu
lib="$1"; cxx="${2:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opts=
run() {
	name="$1${opts:+ ($opts)}"; shift
	rm -f "$tmp/dump"
	LD_PRELOAD="$lib" MALLOC_OPTIONS="D$opts" MALLOC_DUMP_FILE="$tmp/dump" \
	    "$@" > "$tmp/out" || { echo "FAIL: $name exited $?" >&2; exit 1; }
	grep -q '^Malloc dir of' "$tmp/dump" ||
	    { echo "FAIL: $name left no dump" >&2; exit 1; }
	grep -q '^In use [1-9]' "$tmp/dump" ||
	    { echo "FAIL: $name allocated nothing through omalloc" >&2; exit 1; }
	echo "$name: ok"
}
seq 1 20000 | awk '{print ($1 * 7919) % 20011}' > "$tmp/in"
seq 1 200000 | awk '{print ($1 * 7919) % 200003}' > "$tmp/big"
sort -n -o "$tmp/expect" "$tmp/big"
programs() {
	run sort sort -n -o "$tmp/sorted" "$tmp/in"
	[ "$(head -1 "$tmp/sorted")" -le "$(tail -1 "$tmp/sorted")" ]
	# Enough lines for sort to start a second thread (MT=1 in the dump).
	run sort-threads sort --parallel=2 -n -o "$tmp/sorted2" "$tmp/big"
	grep -q '^MT=1' "$tmp/dump" ||
	    { echo "FAIL: sort-threads${opts:+ ($opts)} ran no thread" >&2
	      exit 1; }
	cmp -s "$tmp/expect" "$tmp/sorted2" ||
	    { echo "FAIL: sort-threads${opts:+ ($opts)} differs" >&2; exit 1; }
	if command -v python3 >/dev/null; then
		run python3 python3 -c 'import json; d = {str(i): list(range(i % 50)) for i in range(20000)}; s = json.dumps(d); assert json.loads(s) == d'
	fi
	if command -v git >/dev/null; then
		rm -rf "$tmp/repo"
		git init -q "$tmp/repo"
		echo hello > "$tmp/repo/f"
		run git git -C "$tmp/repo" -c user.name=t -c user.email=t@e add f
		run git-log git -C "$tmp/repo" -c user.name=t -c user.email=t@e commit -qm msg
	fi
	if [ -n "$cxx" ]; then
		run c++ "$cxx"
	fi
}
programs
for opts in C F G J R S U X +++ ---; do
	programs
done
