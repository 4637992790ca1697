#!/bin/sh
# The exported symbol list of libplace.so must equal the functions declared
# PLACE_EXTERN in include/place.h: nothing internal leaks (visibility is hidden
# by default), nothing declared is missing.
set -eu
top_srcdir=${top_srcdir:-${PLACE_TEST_SRCDIR:-$(dirname "$0")}/..}
lib=${PLACE_LIBDIR:-.libs}/libplace.so
[ -f "$lib" ] || { echo "abi-symbols: $lib not built (static-only build?)"; exit 77; }
want=$(mktemp) got=$(mktemp)
trap 'rm -f "$want" "$got"' EXIT
sed -n 's/^PLACE_EXTERN[^(]*[ *]\(place_[a-z0-9_]*\)(.*/\1/p' "$top_srcdir/include/place.h" | sort -u >"$want"
nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" || $2 == "R" {print $3}' |
	grep -v '^_' | sort -u >"$got"
if diff -u "$want" "$got"; then
	echo "abi-symbols: $(wc -l <"$got") exported symbols match include/place.h"
else
	echo "abi-symbols: exported symbols (+) differ from include/place.h (-)"
	exit 1
fi
