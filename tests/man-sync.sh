#!/bin/sh
# The section-3 pages are generated from include/place.h (doc/mkman.sh):
# regenerate them and require the committed pages to be identical, so that a
# header change without `doc/mkman.sh` fails here. Then every page, and
# place(7), must render without a warning.
set -eu
top=${PLACE_TEST_SRCDIR:-$(dirname "$0")}/..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/man3"
sh "$top/doc/mkman.sh" "$tmp/man3"
if ! diff -r "$top/doc/man3" "$tmp/man3" >"$tmp/diff" || ! diff "$top/doc/man3.am" "$tmp/man3.am" >>"$tmp/diff"; then
	cat "$tmp/diff"
	echo "man-sync: doc/man3 is stale: run doc/mkman.sh and commit the pages"
	exit 1
fi
n=0
if command -v man >/dev/null 2>&1; then
	for page in "$top"/doc/man3/*.3 "$top"/doc/*.[0-9]; do
		warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null || true)
		[ -z "$warn" ] || { echo "man-sync: $page: $warn"; exit 1; }
		n=$((n + 1))
	done
fi
echo "man-sync: $(ls "$top/doc/man3" | wc -l) pages match include/place.h; $n rendered without warnings"
