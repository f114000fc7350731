#!/usr/bin/env bash
# scripts/gen-options must notice a stale table and repair it: copies of the
# README and the man page with one table line changed fail --check, pass it
# again after --update, and keep every line outside the markers.
#
#   gen-options-test.sh SOURCE_ROOT
set -euo pipefail
src=$(cd "$1" && pwd)
gen=$src/scripts/gen-options
tmp=$(mktemp -d "${TMPDIR:-/tmp}/omalloc-genopt.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

for f in README man/omalloc.3; do
	[ -f "$src/$f" ] || continue
	copy=$tmp/$(basename "$f")
	cp "$src/$f" "$copy"
	"$gen" --check "$copy" || fail "$f is stale in the repository"

	# Change the first table line that names option J.
	if [ "$f" = README ]; then
		# shellcheck disable=SC2016 # the backticks are Markdown.
		sed -i '/^| `J` `j` |/s/junk level/JUNK LEVEL/' "$copy"
	else
		sed -i '/^Junk level/s/Junk level/JUNK LEVEL/' "$copy"
	fi
	cmp -s "$src/$f" "$copy" && fail "the test did not change $f's table"
	if "$gen" --check "$copy" 2>/dev/null; then
		fail "--check accepted a stale table in $f"
	fi
	"$gen" --update "$copy" >/dev/null
	"$gen" --check "$copy" || fail "--update did not repair $f"
	cmp -s "$src/$f" "$copy" || fail "--update changed $f outside its table"
done

# The generated tables name every letter of options.def.
md=$("$gen")
for letter in C c D d F f G g J j R r S s U u V v X x '>' '<' + -; do
	grep -qF "\`$letter\`" <<<"$md" || fail "letter $letter missing"
done
grep -q '^\.TP$' <<<"$("$gen" --man)" || fail "--man printed no roff list"
echo "PASS"
