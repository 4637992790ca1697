#!/bin/sh
# place-sim's command line, as a test: the same seed gives the same bytes
# (every workload, table and TSV), another seed other bytes, a load sweep
# gives one row per level and policy, JSON is closed, and bad input gives one
# "place-sim: " line on stderr, nothing on stdout and exit 2 (1 for a
# topology that does not load). Run from the build directory by make check.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -u
. "${PLACE_TEST_SRCDIR:-tests}/testlib.sh"
use_tool place-sim
TOPO='synthetic:pack:2 [numa] l3:2 core:4 pu:2(indexes=core)'
SMALL="--groups 2 --senders 4 --receivers 4 --loops 3 --workers 4 --rounds 5 --pairs 3 --hops 20 --threads 8 --iters 3"
sim() {
	# shellcheck disable=SC2086
	$TOOL --topology "$TOPO" $SMALL --quiet --no-host-time "$@"
}

if $TOOL --help | grep -q '^usage: place-sim'; then ok "--help"; else bad "--help"; fi
if $TOOL --version | grep -q '^place-sim (libplace) [0-9]'; then ok "--version"; else bad "--version"; fi
# --topology: the five sources of place_topo_load
if $TOOL --help | grep -A1 -- '--topology' | tr '\n' ' ' | grep -q 'live.*process.*machine.*xml:PATH.*synthetic:STRING'; then
	ok "--help names the five topology sources"
else
	bad "--help: topology sources: $($TOOL --help | grep -A1 -- '--topology')"
fi

# Policy names: the readable spelling (sis_core/no-cookies: COOKIES off), the
# older one (sis_core-cookies) and upper case give the same rows, named the
# readable way; a table ends with its legend.
sim --workload pingpong --format tsv --policies sis_core/no-short_affine,linear/no-claim/sis_util >"$TMP/new"
sim --workload pingpong --format tsv --policies SIS_CORE-SHORT_AFFINE,linear-claim+sis_util >"$TMP/old"
if cmp -s "$TMP/new" "$TMP/old" && [ "$(cut -f2 "$TMP/new" | tr '\n' ' ')" = "policy sis_core/no-short_affine linear/no-claim/sis_util " ]; then
	ok "policy spellings: new, old and upper case agree"
else
	bad "policy spellings: $(cut -f2 "$TMP/new" "$TMP/old" | tr '\n' ' ')"
fi
sim --workload pingpong --policies sis_core,lifo >"$TMP/tab"
if grep -q '^  load: pingpong --pairs; vs: ' "$TMP/tab" && grep -q 'icmiss%: ' "$TMP/tab"; then
	ok "a table ends with its legend"
else
	bad "no legend under the table: $(tail -n 3 "$TMP/tab")"
fi
# A policy name longer than the column widens it: every line of a readable
# table ends its third column (time_ms) at the same place, in each format.
for f in table brief cookies numa exits; do
	sim --workload pingpong --policies sis_core,sis_core/no-short_affine/no-wake_wide --format $f >"$TMP/wide"
	ends=$(awk '/^ *(load|[0-9]+) / && match($0, /^ *[^ ]+ +[^ ]+ +[^ ]+/) { print RLENGTH }' "$TMP/wide" | sort -u)
	if [ "$(echo "$ends" | wc -l)" -eq 1 ]; then
		ok "--format $f: columns aligned after a long policy name"
	else
		bad "--format $f: time_ms ends at $(echo "$ends" | tr '\n' ' ')"
	fi
done

# --format exits: per policy, one line per role with each role's tasks
# (hackbench: groups x senders, groups x receivers), run time, its SMT
# share in per cent and the paired tasks in range, exit times in order, the
# last task's exit the makespan (time_ms), and senders that slept (a pipe of
# 2 fills).
sim --workload hackbench --pipe 2 --policies sis_core,lifo --format exits >"$TMP/exits"
if awk '/^ *[0-9]+ / { n++; t[$2] = $3
	if ($6 != 8 || $8 <= 0 || $9 < 0 || $9 > 100 || $10 > $6 || ($5 == 0 && $7 <= 0)) bad = 1
	if ($11 > $12 || $12 > $13 || $13 > $14 || $14 > $15 || $15 > $3) bad = 1
	if ($15 > last[$2]) last[$2] = $15 }
	END { for (p in t) if (last[p] != t[p]) bad = 1; exit !(n == 4 && !bad) }' "$TMP/exits"; then
	ok "--format exits: two roles of 8 tasks per policy, run times, exits in order, the last one the makespan"
