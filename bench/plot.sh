#!/bin/sh
# bench/plot.sh: the pictures of BENCHMARKS.md, from place-bench and place-sim TSV.
#
#   bench/plot.sh [BUILD_DIR [OUT_DIR]]   run the benchmarks from BUILD_DIR (default build/),
#                                         keep their TSV in OUT_DIR (default doc/img/), plot
#   bench/plot.sh --replot [OUT_DIR]      plot the TSV already in OUT_DIR again (no runs)
#
# Writes, each as .svg and .png:
#   wakeup-ns     ns per place_wakeup (median) by topology size, one panel per load, per policy
#   wakeup-ir     instructions per place_wakeup (callgrind mean), same layout (needs valgrind)
# The four panels of a picture share one y scale; linear is drawn dashed with open
# markers over the others (it often equals sis_core exactly: no idle core to find).
#   hackbench-steal    place-sim hackbench on the modelled Zen3, idle workers steal:
#                      throughput (% of the fastest policy at that load) and p99 wakeup latency
#   hackbench-nosteal  the same, placement alone
# and the data: bench.tsv, sim-steal.tsv, sim-nosteal.tsv (the programs' own --format tsv).
#
# Needs gnuplot with the svg and pngcairo terminals (Debian: apt-get install gnuplot-nox).
# Takes about two minutes with valgrind, one without. Environment: PLOT_RUNS (place-sim
# --runs, default 3), PLOT_CALLGRIND=0 (skip the instruction counts).
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
ZEN3='synthetic:pack:2 [numa] l3:8(size=32MiB) l2:8(size=512KiB) l1d:1(size=32KiB) core:1 pu:2(indexes=core)'
# No CLAIM-off variants: the simulator decides one wakeup at a time, so they
# repeat the rows of linear and sis_core byte for byte.
SIM_POLICIES=linear,sis_core,exact,lifo,random

replot=no
if [ "${1:-}" = --replot ]; then
	replot=yes
	shift
	OUT=${1:-$TOP/doc/img}
else
	BUILD=${1:-$TOP/build}
	OUT=${2:-$TOP/doc/img}
fi

command -v gnuplot >/dev/null 2>&1 || {
	echo "plot.sh: gnuplot is missing (Debian: sudo apt-get install gnuplot-nox)" >&2
	exit 1
}
mkdir -p "$OUT"

