#!/bin/sh
# Check the Promela models exhaustively with spin (claim.pml: the claim
# protocol; cookie.pml: core-scheduling cookies, when present):
#   spin -a claim.pml && gcc -DSAFETY -o pan pan.c && ./pan
# Fails on any assertion violation or invalid end state; skips (77, automake's
# SKIP) when spin or a C compiler is missing. Works in a scratch directory, so
# it runs from a read-only source tree (make distcheck) too.
#   tests/model/run.sh          the models, then each seeded bug (a mutant of a
#                               model) must be caught (about 20 s in all)
#   tests/model/run.sh --quick  the models only
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
	cp "$2" "$dir/model.pml"
	(cd "$dir" && spin -a model.pml >spin.log 2>&1) || { cat "$dir/spin.log"; echo "FAIL: spin -a ($1)"; exit 1; }
	(cd "$dir" && $CC -O2 -DSAFETY -o pan pan.c 2>cc.log) || { cat "$dir/cc.log"; echo "FAIL: cc pan.c ($1)"; exit 1; }
	(cd "$dir" && ./pan -m100000 >pan.log 2>&1) || true
	grep -q 'errors: 0' "$dir/pan.log"
}

# The models: the claim protocol, and the core-scheduling cookies once the
# engine has them (cookie.pml).
models="claim"
[ -f "$here/cookie.pml" ] && models="$models cookie"
for m in $models; do
	if check "$m" "$here/$m.pml"; then
		grep -E '^State-vector|states, stored$|states, matched$|transitions \(' "$work/$m/pan.log"
		grep -m1 'elapsed time' "$work/$m/pan.log" || true
		echo "PASS: $m.pml: no assertion violated, no invalid end state"
	else
		cat "$work/$m/pan.log"
		(cd "$work/$m" && spin -t -p model.pml 2>&1 | tail -n 60) || true
		echo "FAIL: $m.pml (the trail above replays the counterexample)"
		exit 1
	fi
done

[ "${1:-}" = --quick ] && exit 0
# Seeded bugs: each must be caught, or the model checks less than it says.
status=0
# mutant MODEL NAME EXPR [perl]: EXPR is a sed (or perl -0pe) edit of MODEL.pml
mutant() {
	[ -f "$here/$1.pml" ] || return 0
	if [ "${4:-}" = perl ]; then perl -0pe "$3" "$here/$1.pml" >"$work/$2.pml"
	else sed "$3" "$here/$1.pml" >"$work/$2.pml"; fi
	cmp -s "$here/$1.pml" "$work/$2.pml" && { echo "FAIL: mutant $2 changed nothing"; status=1; return; }
	if check "$2" "$work/$2.pml"; then echo "FAIL: mutant $2 not caught"; status=1
	else echo "ok: mutant $2 caught: $(grep -m1 'assertion violated\|invalid end state' "$work/$2/pan.log")"; fi
}
# claim: delivery ignores the generation: a stale task ends a later claim
mutant claim no-gen 's/(before \& CLAIMED) \&\& gen(before) == g \&\& queued(before) > 0/(before \& CLAIMED) \&\& queued(before) > 0/'
# claim: the thief does not put X back when its claim end makes X available
mutant claim no-after-delivery '/^		after_delivery_x(before, after);$/d'
# claim: the claim does not re-check availability on a failed CAS
mutant claim no-recheck 's/^		:: !avail(s) -> break        \/\* no longer available: lost \*\//		:: false -> break/'
# claim: repair does not look at the state again after clearing the bit
mutant claim no-repair-recheck 's/^				:: avail(s) -> mask = 1$/				:: false -> mask = 1/'
# claim: idle_enter ends the claim (clears CLAIMED) instead of only setting IDLE
mutant claim idle-ends-claim 's/atomic { before = st; st = st | IDLE }/atomic { before = st; st = (st | IDLE) \& ~CLAIMED }/'
if command -v perl >/dev/null 2>&1; then
	# claim: idle_enter reads the mask before its IDLE RMW (the store->load
	# order that place_fence_rmw_load() keeps): a repair and an idle edge miss each other
	mutant claim mask-read-first 's/\tassert\(!x_running\);\n\tatomic \{ before = st; st = st \| IDLE \};\n\tif\n\t:: avail\(before \| IDLE\) -> publish_x\(\)/\tassert(!x_running);\n\tseen_mask = mask;\n\tatomic { before = st; st = st | IDLE };\n\tif\n\t:: avail(before | IDLE) \&\& seen_mask == 0 -> mask = 1/; s/^bit x_running = 0;/bit x_running = 0;\nbit seen_mask;/m' perl
	# cookie: run_end gives back the task's current cookie, not the one run_begin counted
	mutant cookie leave-task-cookie 's/want_c = \(want_n > 0 -> curr_cookie : 0\)/want_c = (want_n > 0 -> task_cookie : 0)/' perl
	# cookie: a refusal decided on the (possibly torn) read, without the confirming CAS
	mutant cookie torn-refusal 's/:: occ_cookie == old_c && occ_count == old_n ->\n(\t+)\/\* confirmed: -EBUSY \*\//:: true ->\n$1\/* confirmed: -EBUSY *\//' perl
	# cookie: the enter admits the running cookie while the core drains
	mutant cookie drain-ignored 's/:: !\(CNT\(old_n\) > 0 && \(old_c != cookie \|\| \(old_n & DRAIN\)\)\) ->/:: !(CNT(old_n) > 0 \&\& old_c != cookie) ->/' perl
	# cookie: the leave that empties the core keeps DRAIN
	mutant cookie drain-kept 's/want_n = \(CNT\(old_n\) > 1 -> old_n - 1 : 0\);/want_n = (CNT(old_n) > 0 -> old_n - 1 : 0);/' perl
	# cookie: the admission CAS compares only the count half
	mutant cookie count-only-cas 's/:: occ_cookie == old_c && occ_count == old_n ->\n(\t+)occ_cookie = cookie;/:: occ_count == old_n ->\n$1occ_cookie = cookie;/' perl
fi
exit "$status"