else
	bad "--format exits: $(cat "$TMP/exits")"
fi

for w in hackbench schbench pingpong stream mix; do
	for f in table tsv; do
		sim --workload $w --format $f >"$TMP/a" 2>"$TMP/err.a"
		sim --workload $w --format $f >"$TMP/b" 2>"$TMP/err.b"
		if [ -s "$TMP/a" ] && cmp -s "$TMP/a" "$TMP/b" && [ ! -s "$TMP/err.a" ]; then
			ok "$w --format $f: same seed, same bytes ($(wc -l <"$TMP/a") lines)"
		else
			bad "$w --format $f: two runs differ or failed: $(cat "$TMP/err.a")"
		fi
	done
	sim --workload $w --format tsv --seed 7 >"$TMP/c"
	if cmp -s "$TMP/b" "$TMP/c"; then bad "$w: --seed changes nothing"; else ok "$w: another seed, other bytes"; fi
done

# The tenants and groups workloads, on SMT2 and SMT4 (tenants) and on two
# and eight nodes (groups): same seed, same bytes; every row ok; the
# simulator's own co-run counter (TSV violations, violation_ns) is 0 with
# COOKIES on and not with it off; NUMA moves happen only with NUMA on.
SMT2='synthetic:pack:1 l3:2 core:4 pu:2(indexes=core)'
SMT4='synthetic:pack:1 l3:2 core:4 pu:4'
NODES8='synthetic:pack:2 group:4 [numa] l3:1 core:2 pu:2(indexes=core)'
TN="--tenants 6 --tenant-tasks 6 --tenant-rounds 8 --tenant-work-ns 20000 --tenant-sleep-ns 20000"
GR="--numa-groups 4 --group-tasks 6 --group-tokens 3 --group-hops 20 --numa-cooldown-ns 100000"
all_refused=0
col() { awk -F'\t' -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $2, $c }' "$2"; }
for t in "$SMT2" "$SMT4" "$TOPO" "$NODES8"; do
	case $t in *numa*) w=groups args=$GR pols=sis_core,sis_core-numa ;;
	*) w=tenants args=$TN pols=sis_core,sis_core-cookies,linear,linear-cookies ;; esac
	# shellcheck disable=SC2086
	for f in table tsv; do
		$TOOL --topology "$t" --quiet --no-host-time --workload $w $args --policies $pols --format $f >"$TMP/a" 2>"$TMP/err.a"
		$TOOL --topology "$t" --quiet --no-host-time --workload $w $args --policies $pols --format $f >"$TMP/b"
		if [ -s "$TMP/a" ] && cmp -s "$TMP/a" "$TMP/b" && [ ! -s "$TMP/err.a" ]; then
			ok "$w on $t --format $f: same seed, same bytes"
		else
			bad "$w on $t --format $f: two runs differ or failed: $(cat "$TMP/err.a")"
		fi
	done
	if awk -F'\t' 'NR > 1 && ($3 != 1 || $26 != $27) { exit 1 }' "$TMP/a"; then
		ok "$w on $t: every row ok, every task exited"
	else
		bad "$w on $t: incomplete rows: $(cut -f1-3 "$TMP/a" | tr '\n' ' ')"
	fi
	if [ $w = tenants ]; then
		on=$(col violations "$TMP/a" | awk '$1 !~ /\/no-cookies$/ { s += $2 } END { print s + 0 }')
		on_ns=$(col violation_ns "$TMP/a" | awk '$1 !~ /\/no-cookies$/ { s += $2 } END { print s + 0 }')
		off=$(col violations "$TMP/a" | awk '$1 ~ /\/no-cookies$/ { s += $2 } END { print s + 0 }')
		refused=$(col cookie_refusals "$TMP/a" | awk '$1 !~ /\/no-cookies$/ { s += $2 } END { print s + 0 }')
		all_refused=$((all_refused + refused))
		if [ "$on" -eq 0 ] && [ "$on_ns" -eq 0 ] && [ "$off" -gt 0 ]; then
			ok "tenants on $t: 0 co-runs with COOKIES ($refused refusals), $off without"
		else
			bad "tenants on $t: co-runs with COOKIES $on ($on_ns ns), without $off, refusals $refused"
		fi
	else
		on=$(col numa_moves "$TMP/a" | awk '$1 == "sis_core" { print $2 }')
		off=$(col numa_moves "$TMP/a" | awk '$1 == "sis_core/no-numa" { print $2 }')
		if [ "$on" -gt 0 ] && [ "$off" -eq 0 ]; then
			ok "groups on $t: $on NUMA moves with NUMA, none without"
		else
			bad "groups on $t: NUMA moves $on with NUMA, $off without"
		fi
	fi
