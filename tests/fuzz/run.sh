#!/bin/sh
# Build the libFuzzer targets with clang (libFuzzer + ASan + UBSan) and run each
# for a bounded number of inputs; fail on any crash, leak, sanitizer report or
# timeout.
#
#   tests/fuzz/run.sh [OUTDIR]        (build.sh's fuzz_check uses OUTDIR=build-fuzz)
#
# Two modes:
#   - deterministic (the default, what CI runs): the seed corpus, then
#     PLACE_FUZZ_RUNS inputs mutated from it with a fixed seed (-seed=1), into
#     a fresh scratch corpus; no time limit anywhere (-runs, never
#     -max_total_time), and no comparison-guided mutations (-use_cmp=0: the
#     operands libFuzzer records include pointers and values that differ
#     from run to run, and two seeded runs of fuzz_api drifted apart; with
#     it off they try the same inputs), and without address-space
#     randomisation (setarch -R, where allowed: fuzz_topo's coverage of the
#     seed corpus differed by a feature between runs with it). So the inputs
#     cannot depend on timing or layout, and CI fails exactly on what runs
#     here fail on. (A 30-second
#     exploration in CI once failed on a new hwloc leak that no run here had
#     met; and libFuzzer's -timeout timer, SIGALRM, interrupted fuzz_topo's
#     wait for hwloc_probe, which let an hwloc crash through unscreened: the
#     probe is now reaped with SIGALRM blocked. Exploration finds bugs, CI
#     needs a verdict.) Two runs print the same summary lines.
#   - exploration (PLACE_FUZZ_SECONDS set): a random seed for that many
#     seconds per target, keeping new inputs in OUTDIR/corpus-NAME between
#     runs. Run it by hand or nightly; put what it finds in tests/fuzz/corpus.
#
# Environment:
#   PLACE_FUZZ_RUNS      inputs per target in deterministic mode (default:
#                        fuzz_topo 600, fuzz_api 100000, about 30 s each here)
#   PLACE_FUZZ_SECONDS   exploration: seconds per target; a long run: 3600
#   PLACE_FUZZ_TARGETS   which targets (default "fuzz_topo fuzz_api")
#   PLACE_FUZZ_JOBS      parallel libFuzzer workers per target (default 1)
#   CLANG                the compiler (default clang)
#
# The library is compiled from the sources listed in src/local.am, with
# coverage instrumentation, straight into the fuzzer (no configure needed).
# Each target starts by replaying its whole seed corpus (tests/fuzz/corpus/*),
# which holds every crash ever found: that is the regression test.
# New interesting inputs go to OUTDIR/scratch-NAME (deterministic) or
# OUTDIR/corpus-NAME (exploration, kept between runs), crash
# inputs to OUTDIR/crash-NAME-*.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu

SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$SRC/build-fuzz}
SECS=${PLACE_FUZZ_SECONDS:-}
TARGETS=${PLACE_FUZZ_TARGETS:-fuzz_topo fuzz_api}
FJOBS=${PLACE_FUZZ_JOBS:-1}
CC=${CLANG:-clang}

mkdir -p "$OUT/obj"
OUT=$(cd "$OUT" && pwd)

# config.h as configure would write it, for what the sources use.
version=$(sed -n 's/^AC_INIT(\[libplace\], \[\([^]]*\)\].*/\1/p' "$SRC/configure.ac")
printf '#define _GNU_SOURCE 1\n#define PACKAGE_VERSION "%s"\n' "${version:-0}" >"$OUT/config.h"

srcs=$(sed -n '/^libplace_la_SOURCES/,/[^\\]$/p' "$SRC/src/local.am" | tr ' \t\\' '\n\n\n' |
	grep '^src/.*\.c$')
# shellcheck disable=SC2046
cflags="-std=gnu11 -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined -D_LGPL_SOURCE
	-DPLACE_BUILDING -I$OUT -I$SRC/include -I$SRC/src $(pkg-config --cflags hwloc liburcu-bp ck)"
libs=$(pkg-config --libs hwloc liburcu-bp)