if [ "$replot" = no ]; then
	for prog in place-bench place-sim; do
		[ -x "$BUILD/$prog" ] || { echo "plot.sh: no $BUILD/$prog (run ./build.sh demo first)" >&2; exit 1; }
	done
	cg=""
	if [ "${PLOT_CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null 2>&1; then
		cg=--callgrind
	fi
	echo "plot.sh: place-bench ${cg:-(no valgrind: ns only)}"
	"$BUILD/place-bench" $cg --format tsv >"$OUT/bench.tsv"
	echo "plot.sh: place-sim hackbench, with stealing"
	"$BUILD/place-sim" --topology "$ZEN3" --workload hackbench --load 2,8,32,128 --loops 20 --steal \
		--runs "${PLOT_RUNS:-3}" --policies "$SIM_POLICIES" --format tsv --no-host-time --quiet \
		>"$OUT/sim-steal.tsv"
	echo "plot.sh: place-sim hackbench, placement alone"
	"$BUILD/place-sim" --topology "$ZEN3" --workload hackbench --load 2,8,32 --loops 20 \
		--runs "${PLOT_RUNS:-3}" --policies "$SIM_POLICIES" --format tsv --no-host-time --quiet \
		>"$OUT/sim-nosteal.tsv"
fi
for f in bench.tsv sim-steal.tsv sim-nosteal.tsv; do
	[ -s "$OUT/$f" ] || { echo "plot.sh: $OUT/$f missing" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/place-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# pivot FILE ROW1 ROW2 COLKEY VALUE [FILTER]: a long TSV (one row per policy
# and load) into a wide one: a row per (ROW1, ROW2) value (two label lines),
# then a column per COLKEY value, in order of first appearance. ROW1, ROW2,
# COLKEY and VALUE are awk expressions over the named columns c["name"],
# FILTER an awk condition over them.
pivot() {
	awk -F '\t' -v OFS='\t' '
		NR == 1 { for (i = 1; i <= NF; i++) name[i] = $i; next }
		{
			for (i = 1; i <= NF; i++) c[name[i]] = $i
			if (!('"${6:-1}"')) next
			r = ('"$2"') SUBSEP ('"$3"'); k = '"$4"'; v = '"$5"'
			if (!(r in rseen)) { rseen[r] = 1; rows[++nr] = r }
			if (!(k in kseen)) { kseen[k] = 1; keys[++nk] = k }
			val[r SUBSEP k] = v
		}
		END {
			line = "label" OFS "label2"
			for (j = 1; j <= nk; j++) line = line OFS keys[j]
			print line
			for (i = 1; i <= nr; i++) {
				split(rows[i], lab, SUBSEP)
				line = lab[1] OFS lab[2]
				for (j = 1; j <= nk; j++) {
					v = val[rows[i] SUBSEP keys[j]]
					line = line OFS (v == "" ? "NaN" : v)
				}
				print line
			}
		}' "$1"
}

# legend FILE: the header's policy names, with what each policy is (any case).
legend() {
	awk -F '\t' -v OFS='\t' 'NR == 1 {
		for (i = 3; i <= NF; i++) {
			n = tolower($i)
			if (n == "linear") $i = "linear (CPU-by-CPU scan)"
			else if (n == "sis_core") $i = "sis_core (idle-core bitmaps, default)"
			else if (n == "exact") $i = "exact (best CPU, full scan)"
			else if (n == "lifo") $i = "lifo (last parked worker)"
			else if (n == "random") $i = "random (any idle worker)"
		}
	} { print }' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

# ymax PREFIX: the largest value of the four panels, plus a tenth (one scale for all).
ymax() {
	cat "$tmp/$1"-*.tsv | awk -F '\t' '$1 != "label" { for (i = 3; i <= NF; i++) if ($i != "NaN" && $i + 0 > m) m = $i + 0 }
		END { printf "%d\n", m * 1.1 + 1 }'
}

# ---- place-bench: cost per wakeup by topology size and load, per policy ----------------

# Single-thread rows; x labels "CPUS\nn CPUs/LLC". Instructions are means: the
# median jumps between the two modes of a bimodal cost (prev idle: the short
# path, ~130; an idle-core search: ~500) as the share of prev-idle wakeups
# crosses 50%, which it does at 256 CPUs and 50% busy (52% there, 49% on 16
# and 64 CPUs): the dip the median drew there was that, not a cheaper path.
for load in 0 50 90 99; do
	pivot "$OUT/bench.tsv" 'c["cpus"] " CPUs"' 'c["llc_cpus"] " CPUs/LLC"' 'c["policy"]' 'c["wake_med_ns"]' \
		'c["threads"] == 1 && c["load"] == '"$load" >"$tmp/ns-$load.tsv"
	pivot "$OUT/bench.tsv" 'c["cpus"] " CPUs"' 'c["llc_cpus"] " CPUs/LLC"' 'c["policy"]' 'c["wake_ir"]' \
		'c["threads"] == 1 && c["load"] == '"$load" >"$tmp/ir-$load.tsv"
	legend "$tmp/ns-$load.tsv"
	legend "$tmp/ir-$load.tsv"
done
have_ir=$(awk -F '\t' 'NR > 1 && $3 + 0 > 0 { print "yes"; exit }' "$tmp/ir-0.tsv")
nbench=$(head -n 1 "$tmp/ns-0.tsv" | awk -F '\t' '{ print NF }')

terminals() { # NAME: the two output terminals, for a gnuplot "do for" over them
	printf 'outs = "%s/%s.svg %s/%s.png"\n' "$OUT" "$1" "$OUT" "$1"
}

bench_plot() { # NAME PREFIX YLABEL TITLE
	{
		terminals "$1"
		cat <<EOF
set datafile separator "\t"
set key autotitle columnheader top left vertical samplen 3
set grid ytics lc rgb "#dddddd"
set style data linespoints
set ylabel "$3"
set yrange [0:$(ymax "$2")]
set xtics nomirror
set offsets 0.2, 0.2, graph 0.2, 0
set bmargin 3.5
set linetype 1 lc rgb "#1f77b4" lw 2 dt 2 pt 6 ps 1.6
set linetype 2 lc rgb "#d62728" lw 2 pt 5 ps 0.8
set linetype 3 lc rgb "#2ca02c" lw 2 pt 9 ps 0.9
do for [o in outs] {
	if (o[strlen(o)-2:] eq "svg") {
		set terminal svg size 960,680 dynamic noenhanced font "sans,12" background rgb "white"
	} else {
		set terminal pngcairo size 960,680 noenhanced font "sans,10" background rgb "white"
	}
	set output o
	set multiplot layout 2,2 title "$4"
	do for [load in "0 50 90 99"] {
		set title sprintf("%s%% of the CPUs busy", load)
		if (load eq "0") { set key } else { unset key }
		f = sprintf("$tmp/$2-%s.tsv", load)
		plot for [i=$nbench:3:-1] f using 0:i:xtic(strcol(1)."\n".strcol(2)) lt (i - 2)
	}
	unset multiplot
	set output
}
EOF
	} >"$tmp/$1.gp"
	gnuplot "$tmp/$1.gp"
	echo "plot.sh: $OUT/$1.svg $OUT/$1.png"
}

bench_plot wakeup-ns ns "ns per place_wakeup (median)" \
	"place-bench: cost of one place_wakeup by machine size (synthetic, SMT2), 1 thread"
if [ "$have_ir" = yes ]; then
	bench_plot wakeup-ir ir "instructions per place_wakeup (mean)" \
		"place-bench --callgrind: instructions per place_wakeup by machine size (SMT2), 1 thread"
else
	echo "plot.sh: bench.tsv has no instruction counts (no valgrind): wakeup-ir not drawn"
fi

# ---- place-sim: hackbench regimes, per policy --------------------------------------------

sim_plot() { # NAME TSV TITLE
	# Throughput as % of the fastest policy at the same load; p99 in us.
	awk -F '\t' -v OFS='\t' '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == "load") l = i; else if ($i == "work_per_s") w = i
			  print; next }
		{ row[NR] = $0; ld[NR] = $l; wp[NR] = $w; if ($w > best[$l]) best[$l] = $w }
		END { for (n = 2; n <= NR; n++) print row[n] OFS 100 * wp[n] / best[ld[n]] }' "$2" |
		sed '1s/$/\tpct_of_best/' >"$tmp/$1-long.tsv"
	# A load's label: its busiest policy's utilization (policies differ a lot without stealing).
	awk -F '\t' -v OFS='\t' '
		NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "load") l = i; if ($i == "util") u = i }; print; next }
		{ row[NR] = $0; ld[NR] = $l; if ($u > max[$l]) max[$l] = $u }
		END { for (n = 2; n <= NR; n++) { $0 = row[n]; $u = max[ld[n]]; print } }' \
		"$tmp/$1-long.tsv" >"$tmp/$1-l2.tsv"
	pivot "$tmp/$1-l2.tsv" 'c["load"] " groups"' 'sprintf("max util %.0f%%", 100 * c["util"])' 'c["policy"]' 'c["pct_of_best"]' >"$tmp/$1-tput.tsv"
	pivot "$tmp/$1-l2.tsv" 'c["load"] " groups"' 'sprintf("max util %.0f%%", 100 * c["util"])' 'c["policy"]' 'c["lat_p99_ns"] / 1000' >"$tmp/$1-p99.tsv"
	legend "$tmp/$1-tput.tsv"
	legend "$tmp/$1-p99.tsv"
	npol=$(head -n 1 "$tmp/$1-tput.tsv" | awk -F '\t' '{ print NF }')
	nload=$(($(wc -l <"$tmp/$1-tput.tsv") - 1))
	{
		terminals "$1"
		cat <<EOF
set datafile separator "\t"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key autotitle columnheader at screen 0.99, screen 0.9 right top
set xrange [-0.5:$nload - 0.5]
set lmargin 10
set rmargin 38
set bmargin 3.5
set grid ytics lc rgb "#dddddd"
set xtics nomirror
set linetype 1 lc rgb "#9ecae1"
set linetype 2 lc rgb "#4292c6"
set linetype 3 lc rgb "#08519c"
set linetype 4 lc rgb "#2ca02c"
set linetype 5 lc rgb "#ff7f0e"
set linetype 6 lc rgb "#d62728"
do for [o in outs] {
	if (o[strlen(o)-2:] eq "svg") {
		set terminal svg size 1100,720 dynamic noenhanced font "sans,12" background rgb "white"
	} else {
		set terminal pngcairo size 1100,720 noenhanced font "sans,10" background rgb "white"
	}
	set output o
	set multiplot layout 2,1 title "$3"
	set key
	set title "throughput, % of the fastest policy at that load (higher is better)"
	set ylabel "% of the fastest"
	unset logscale y
	set yrange [0:105]
	plot for [i=3:$npol] "$tmp/$1-tput.tsv" using i:xtic(strcol(1)."\n".strcol(2))
	set title "p99 wakeup latency, wakeup to run start (lower is better)"
	set ylabel "p99 (us, log scale)"
	set yrange [1:*]
	set logscale y
	unset key
	plot for [i=3:$npol] "$tmp/$1-p99.tsv" using i:xtic(strcol(1)."\n".strcol(2))
	unset multiplot
	set output
}
EOF
	} >"$tmp/$1.gp"
	gnuplot "$tmp/$1.gp"
	echo "plot.sh: $OUT/$1.svg $OUT/$1.png"
}

sim_plot hackbench-steal "$OUT/sim-steal.tsv" \
	"place-sim: hackbench on a modelled 2x64-core Zen3 (256 CPUs), idle workers steal"
sim_plot hackbench-nosteal "$OUT/sim-nosteal.tsv" \
	"place-sim: hackbench on a modelled 2x64-core Zen3 (256 CPUs), placement alone (no stealing)"