done
# Cookie-aware placement avoids most refusals (with three tenants, none):
# six tenants on eight cores must still exercise run_begin's refusal and
# place_run_refused on some shape.
if [ "$all_refused" -gt 0 ]; then
	ok "tenants: $all_refused refusals over the shapes"
else
	bad "tenants: no refusal on any shape (the refusal path is not exercised)"
fi

# The tenants' spread (cookies table, TSV role_spread): the last exit of the
# slowest tenant over that of the fastest, as --format exits prints them
# (two tenants: roles 0 and 1, to the microsecond); 0 with one tenant.
TEN="--workload tenants --tenant-tasks 6 --tenant-rounds 8 --tenant-work-ns 20000 --tenant-sleep-ns 20000"
# shellcheck disable=SC2086
{ $TOOL --topology "$SMT4" --quiet --no-host-time $TEN --tenants 2 --policies sis_core,lifo --format exits >"$TMP/sp.x" &&
	$TOOL --topology "$SMT4" --quiet --no-host-time $TEN --tenants 2 --policies sis_core,lifo --format tsv >"$TMP/sp.t" &&
	$TOOL --topology "$SMT4" --quiet --no-host-time $TEN --tenants 1 --policies sis_core --format tsv >"$TMP/sp.1"; }
if col role_spread "$TMP/sp.t" >"$TMP/sp.c" && [ "$(col role_spread "$TMP/sp.1")" = "sis_core 0.0000" ] &&
	awk 'FNR == NR { want[$1] = $2; next }
	/^ *[0-9]+ / { last[$2, $5] = $15; seen[$2] = 1 }
	END { for (p in seen) { hi = last[p, 0] > last[p, 1] ? last[p, 0] : last[p, 1]
		lo = last[p, 0] > last[p, 1] ? last[p, 1] : last[p, 0]
		d = hi / lo - want[p]; if (!(p in want) || want[p] < 1 || d > 0.001 || d < -0.001) exit 1; n++ }
		exit n != 2 }' "$TMP/sp.c" "$TMP/sp.x"; then
	ok "tenants' spread: $(tr '\n' ' ' <"$TMP/sp.c")= the last exits' ratio; 0 with one tenant"
else
	bad "tenants' spread: $(tr '\n' ' ' <"$TMP/sp.c"), one tenant: $(col role_spread "$TMP/sp.1")"
fi

# Stealing with cookies: a thief whose core refuses the task it stole sends
# it back with place_run_refused, and must then park, not rob that victim
# again at the same instant (this shape and load looped forever).
if timeout 120 $TOOL --topology 'synthetic:pack:1 l3:2 core:8 pu:2(indexes=core)' --workload tenants \
	--load 16 --policies sis_core --steal --quiet --no-host-time --format tsv >"$TMP/steal" &&
	awk -F'\t' 'NR > 1 && ($3 != 1 || $26 != $27) { exit 1 }' "$TMP/steal" &&
	[ "$(col violations "$TMP/steal" | awk '{ s += $2 } END { print s + 0 }')" -eq 0 ]; then
	ok "tenants with stealing: every task exited, 0 co-runs"
else
	bad "tenants with stealing: did not finish in 120 s, or incomplete, or co-runs"
fi