objs=""
for s in $srcs; do
	o="$OUT/obj/$(basename "$s" .c).o"
	# shellcheck disable=SC2086
	$CC $cflags -fsanitize=fuzzer-no-link,address,undefined -c "$SRC/$s" -o "$o"
	objs="$objs $o"
done

# fuzz_topo's helper: plain hwloc, no sanitizer (see fuzz_topo.c).
# shellcheck disable=SC2046
$CC -O1 -g -fsanitize=leak "$SRC/tests/fuzz/hwloc_probe.c" $(pkg-config --cflags --libs hwloc) -o "$OUT/hwloc_probe"

status=0
norand=""
start=$(date +%s)
for t in $TARGETS; do
	[ -f "$SRC/tests/fuzz/$t.c" ] || { echo "fuzz: no tests/fuzz/$t.c"; status=1; continue; }
	# shellcheck disable=SC2086
	$CC $cflags -fsanitize=fuzzer,address,undefined "$SRC/tests/fuzz/$t.c" $objs $libs -o "$OUT/$t"
	seeds="$SRC/tests/fuzz/corpus/${t#fuzz_}"
	rm -f "$OUT/$t.log" "$OUT"/fuzz-*.log
	if [ -n "$SECS" ]; then
		corpus="$OUT/corpus-$t"
		mode="-max_total_time=$SECS"
		what="for ${SECS}s"
	else
		corpus="$OUT/scratch-$t"
		rm -rf "$corpus"
		runs=${PLACE_FUZZ_RUNS:-$( [ "$t" = fuzz_topo ] && echo 600 || echo 100000)}
		mode="-seed=1 -runs=$runs -use_cmp=0"
		what="for $runs inputs (seed 1, no comparison-guided mutations)"
		# without address-space randomisation where the system allows it
		if setarch "$(uname -m)" -R true 2>/dev/null; then
			norand="setarch $(uname -m) -R"
			what="$what, no ASLR"
		fi
	fi
	mkdir -p "$corpus"
	echo "fuzz: $t $what (seeds $(ls "$seeds" | wc -l) in tests/fuzz/corpus/${t#fuzz_})"
	rc=0
	par=""
	[ "$FJOBS" -gt 1 ] && par="-jobs=$FJOBS -workers=$FJOBS"
	# allocator_may_return_null: a huge allocation asked for by a hostile
	# input must come back NULL (-ENOMEM), not abort the run.
	ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=0:quarantine_size_mb=16 \
	LSAN_OPTIONS="suppressions=$SRC/tests/fuzz/lsan.supp:print_suppressions=0" \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$norand "$OUT/$t" $mode -timeout=20 -rss_limit_mb=4096 -max_len=16384 \
		-print_final_stats=1 $par \
		-artifact_prefix="$OUT/crash-$t-" "$corpus" "$seeds" >"$OUT/$t.log" 2>&1 || rc=$?
	if [ "$FJOBS" -gt 1 ]; then cat "$OUT"/fuzz-*.log >>"$OUT/$t.log" 2>/dev/null || true; fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$t.log" | awk '{s+=$1} END {print s+0}')
	# without the final stats (a worker stopped by the time limit): the last status line
	[ "$execs" -gt 0 ] || execs=$(grep -o '^#[0-9]*' "$OUT/$t.log" | tail -n 1 | tr -d '#')
	cov=$(grep -o 'cov: [0-9]*' "$OUT/$t.log" | tail -n 1)
	echo "fuzz: $t: $execs executions, $cov, corpus $(ls "$corpus" | wc -l) inputs, exit $rc"
	grep "^$t: [0-9]" "$OUT/$t.log" | tail -n 1 | sed 's/^/fuzz: /' || true
	if [ "$rc" -ne 0 ]; then
		grep -B2 -A40 -m1 'ERROR: \|runtime error\|check failed\|==ERROR\|deadly signal\|timeout' \
			"$OUT/$t.log" | head -n 80
		ls "$OUT"/crash-"$t"-* 2>/dev/null || true
		echo "fuzz: $t FAILED (full log: $OUT/$t.log)"
		status=1
	fi
done
echo "fuzz: done in $(($(date +%s) - start)) s (targets only, after the build)"
exit "$status"
