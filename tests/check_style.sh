#!/bin/sh
# The layout rules of the C and C++ sources that a compiler does not check:
# lines of at most 80 columns (tabs at every eighth), no trailing blanks.
# Prints each offending line as file:line and fails if there is one.
set -eu
cd "$1"
files=$(git ls-files '*.c' '*.h' '*.cc' 2>/dev/null ||
    find lib include tests bench examples -name '*.[ch]' -o -name '*.cc')
bad=$(for f in $files; do
	expand "$f" | awk -v f="$f" '
	    length($0) > 80 { print f ":" FNR ": " length($0) " columns" }
	    /[ \t]$/ { print f ":" FNR ": trailing blank" }'
done)
if [ -n "$bad" ]; then
	echo "$bad" >&2
	exit 1
fi
echo "style: ok"