# --kick: a wakeup that libplace stacks while workers are parked wakes one
# (place_idle_near, claimed) and its claim is given back when it wakes; LIFO
# never stacks with a worker parked, so it never kicks; without --steal (no
# thieves to wake) --kick changes no byte.
kicks() { # policy file: "kicks released ok" of that policy's JSON result
	grep -A3 "\"policy\": \"$1\"" "$2" | grep -o '"ok": [a-z]*\|"kicks": [0-9]*\|"claims_released": [0-9]*' |
		sed 's/.*: //' | tr '\n' ' '
}
sim --workload schbench --load 32 --rounds 20 --policies sis_core,lifo --steal --kick --format json >"$TMP/kick"
sim --workload schbench --load 32 --rounds 20 --policies sis_core,lifo --steal --format json >"$TMP/nokick"
sim --workload schbench --load 32 --rounds 20 --policies sis_core --kick >"$TMP/kick0"
sim --workload schbench --load 32 --rounds 20 --policies sis_core >"$TMP/nokick0"
# shellcheck disable=SC2046
set -- $(kicks sis_core "$TMP/kick")
if [ "$1" = true ] && [ "$2" -gt 0 ] && [ "$2" = "$3" ] && [ "$(kicks lifo "$TMP/kick")" = "true 0 0 " ] &&
	[ "$(kicks sis_core "$TMP/nokick")" = "true 0 0 " ] && cmp -s "$TMP/kick0" "$TMP/nokick0"; then
	ok "--kick: $2 thieves woken and released, none for lifo, none without --kick or --steal"
else
	bad "--kick: sis_core $(kicks sis_core "$TMP/kick"), lifo $(kicks lifo "$TMP/kick"), without $(kicks sis_core "$TMP/nokick")"
fi

# 1..8 doubles: 4 levels x 7 default policies + the header line.
sim --workload pingpong --load 1..8 --format tsv >"$TMP/sweep"
if [ "$(wc -l <"$TMP/sweep")" -eq 29 ] && [ "$(cut -f1 "$TMP/sweep" | sort -u | tr '\n' ' ')" = "1 2 4 8 load " ]; then
	ok "--load 1..8: 4 levels x 7 policies"
else
	bad "--load 1..8: $(cut -f1,2 "$TMP/sweep" | tr '\n' ' ')"
fi
# Every run completes (ok column) and conserves messages (sent == delivered).
if awk -F'\t' 'NR > 1 && ($3 != 1 || $28 != $29 || $26 != $27) { exit 1 }' "$TMP/sweep"; then
	ok "every row ok, every task exited, every message delivered"
else
	bad "incomplete rows in the sweep"
fi
sim --workload mix --format json --policies sis_core,lifo >"$TMP/json"
if head -c 8 "$TMP/json" | grep -q '^{"run": ' && tail -n 1 "$TMP/json" | grep -q '^ \]}$' &&
	[ "$(grep -c '"policy": ' "$TMP/json")" -eq 2 ]; then
	ok "--format json: one object, two results"
else
	bad "--format json: $(head -c 200 "$TMP/json")"
fi
sim --format summary --summary --policies linear,sis_core,lifo,random >"$TMP/sum"
if grep -q 'sis_core vs linear ' "$TMP/sum" && grep -q 'sis_core vs LIFO' "$TMP/sum"; then
	ok "--summary: the verdict lines"
else
	bad "--summary: $(cat "$TMP/sum")"
fi

# bench/sweep.sh drives this binary (bare: the sweep is no memcheck target):
# one shape and seed, twice: two rows of seven cells, the summary, the same bytes.
SWEEP="${PLACE_TEST_SRCDIR:-tests}/../bench/sweep.sh"
sh "$SWEEP" --sim "$TOOL_PLAIN" --shapes smt1 --runs 1 >"$TMP/sw1" 2>"$TMP/err.sw"
sh "$SWEEP" --sim "$TOOL_PLAIN" --shapes smt1 --runs 1 >"$TMP/sw2" 2>>"$TMP/err.sw"
if [ "$(grep -c '^smt1 ' "$TMP/sw1")" -eq 2 ] && grep -q '^summary: sis_core wins [0-9]* of 14 cells' "$TMP/sw1" &&
	cmp -s "$TMP/sw1" "$TMP/sw2" && [ ! -s "$TMP/err.sw" ]; then
	ok "bench/sweep.sh: 14 cells and a summary, the same bytes twice"
else
	bad "bench/sweep.sh: $(cat "$TMP/err.sw" "$TMP/sw1")"
