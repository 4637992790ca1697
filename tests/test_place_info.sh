#!/bin/sh
# place-info's command line, as a test: --help; the truth format against the
# whole topology corpus (the issue's "place-info --format truth matches every
# truth file"); every kind of bad input gives one clear line on stderr, nothing
# on stdout, and a non-zero exit. Run from the build directory by make check.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
. "${PLACE_TEST_SRCDIR:-tests}/testlib.sh"
use_tool place-info
FX="${PLACE_TEST_SRCDIR:-tests}/fixtures"
CORPUS="${PLACE_CORPUS_DIR:-${PLACE_TEST_SRCDIR:-tests}/../../shared/testdata/topologies}"

if $TOOL --help | grep -q '^usage: place-info'; then ok "--help"; else bad "--help"; fi
for src in live process machine xml:PATH synthetic:STRING; do
	if $TOOL --help | grep -q "^ *$src "; then ok "--help names the $src source"; else bad "--help: no $src"; fi
done
if $TOOL --version | grep -q '^place-info (libplace) [0-9]'; then ok "--version"; else bad "--version"; fi
# The tsv format's llc_kind is a word, and format names take any case.
if $TOOL --format TSV --topology "synthetic:pack:1 core:2 pu:1" | awk -F'\t' 'NR > 1 && $7 != "package" { exit 1 }'; then
	ok "llc_kind as a word (package)"
else
	bad "llc_kind: $($TOOL_PLAIN --format tsv --topology "synthetic:pack:1 core:2 pu:1" | cut -f7 | tr '\n' ' ')"
fi

cat >"$TMP/sparse.truth" <<'TRUTH'
#pu_os_index	core_logical_index	llc_logical_index	numa_os_index	package_logical_index	llc_level
0	0	0	1	0	2
8	1	0	1	0	2
40	2	1	0	1	2
48	3	1	0	1	2
64	0	0	1	0	2
72	1	0	1	0	2
104	2	1	0	1	2
110	3	1	0	1	2
TRUTH
if $TOOL --format truth --topology "xml:$FX/sparse.xml" | diff "$TMP/sparse.truth" - >&2; then
	ok "truth format of fixtures/sparse.xml"
else
	bad "truth format of fixtures/sparse.xml"
fi
for fmt in console tsv; do
	if $TOOL --format=$fmt --topology "xml:$FX/hybrid.xml" >"$TMP/out" && [ -s "$TMP/out" ]; then
		ok "--format=$fmt"
	else
		bad "--format=$fmt"
	fi
done
# The console picture: every box line has the picture's width, and the core
# tokens ("[0 128]") name every usable CPU exactly once.
picture_ok() { # SOURCE
	$TOOL --topology "$1" >"$TMP/pic" || return 1
	$TOOL_PLAIN --topology "$1" --format tsv | awk '/^[0-9]/ { print $1 }' | sort -n >"$TMP/pic.want"
	sed -n '/^[+|]/p' "$TMP/pic" | awk '{ w[length($0)] = 1 } END { n = 0; for (k in w) n++; exit n != 1 }' || return 1
	grep -o '\[[0-9 ]*\]' "$TMP/pic" | tr -d '[]' | tr ' ' '\n' | sort -n | cmp -s - "$TMP/pic.want"
}
for src in "synthetic:pack:2 [numa] l3:8 core:8 pu:2(indexes=core)" "synthetic:pack:2 l3:1 group:2 [numa] core:3 pu:2" \
	"xml:$FX/hybrid.xml" "xml:$FX/sparse.xml"; do
	if picture_ok "$src"; then ok "console picture: $src"; else bad "console picture: $src"; fi
done
if PLACE_TOPOLOGY="synthetic:pack:1 core:3 pu:1" $TOOL --format tsv | grep -c '^[0-9]' | grep -qx 3; then
	ok "PLACE_TOPOLOGY replaces the live machine"
else
	bad "PLACE_TOPOLOGY replaces the live machine"
fi

# expect_error NAME STATUS ARGS... (testlib.sh): exit STATUS, one "place-info: " line, no stdout
expect_error "missing file" 1 --topology xml:/nonexistent/libplace.xml
expect_error "XML v3" 1 --topology "xml:$FX/v3.xml"
expect_error "truncated XML" 1 --topology "xml:$FX/truncated.xml"
expect_error "not a topology" 1 --topology "xml:$FX/notopo.xml"
expect_error "malformed synthetic" 1 --topology "synthetic:pack:2 foo:3"
expect_error "unknown prefix" 1 --topology "bogus:x"
expect_error "empty path" 1 --topology "xml:"
expect_error "bad format" 2 --format bogus
expect_error "bad option" 2 --bogus
expect_error "stray argument" 2 extra
expect_error "missing value" 2 --topology

if [ -d "$CORPUS" ]; then
	matched=0 total=0
	for xml in "$CORPUS"/*.xml "$CORPUS"/synthetic/*.xml; do
		truth=${xml%.xml}.truth.tsv
		if [ ! -f "$truth" ]; then # INDEX.tsv "no": an hwloc 3 export
			expect_error "corpus: $(basename "$xml") refused" 1 --topology "xml:$xml"
			continue
		fi
		total=$((total + 1))
		if $TOOL_PLAIN --format truth --topology "xml:$xml" | cmp -s - "$truth"; then
			matched=$((matched + 1))
		else
			bad "corpus: $(basename "$xml") differs from its truth"
		fi
	done
	if [ "$total" -gt 0 ] && [ "$matched" -eq "$total" ]; then
		ok "corpus: place-info --format truth matches $matched/$total truth files"
	else
		bad "corpus: $matched/$total truth files match"
	fi
else
	echo "*** topology corpus not found at $CORPUS: corpus diff skipped (test_corpus reports it) ***"
fi

echo "place-info checks: $checks, failures: $failures"
[ "$failures" -eq 0 ]
