#!/bin/sh
# Check the Promela model of the claim protocol exhaustively with spin:
#   spin -a claim.pml && gcc -DSAFETY -o pan pan.c && ./pan
# Fails on any assertion violation or invalid end state; skips (77, automake's
# SKIP) when spin or a C compiler is missing. Works in a scratch directory, so
# it runs from a read-only source tree (make distcheck) too.
#   tests/model/run.sh            the model as written
#   tests/model/run.sh --mutants  also check that each seeded bug is caught
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu

here=$(cd "$(dirname "$0")" && pwd)
command -v spin >/dev/null 2>&1 || { echo "SKIP: spin is not installed (Debian package spin)"; exit 77; }
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || CC=gcc
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler for pan.c"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/place-model.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# check NAME FILE: 0 when pan finds no error, 1 when it finds one.
check() {
	dir="$work/$1"
	mkdir -p "$dir"
	cp "$2" "$dir/claim.pml"
	(cd "$dir" && spin -a claim.pml >spin.log 2>&1) || { cat "$dir/spin.log"; echo "FAIL: spin -a ($1)"; exit 1; }
	(cd "$dir" && $CC -O2 -DSAFETY -o pan pan.c 2>cc.log) || { cat "$dir/cc.log"; echo "FAIL: cc pan.c ($1)"; exit 1; }
	(cd "$dir" && ./pan -m100000 >pan.log 2>&1) || true
	grep -q 'errors: 0' "$dir/pan.log"
}

if check model "$here/claim.pml"; then
	grep -E '^State-vector|states, stored$|states, matched$|transitions \(' "$work/model/pan.log"
	grep -m1 'elapsed time' "$work/model/pan.log" || true
	echo "PASS: claim.pml: no assertion violated, no invalid end state"
else
	cat "$work/model/pan.log"
	(cd "$work/model" && spin -t -p claim.pml 2>&1 | tail -n 60) || true
	echo "FAIL: claim.pml (the trail above replays the counterexample)"
	exit 1
fi

[ "${1:-}" = --mutants ] || exit 0
# Seeded bugs: each must be caught, or the model checks less than it says.
status=0
mutant() {
	sed "$2" "$here/claim.pml" >"$work/$1.pml"
	cmp -s "$here/claim.pml" "$work/$1.pml" && { echo "FAIL: mutant $1 changed nothing"; status=1; return; }
	if check "$1" "$work/$1.pml"; then echo "FAIL: mutant $1 not caught"; status=1
	else echo "ok: mutant $1 caught: $(grep -m1 'assertion violated\|invalid end state' "$work/$1/pan.log")"; fi
}
# delivery ignores the generation: a stale task ends a later claim
mutant no-gen 's/(before \& CLAIMED) \&\& gen(before) == g \&\& queued(before) > 0/(before \& CLAIMED) \&\& queued(before) > 0/'
# the thief does not put X back when its claim end makes X available
mutant no-after-delivery '/^		after_delivery_x(before, after);$/d'
# the claim does not re-check availability on a failed CAS
mutant no-recheck 's/^		:: !avail(s) -> break        \/\* no longer available: lost \*\//		:: false -> break/'
# repair does not look at the state again after clearing the bit
mutant no-repair-recheck 's/^			:: avail(s) -> mask = 1$/			:: false -> mask = 1/'
# idle_enter ends the claim (clears CLAIMED) instead of only setting IDLE
mutant idle-ends-claim 's/atomic { before = st; st = st | IDLE }/atomic { before = st; st = (st | IDLE) \& ~CLAIMED }/'
exit "$status"