fi

# --shape with an XML source (a machine with NUMA latencies), beside a
# synthetic one: both run both workloads.
XML="${PLACE_TEST_SRCDIR:-tests}/../bench/topologies/numa4x2.xml"
sh "$SWEEP" --sim "$TOOL_PLAIN" --runs 1 --shape "numa|48|xml:$XML" --shape "one|16|pack:1 l3:1 core:16 pu:1" \
	>"$TMP/sw4" 2>"$TMP/err.sw"
if [ "$(grep -c '^numa ' "$TMP/sw4")" -eq 2 ] && [ "$(grep -c '^one ' "$TMP/sw4")" -eq 2 ] &&
	grep -q '^summary: sis_core wins [0-9]* of 28 cells' "$TMP/sw4" && [ ! -s "$TMP/err.sw" ]; then
	ok "bench/sweep.sh --shape: an xml: and a synthetic shape, 28 cells"
else
	bad "bench/sweep.sh --shape xml:: $(cat "$TMP/err.sw" "$TMP/sw4")"
fi

# --no-steal: placement alone, said in the header; at 4x the cores, where
# only thieves drain the queues, its cells differ from the stealing run's.
sh "$SWEEP" --sim "$TOOL_PLAIN" --shapes smt1 --runs 1 --no-steal >"$TMP/sw3" 2>"$TMP/err.sw"
if grep -q 'Without stealing\.$' "$TMP/sw3" && ! grep -q 'Without stealing' "$TMP/sw1" &&
	[ "$(grep '^smt1   hackbench' "$TMP/sw3" | awk '{ print $NF }')" != \
	  "$(grep '^smt1   hackbench' "$TMP/sw1" | awk '{ print $NF }')" ] && [ ! -s "$TMP/err.sw" ]; then
	ok "bench/sweep.sh --no-steal: without stealing, other cells at 4x"
else
	bad "bench/sweep.sh --no-steal: $(cat "$TMP/err.sw" "$TMP/sw3")"
fi

# hub_queue and busy_stays act only with --steal: named without it, one
# warning line each on stderr (the run goes on); with it, none.
sim --workload pingpong --policies sis_core/no-hub_queue,sis_core-busy_stays,lifo >"$TMP/w.out" 2>"$TMP/w.err"
st=$?
if [ $st -eq 0 ] && [ -s "$TMP/w.out" ] && [ "$(wc -l <"$TMP/w.err")" -eq 2 ] &&
	grep -q '^place-sim: warning: hub_queue acts only with --steal' "$TMP/w.err" &&
	grep -q '^place-sim: warning: busy_stays acts only with --steal' "$TMP/w.err"; then
	ok "hub_queue, busy_stays without --steal: a warning each"
else
	bad "hub_queue, busy_stays without --steal: exit $st, stderr: $(cat "$TMP/w.err")"
fi
if sim --workload pingpong --steal --policies sis_core/no-hub_queue,sis_core/busy_stays >"$TMP/w.out" 2>"$TMP/w.err" &&
	[ -s "$TMP/w.out" ] && [ ! -s "$TMP/w.err" ]; then
	ok "hub_queue, busy_stays with --steal: no warning"
else
	bad "hub_queue, busy_stays with --steal: stderr: $(cat "$TMP/w.err")"
fi

# expect_error NAME STATUS ARGS... (testlib.sh): exit STATUS, one "place-sim: " line, no stdout
expect_error "unknown option" 2 --bogus
expect_error "unknown workload" 2 --workload nope
expect_error "unknown policy" 2 --policies sis_core,nope
expect_error "feature on a baseline" 2 --policies lifo-claim
expect_error "zero load" 2 --load 0
expect_error "bad range" 2 --load 8..2
expect_error "smt factor above 1" 2 --smt-factor 1.5
expect_error "negative number" 2 --wake-ns -5
expect_error "bad format" 2 --format xml
expect_error "jitter above 100%" 2 --jitter 101
expect_error "missing value" 2 --seed
expect_error "more than 16 runs" 2 --runs 17
expect_error "no- of nothing" 2 --policies sis_core/no-
expect_error "stray argument" 2 extra
expect_error "bad topology" 1 --topology synthetic:nonsense

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
