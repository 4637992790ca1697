#!/bin/sh
# bench/sweep.sh: the regimes sweep. place-sim runs hackbench (with
# stealing) and schbench at tasks = 0.25x .. 4x the cores on seven shapes, and
# each cell compares the default policy (sis_core) with the better of the two
# baselines runtimes use today (LIFO, RANDOM):
#
#   thr   sis_core's throughput / max(LIFO's, RANDOM's)    a win: >= 0.98
#   p99   sis_core's wakeup p99 / LIFO's                    a win: <= 1.00
#
# A cell that is not a win on both counts is marked '*' (0.98: within the
# simulator's seed-to-seed noise of the better baseline). Virtual time, fixed seeds:
# the same binary gives the same bytes. Run from the top of the tree or from
# build/:   bench/sweep.sh [--sim PATH] [--runs N] [--seed S] [--raw DIR]
#                                    [--shapes LIST] [--policies LIST] [--model OPTS]
#                                    [--candidate NAME] [--shape 'NAME|CORES|TOPO']...
#                                    [--no-steal]
#
# --raw DIR keeps place-sim's TSV rows (every counter) for each shape and
# workload; --shapes takes a comma list of shape names (smt1,...); --model
# passes machine-model options to place-sim (e.g. '--probe-ns 0': what the
# decisions' cost accounts for); --candidate compares another libplace
# variant in sis_core's place (e.g. sis_core/no-widen); --shape runs a shape
# of your own instead of the seven (repeatable; CORES counts cores, not CPUs,
# TOPO is an hwloc synthetic string or xml:PATH, e.g. the machines with NUMA
# latencies in bench/topologies/), to check a change on shapes it was not
# tuned on; --no-steal runs both workloads without stealing (placement
# alone: a runtime whose idle workers do not take queued tasks).
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu

sim=
runs=3
seed=1
raw=
only=
model=
cand=sis_core
policies=
own=
steal=--steal
nosteal=
while [ $# -gt 0 ]; do
	case "$1" in
	--sim) sim=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--raw) raw=$2; shift 2 ;;
	--shapes) only=$2; shift 2 ;;
	--policies) policies=$2; shift 2 ;;
	--model) model=$2; shift 2 ;;
	--candidate) cand=$2; shift 2 ;;
	--no-steal) steal='' nosteal=' Without stealing.'; shift ;;
	--shape) own="$own${own:+
}$2"; shift 2 ;;
	-h|--help) sed -n '2,27p' "$0"; exit 0 ;;
	*) echo "sweep.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ -z "$sim" ]; then
	for p in ./place-sim build/place-sim; do
		[ -x "$p" ] && sim=$p && break
	done
fi
[ -n "$sim" ] && [ -x "$sim" ] || { echo "sweep.sh: no place-sim (build first, or --sim PATH)" >&2; exit 2; }
[ -z "$raw" ] || mkdir -p "$raw"
[ -n "$policies" ] || policies=$cand,linear,lifo,random

# name|cores|hwloc synthetic string
shapes='smt1|32|pack:1 l3:1 core:32 pu:1
smt2|32|pack:1 l3:1 core:32 pu:2(indexes=core)
smt4|16|pack:1 l3:2 core:8 pu:4
l2clu|32|pack:1 l3:1 l2:8 core:4 pu:1
4sock|64|pack:4 [numa] l3:2 core:8 pu:2(indexes=core)
8sock|64|pack:8 [numa] l3:1 core:8 pu:1
zen3|128|pack:2 [numa] l3:8(size=32MiB) l2:8(size=512KiB) l1d:1(size=32KiB) core:1 pu:2(indexes=core)'
[ -z "$own" ] || shapes=$own
# Tasks per core, in quarters: 0.25x 0.5x 1x 1.25x 1.5x 2x 4x.
quarters='1 2 4 5 6 8 16'

