#!/bin/sh
# Real programs under LD_PRELOAD=libomalloc.so, each with MALLOC_OPTIONS=D
# so that the dump proves omalloc served them.
set -eu
lib="$1"; cxx="${2:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {
	name="$1"; shift
	rm -f "$tmp/dump"
	LD_PRELOAD="$lib" MALLOC_OPTIONS=D MALLOC_DUMP_FILE="$tmp/dump" "$@" \
	    > "$tmp/out" || { echo "FAIL: $name exited $?" >&2; exit 1; }
	grep -q '^Malloc dir of' "$tmp/dump" ||
	    { echo "FAIL: $name left no dump" >&2; exit 1; }
	grep -q '^In use [1-9]' "$tmp/dump" ||
	    { echo "FAIL: $name allocated nothing through omalloc" >&2; exit 1; }
	echo "$name: ok"
}
seq 1 20000 | awk '{print ($1 * 7919) % 20011}' > "$tmp/in"
run sort sort -n -o "$tmp/sorted" "$tmp/in"
[ "$(head -1 "$tmp/sorted")" -le "$(tail -1 "$tmp/sorted")" ]
if command -v python3 >/dev/null; then
	run python3 python3 -c 'import json; d = {str(i): list(range(i % 50)) for i in range(20000)}; s = json.dumps(d); assert json.loads(s) == d'
fi
if command -v git >/dev/null; then
	git init -q "$tmp/repo"
	echo hello > "$tmp/repo/f"
	run git git -C "$tmp/repo" -c user.name=t -c user.email=t@e add f
	run git-log git -C "$tmp/repo" -c user.name=t -c user.email=t@e commit -qm msg
fi
if [ -n "$cxx" ]; then
	run c++ "$cxx"
fi
