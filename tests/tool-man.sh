#!/bin/sh
# Each installed tool has a man page that keeps up with it: every long option
# its --help lists appears in doc/TOOL.1, and the page's date and version are
# configure.ac's (place_release_date, AC_INIT), like the section-3 pages'.
# Run from the build directory by make check.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
. "${PLACE_TEST_SRCDIR:-tests}/testlib.sh"
top=${PLACE_TEST_SRCDIR:-tests}/..
date=$(sed -n 's/^m4_define(\[place_release_date\], \[\([0-9-]*\)\])$/\1/p' "$top/configure.ac")
version=$(sed -n 's/^AC_INIT(\[libplace\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")

for tool in place-info place-sim place-bench; do
	page="$top/doc/$tool.1"
	if [ ! -f "$page" ]; then
		bad "$tool: no doc/$tool.1"
		continue
	fi
	missing=""
	for opt in $(./$tool --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		esc=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
		grep -q -- "$esc" "$page" || missing="$missing $opt"
	done
	if [ -z "$missing" ]; then ok "$tool.1 names every option of --help"; else bad "$tool.1 lacks:$missing"; fi
	if head -n 1 "$page" | grep -q "^\.TH [A-Z-]* 1 $date \"libplace $version\""; then
		ok "$tool.1 dated $date, version $version"
	else
		bad "$tool.1: $(head -n 1 "$page") (want $date, libplace $version)"
	fi
	if ./$tool --version | grep -q "^$tool (libplace) $version"; then ok "$tool --version"; else bad "$tool --version"; fi
done
if head -n 1 "$top/doc/place.7" | grep -q " $date \"libplace $version\""; then
	ok "place.7 dated $date"
else
	bad "place.7: $(head -n 1 "$top/doc/place.7")"
fi

# place-bench's command line (place-info's and place-sim's have their own
# tests): a bad option or value is named in one line, without the usage.
use_tool place-bench
expect_error "place-bench: unknown option" 2 --bogus
expect_error "place-bench: bad policy" 2 --policy nope
expect_error "place-bench: bad load" 2 --load 30
expect_error "place-bench: bad feature" 2 --without sis_utl
expect_error "place-bench: bad number" 2 --calls 10x
expect_error "place-bench: missing value" 2 --topo
expect_error "place-bench: stray argument" 2 extra

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