# hackbench: a group is a quarter of the cores in tasks (cores/8 senders and
# as many receivers), so the multiples are 1, 2, 4, 5, 6, 8, 16 groups on
# every shape; each sender sends 1600/k messages to each of its k receivers; hackbench
# is chaotic near 1-2x (a seed moves a cell by 5%), so it runs 2 seeds more.
# schbench: 2 message threads, each with tasks/2 - 1 workers, 200 rounds.
groups() { echo "$quarters" | tr ' ' ','; }
loads() { # $1 = cores: schbench's workers per message thread
	out=
	for q in $quarters; do
		out="$out${out:+,}$(($1 * q / 8 - 1))"
	done
	echo "$out"
}

# TSV rows of one shape and workload -> one line of cells, then a tab and
# each cell's unrounded ratio and misses (ratio,slow,late) for the summary,
# which must count what the marks say (0.9799 prints as 0.980 but is slow).
# Columns are found by name in the header; the policy order inside a load
# does not matter.
cells() {
	awk -F'\t' -v c="$cand" '
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	/^#/ { next }
	{
		l = $col["load"]; p = $col["policy"]
		if (!(l in seen)) { seen[l] = 1; order[++n] = l }
		thr[l, p] = $col["work_per_s"]; p99[l, p] = $col["lat_p99_ns"]
		ok[l, p] = $col["ok"]
	}
	END {
		tail = ""
		for (k = 1; k <= n; k++) {
			l = order[k]
			best = thr[l, "lifo"] > thr[l, "random"] ? thr[l, "lifo"] : thr[l, "random"]
			r = best > 0 ? thr[l, c] / best : 0
			q = p99[l, "lifo"] > 0 ? p99[l, c] / p99[l, "lifo"] : 1
			bad = (r < 0.98 || q > 1.0 || !ok[l, c]) ? "*" : " "
			printf " %5.3f/%4.2f%s", r, q, bad
			tail = tail sprintf(" %.6f,%d,%d,%d", r, r < 0.98, q > 1.0, bad == "*")
		}
		printf "\t%s\n", tail
	}'
}

run() { # $1 = shape name, $2 = topology, $3 = workload, $4 = loads, then options
	name=$1 topo=$2 wl=$3 ld=$4
	shift 4
	case $topo in xml:*) src=$topo ;; *) src=synthetic:$topo ;; esac
	out=$("$sim" --topology "$src" --workload "$wl" --load "$ld" --runs "$runs" --seed "$seed" \
		--policies "$policies" --format tsv --no-host-time --quiet $model "$@")
	[ -z "$raw" ] || printf '%s\n' "$out" > "$raw/$name-$wl.tsv"
	printf '%-6s %-9s' "$name" "$wl"
	printf '%s\n' "$out" | cells
}

echo "# bench/sweep.sh: $cand throughput / max(lifo, random) and wakeup p99 / lifo's;"
echo "# '*' misses thr >= 0.98 or p99 <= 1.00. Each row: the median-time run of seeds $seed..$((seed + runs - 1))"
echo "# (hackbench: of seeds $seed..$((seed + runs + 1)))${model:+. Model: $model}.$nosteal"
printf '%-16s' "shape workload"
for q in $quarters; do
	printf ' %11s' "$(awk -v q="$q" 'BEGIN { printf "%gx", q / 4 }')"
done
echo
rows=$(printf '%s\n' "$shapes" | while IFS='|' read -r name cores topo; do
	case ",$only," in ,,|*,"$name",*) ;; *) continue ;; esac
	k=$((cores / 8))
	run "$name" "$topo" hackbench "$(groups)" --senders $k --receivers $k --loops $((1600 / k)) $steal --runs $((runs + 2))
	run "$name" "$topo" schbench "$(loads "$cores")" --msg-threads 2 --rounds 200 $steal
done)
printf '%s\n' "$rows" | cut -f1
# The summary: cells that win on both counts, and the geometric mean of thr,
# from the unrounded ratios after the tab.
printf '%s\n' "$rows" | cut -f2 | awk -v c="$cand" '{
	for (i = 1; i <= NF; i++) {
		split($i, v, ",")
		n++; lg += log(v[1] > 0 ? v[1] : 1e-9)
		slow += v[2]; late += v[3]; miss += v[4]
	}
} END {
	if (n) printf "summary: %s wins %d of %d cells (%d below 0.98 thr, %d above LIFO p99); thr geomean %.3f\n", c, n - miss, n, slow, late, exp(lg / n)
}'
