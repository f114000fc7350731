#!/usr/bin/env bash
# Install the current build into a scratch tree with `meson install
# --destdir`, then build programs against that tree the way a user would,
# through pkg-config, and check that they run on omalloc.
#
#   install-test.sh pkgconfig BUILD_ROOT SOURCE_ROOT
#       uses_omalloc.c linked with -lomalloc (shared), with --static
#       (fully static), and with a compiled-in malloc_options.
#   install-test.sh daemon BUILD_ROOT SOURCE_ROOT
#       examples/daemon.c linked statically; SIGUSR1 must produce a dump.
set -euo pipefail

mode=$1
build=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
here=$src/tests/install

tmp=$(mktemp -d "${TMPDIR:-/tmp}/omalloc-install.XXXXXX")
daemon_pid=
cleanup() {
	if [ -n "$daemon_pid" ]; then
		kill -KILL "$daemon_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# --- install ---------------------------------------------------------------
dest=$tmp/dest
if ! meson install -C "$build" --no-rebuild --destdir "$dest" \
	>"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	fail "meson install failed"
fi

pcfile=$(find "$dest" -name omalloc.pc | head -n 1)
[ -n "$pcfile" ] || fail "omalloc.pc was not installed"
# The .pc names the configured prefix; inside the destdir it moved.
prefix=$(sed -n 's/^prefix=//p' "$pcfile")
PKG_CONFIG_PATH=$(dirname "$pcfile")
export PKG_CONFIG_PATH
pc() {
	pkg-config --define-variable=prefix="$dest$prefix" "$@" omalloc
}
libdir=$(pc --variable=libdir)
includedir=$(pc --variable=includedir)
for f in "$libdir/libomalloc.so" "$libdir/libomalloc.a" \
	"$includedir/omalloc.h"; do
	[ -e "$f" ] || fail "$f was not installed"
done
if [ -f "$src/man/omalloc.3" ]; then
	man=$(find "$dest" -path '*/man3/omalloc.3*' | head -n 1)
	[ -n "$man" ] || fail "the man page was not installed"
fi
echo "installed into $dest$prefix (libdir $libdir)"

cc=${CC:-cc}
cflags=(-O2 -Wall -Wextra)
# shellcheck disable=SC2207 # pkg-config output is meant to be word-split.
pc_cflags=($(pc --cflags))
# shellcheck disable=SC2207
pc_libs=($(pc --libs))
# shellcheck disable=SC2207
pc_static=($(pc --static --libs))

# No symbol of glibc's own malloc may be linked into a static program.
no_glibc_malloc() {
	if nm "$1" | grep -w -e _int_malloc -e _int_free >/dev/null; then
		fail "$1 contains glibc's malloc (_int_malloc)"
	fi
}

wait_for() { # file pattern seconds
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

case $mode in
pkgconfig)
	echo "== shared: $cc uses_omalloc.c ${pc_cflags[*]} ${pc_libs[*]}"
	"$cc" "${cflags[@]}" -o "$tmp/shared" "$here/uses_omalloc.c" \
		"${pc_cflags[@]}" "${pc_libs[@]}"
	# Whole output first: grep -q closing the pipe early would fail it.
	deps=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/shared")
	grep -q "libomalloc.so.* => $libdir/" <<<"$deps" ||
		fail "the shared program does not load $libdir/libomalloc.so"
	LD_LIBRARY_PATH=$libdir MALLOC_OPTIONS='' "$tmp/shared"

	echo "== shared, MALLOC_OPTIONS=D: the dump appears at exit"
	LD_LIBRARY_PATH=$libdir MALLOC_OPTIONS=D \
		MALLOC_DUMP_FILE="$tmp/env.dump" "$tmp/shared"
	wait_for "$tmp/env.dump" "End dump" 1 ||
		fail "MALLOC_OPTIONS=D wrote no dump to MALLOC_DUMP_FILE"

	echo "== shared with a compiled-in malloc_options"
	"$cc" "${cflags[@]}" -DOPTIONS='"D"' -o "$tmp/shared-opt" \
		"$here/uses_omalloc.c" "${pc_cflags[@]}" "${pc_libs[@]}"
	LD_LIBRARY_PATH=$libdir MALLOC_OPTIONS='' \
		MALLOC_DUMP_FILE="$tmp/shared-global.dump" "$tmp/shared-opt"
	wait_for "$tmp/shared-global.dump" "End dump" 1 ||
		fail "malloc_options = \"D\" in a -lomalloc program wrote no dump"

	echo "== static: $cc -static uses_omalloc.c ${pc_cflags[*]} ${pc_static[*]}"
	"$cc" "${cflags[@]}" -static -o "$tmp/static" "$here/uses_omalloc.c" \
		"${pc_cflags[@]}" "${pc_static[@]}"
	no_glibc_malloc "$tmp/static"
	MALLOC_OPTIONS='' "$tmp/static"

	echo "== static with the archive path and a compiled-in malloc_options"
	"$cc" "${cflags[@]}" -static -DOPTIONS='"D"' -o "$tmp/static-opt" \
		"$here/uses_omalloc.c" "${pc_cflags[@]}" "$libdir/libomalloc.a" \
		-lpthread
	no_glibc_malloc "$tmp/static-opt"
	MALLOC_OPTIONS='' MALLOC_DUMP_FILE="$tmp/global.dump" "$tmp/static-opt"
	wait_for "$tmp/global.dump" "End dump" 1 ||
		fail "malloc_options = \"D\" compiled in wrote no dump"
	;;
daemon)
	echo "== $cc -static examples/daemon.c ${pc_cflags[*]} ${pc_static[*]}"
	"$cc" "${cflags[@]}" -static -o "$tmp/daemon" "$src/examples/daemon.c" \
		"${pc_cflags[@]}" "${pc_static[@]}"
	no_glibc_malloc "$tmp/daemon"

	cd "$tmp"
	MALLOC_OPTIONS='' MALLOC_DUMP_FILE="$tmp/exit.dump" \
		./daemon "$tmp/usr1.dump" >"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	wait_for "$tmp/daemon.log" "ready" 20 || {
		cat "$tmp/daemon.log" >&2
		fail "the daemon did not start"
	}
	sleep 0.3 # let the workers allocate something
	kill -USR1 "$daemon_pid"
	wait_for "$tmp/usr1.dump" "End dump" 20 || {
		cat "$tmp/daemon.log" >&2
		fail "SIGUSR1 produced no complete dump"
	}
	grep -q "Start dump" "$tmp/usr1.dump" || fail "dump without its header"
	# The compiled-in "CGJD" must show in the options line.
	opts=$(grep -m 1 -E '^MT=' "$tmp/usr1.dump" || true)
	echo "options line: $opts"
	case " $opts " in
	*" C=1 "*) ;;
	*) fail "compiled-in malloc_options (C) not in effect: $opts" ;;
	esac
	case " $opts " in
	*" J=2 "*) ;;
	*) fail "compiled-in malloc_options (J) not in effect: $opts" ;;
	esac
	if [ -x "$src/bench/omdump" ]; then
		echo "== bench/omdump summary"
		"$src/bench/omdump" summary "$tmp/usr1.dump" ||
			fail "bench/omdump cannot read the daemon's dump"
	fi
	kill -TERM "$daemon_pid"
	rc=0
	wait "$daemon_pid" || rc=$?
	daemon_pid=
	cat "$tmp/daemon.log"
	[ "$rc" -eq 0 ] || fail "the daemon exited with status $rc"
	wait_for "$tmp/exit.dump" "End dump" 1 ||
		fail "option D compiled in wrote no dump at exit"
	;;
*)
	fail "unknown mode $mode"
	;;
esac
echo "PASS: $mode"
