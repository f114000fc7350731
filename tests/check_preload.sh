#!/bin/sh
# Real programs under LD_PRELOAD=libomalloc.so, each with MALLOC_OPTIONS=D
# so that the dump proves omalloc served them; then again under each
# hardening option, where a program that works must go on working, and
# with a sort that runs threads.  Redis too, where redis-tools is
# installed.
set -eu
lib="$1"; cxx="${2:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opts=
# The dump of program $name shows omalloc served it.
dumped() {
	grep -q '^Malloc dir of' "$tmp/dump" ||
	    { echo "FAIL: $name left no dump" >&2; exit 1; }
	grep -q '^In use [1-9]' "$tmp/dump" ||
	    { echo "FAIL: $name allocated nothing through omalloc" >&2; exit 1; }
	echo "$name: ok"
}
run() {
	name="$1${opts:+ ($opts)}"; shift
	rm -f "$tmp/dump"
	LD_PRELOAD="$lib" MALLOC_OPTIONS="D$opts" MALLOC_DUMP_FILE="$tmp/dump" \
	    "$@" > "$tmp/out" || { echo "FAIL: $name exited $?" >&2; exit 1; }
	dumped
}
# Redis grows its listpacks and strings into the bytes malloc_usable_size
# reports before it reallocs them: a realloc that dropped those bytes made
# it abort on its first sorted sets (e4fbedc).  redis-tools carries the
# server as redis-check-rdb, which serves under the name redis-server.
redis=
if command -v redis-check-rdb >/dev/null && command -v redis-cli >/dev/null
then
	ln -s "$(command -v redis-check-rdb)" "$tmp/redis-server"
	redis=yes
	# Sorted sets, lists and strings of 120 members of 21-35 bytes each,
	# grown one member at a time through 2-8 KiB; the number of checks
	# that failed, and of checks.
	cat > "$tmp/redis.lua" <<'EOF'
local bad, checks = 0, 0
local function expect(ok)
  checks = checks + 1
  if not ok then bad = bad + 1 end
end
for k = 1, 60 do
  local z, l, s, len = 'z' .. k, 'l' .. k, 's' .. k, 0
  for i = 1, 120 do
    local m = string.rep('m', 20 + k % 13) .. i
    redis.call('ZADD', z, i, m)
    redis.call('RPUSH', l, m)
    redis.call('APPEND', s, m)
    len = len + #m
  end
  for i = 1, 120 do
    local m = string.rep('m', 20 + k % 13) .. i
    expect(tonumber(redis.call('ZSCORE', z, m)) == i)
    expect(redis.call('LINDEX', l, i - 1) == m)
  end
  expect(redis.call('ZCARD', z) == 120)
  expect(redis.call('LLEN', l) == 120)
  expect(redis.call('STRLEN', s) == len)
end
return {bad, checks}
EOF
fi
redis_run() {
	name="redis${opts:+ ($opts)}"
	sock="$tmp/redis.sock"
	rm -f "$tmp/dump" "$sock"
	LD_PRELOAD="$lib" MALLOC_OPTIONS="D$opts" MALLOC_DUMP_FILE="$tmp/dump" \
	    "$tmp/redis-server" --port 0 --unixsocket "$sock" --save "" \
	    --appendonly no --dir "$tmp" > "$tmp/redis.log" 2>&1 &
	pid=$!
	i=0
	until redis-cli -s "$sock" ping > /dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 $pid 2>/dev/null; then
			echo "FAIL: $name did not start" >&2
			cat "$tmp/redis.log" >&2
			kill $pid 2>/dev/null || true
			exit 1
		fi
		sleep 0.1
	done
	redis-cli -s "$sock" eval "$(cat "$tmp/redis.lua")" 0 > "$tmp/out" ||
	    true
	redis-cli -s "$sock" shutdown nosave > /dev/null 2>&1 || true
	wait $pid || { echo "FAIL: $name exited $?" >&2
	    grep -A3 'ASSERTION\|omalloc' "$tmp/redis.log" >&2; exit 1; }
	[ "$(sed -n 1p "$tmp/out")" = 0 ] && [ "$(sed -n 2p "$tmp/out")" -gt 0 ] ||
	    { echo "FAIL: $name: $(cat "$tmp/out")" >&2; exit 1; }
	dumped
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
	if [ -n "$redis" ]; then
		redis_run
	fi
}
programs
for opts in C F G J R S U X +++ ---; do
	programs
done
