#!/bin/sh
# libplace's two commands (see README.md):
#   ./build.sh demo   build everything and run the main job
#   ./build.sh test   build everything and run the whole test suite
# Installs the Debian packages it needs when they are missing (as root, or via sudo).
set -eu

ZEN3='synthetic:pack:2 [numa] l3:8(size=32MiB) l2:8(size=512KiB) l1d:1(size=32KiB) core:1 pu:2(indexes=core)'
TOP=$(cd "$(dirname "$0")" && pwd)
BUILD="$TOP/build"
JOBS=$(nproc 2>/dev/null || echo 2)

need_packages() {
	missing=""
	for tool in autoreconf:autoconf automake:automake libtoolize:libtool pkg-config:pkg-config make:make cc:gcc c++:g++; do
		command -v "${tool%%:*}" >/dev/null 2>&1 || missing="$missing ${tool#*:}"
	done
	if command -v pkg-config >/dev/null 2>&1; then
		for mod in hwloc:libhwloc-dev liburcu-bp:liburcu-dev ck:libck-dev check:check; do
			pkg-config --exists "${mod%%:*}" || missing="$missing ${mod#*:}"
		done
		[ -e /usr/lib/x86_64-linux-gnu/libsubunit.so ] || [ -n "$(find /usr/lib -name 'libsubunit.so' 2>/dev/null | head -n 1)" ] || missing="$missing libsubunit-dev"
	else
		missing="$missing libhwloc-dev liburcu-dev libck-dev check libsubunit-dev"
	fi
	command -v hwloc-calc >/dev/null 2>&1 || missing="$missing hwloc"
	command -v spin >/dev/null 2>&1 || missing="$missing spin" # tests/model/run.sh (the claim model)
	echo "$missing"
}

install_packages() {
	missing=$(need_packages)
	[ -z "$missing" ] && return 0
	echo "build.sh: installing Debian packages:$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -q >/dev/null
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q $missing >/dev/null
}

# A tool that only one test stage needs: installed when missing; the stage
# says so, loudly, and is skipped if that fails (no network, no root).
install_optional() {
	echo "build.sh: installing $* for the next stage"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	# shellcheck disable=SC2086
	{ $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@"; } >/dev/null 2>&1 || true
}

build() {
	install_packages
	cd "$TOP"
	if [ ! -x configure ] || [ configure.ac -nt configure ]; then
		autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
	fi
	mkdir -p "$BUILD"
	cd "$BUILD"
	[ -f Makefile ] || "$TOP/configure" --quiet
	make -j"$JOBS" --no-print-directory >/dev/null
	make -j"$JOBS" --no-print-directory check TESTS= >/dev/null
}

demo() {
	build
	echo "== place-info: this machine"
	./place-info
	echo
	echo "== place-info: modelled 2x64-core Zen3 (2 packages, 16 L3s, SMT2)"
	./place-info --topology "$ZEN3"
	# The simulator drives the real library on the modelled machine; see BENCHMARKS.md.
	# No CLAIM-off rows (linear/no-claim, sis_core/no-claim): the simulator decides
	# one wakeup at a time, so two decisions never race for one CPU, a claim is never
	# lost, and those rows repeat sis_core's and linear's bytes.
	sim_policies=linear,sis_core,exact,lifo,random
	echo
	echo "== place-sim: hackbench on the modelled Zen3, light / busy / overloaded / saturated"
	echo "   Policies: linear (scan the LLC CPU by CPU), sis_core (libplace's default: per-LLC"
	echo "   idle-core bitmaps, as Linux's select_idle_sibling()), exact (find the best CPU,"
	echo "   whatever it costs), lifo and random (wake the last parked or a random idle worker,"
	echo "   what thread pools do today). Virtual time; idle workers steal nearest-first as"
	echo "   the example pool does; the median of 3 seeds. Where each wins and why: with few"
	echo "   groups there is an idle CPU for everyone and random loses by waking workers in"
	echo "   other LLCs (xllc: cold caches); busy (8 groups), sis_core and exact keep wakees on"
	echo "   idle cores of the waker's LLC (low icmiss% and p99) while lifo and random wake"
	echo "   beside busy SMT siblings, and linear moves more wakees across LLCs; saturated,"
	echo "   nothing is idle: lifo and random skip the scan and gain about a per cent of"
	echo "   throughput, at a higher p99. The summary under the table says it per load."
	./place-sim --topology "$ZEN3" --workload hackbench --load 2,8,32,128 --loops 20 --steal --runs 3 \
		--policies "$sim_policies" --format brief --summary --quiet
	echo
	echo "== place-sim: the same without stealing (placement alone, no load balancer)"
	echo "   A task stays where its wakeups put it (BENCHMARKS.md, 'placement alone'), so a bad"
	echo "   placement is never repaired: the gaps between policies are larger."
	./place-sim --topology "$ZEN3" --workload hackbench --load 2,8,32 --loops 20 --runs 3 \
		--policies "$sim_policies" --format summary --summary --quiet | tail -n +2
	echo
	echo "== place-sim: 4 tenants (core-scheduling cookies) on an SMT4 model, cookies on vs off"
	echo "   Row 'sis_core': cookies ON, no two tenants ever share a core at once (viol 0)."
	echo "   Row 'sis_core/no-cookies': cookies OFF, tenants share cores (viol > 0): what core"
	echo "   scheduling exists to forbid. The summary says what isolation costs; spread, whether"
	echo "   every tenant got its share (the slowest one's last exit over the fastest's)."
	./place-sim --topology 'synthetic:pack:1 l3:2 core:8 pu:4' --workload tenants --load 8,32 \
		--policies sis_core,sis_core/no-cookies --summary --quiet
	echo
	echo "== bench/sweep.sh: sis_core against what runtimes do today, on seven machine shapes"
	echo "   hackbench (stealing) and schbench with 0.25x to 4x as many tasks as cores. Each cell:"
	echo "   sis_core's throughput over the better of lifo and random, then its p99 wakeup latency"
	echo "   over lifo's; '*' marks a cell where sis_core is not within 2% of the better baseline's"
	echo "   throughput or has the worse p99 (a loss). BENCHMARKS.md reads it, losses included."
	sh "$TOP/bench/sweep.sh" --sim ./place-sim
	echo
	echo "== bench/sweep.sh on two modelled machines with NUMA latencies (bench/topologies/):"
	echo "   4 packages of 2 nodes (latencies 10/16/22) and 8 sockets wired as a cube"
	echo "   (10/21/31/41). Beyond a node, libplace's searches and thieves try the nearest nodes"
	echo "   first; a move costs the simulator more the farther it goes."
	sh "$TOP/bench/sweep.sh" --sim ./place-sim --shape "numa4x2|48|xml:$TOP/bench/topologies/numa4x2.xml" \
		--shape "cube8|64|xml:$TOP/bench/topologies/cube8.xml"
	echo
	echo "== place-poolbench: the example pool on this machine, libplace vs LIFO wake (real time)"
	./place-poolbench --repeat 5
}

# Print every test log (each lists its cases, then Check's summary line).
show_logs() {
	for log in tests/*.log; do
		[ -f "$log" ] || continue
		[ "$log" = tests/test-suite.log ] && continue
		echo "---- $log"
		cat "$log"
	done
}

# The suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer
# (static, so the test binaries are the real programs): zero reports or it fails.
asan_check() {
	dir="$TOP/build-asan"
	mkdir -p "$dir"
	cd "$dir"
	[ -f Makefile ] || "$TOP/configure" --quiet --disable-shared \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
	make -j"$JOBS" --no-print-directory >/dev/null
	CK_TIMEOUT_MULTIPLIER=3 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		make -j"$JOBS" --no-print-directory check >/dev/null 2>&1 || {
		show_logs; echo "build.sh: ASan/UBSan suite failed"; exit 1; }
	grep -h '^# \(TOTAL\|PASS\|FAIL\)' test-suite.log
	cd "$BUILD"
}

# The concurrent suites built with ThreadSanitizer (gcc's libtsan2, static)
# into build-tsan/: configure --enable-tsan maps src/atomic.h to __atomic
# builtins, which TSan sees (ck_pr is inline assembly it cannot see). Any
# report fails the stage; tests/tsan.supp holds liburcu internals only.
# tests/test_pool runs too: under TSan examples/pool.c guards each ck_ring
# with a mutex, since TSan cannot see ck_ring's hand-offs (RELIABILITY.md).
# tests/test_ult too: examples/ult.c tells TSan about its swapcontext
# switches with the fiber API (__tsan_switch_to_fiber) under TSan builds.
tsan_check() {
	dir="$TOP/build-tsan"
	mkdir -p "$dir"
	cd "$dir"
	[ -f Makefile ] || "$TOP/configure" --quiet --enable-tsan --disable-shared CFLAGS="-O1 -g -fsanitize=thread"
	# quiet: gcc warns that TSan does not model atomic_thread_fence (-Wtsan)
	make -j"$JOBS" --no-print-directory >/dev/null 2>&1 || {
		make --no-print-directory 2>&1 | tail -n 40; echo "build.sh: TSan build failed"; exit 1; }
	suites="tests/test_engine_stress tests/test_invariants tests/test_pool tests/test_ult tests/test_numa tests/test_reconf_stress tests/test_workers"
	for src in "$TOP"/tests/test_*cookie*stress*.c; do # the cookie stress suite
		name=tests/$(basename "$src" .c)
		grep -q "^check_PROGRAMS += $name\$" "$TOP/tests/local.am" && suites="$suites $name"
	done
	rm -f tests/*.log
	TSAN_OPTIONS="halt_on_error=0 exitcode=66 print_suppressions=1 suppressions=$TOP/tests/tsan.supp" \
		CK_TIMEOUT_MULTIPLIER=3 make -j"$JOBS" --no-print-directory check TESTS="$suites" >/dev/null 2>&1 &&
		! grep -l 'WARNING: ThreadSanitizer' tests/*.log >/dev/null 2>&1 || {
		show_logs; echo "build.sh: ThreadSanitizer stage failed"; exit 1; }
	for s in $suites; do
		echo "$s: $(grep -h '^[0-9]*%: Checks' "$s.log")"
	done
	grep -h '^# \(TOTAL\|PASS\|FAIL\)' test-suite.log
	cd "$BUILD"
}

# The suite under valgrind memcheck (errors and definite leaks fail it).
# hwloc's synthetic backend overlaps a memcpy: tests/valgrind.supp says why.
valgrind_check() {
	command -v valgrind >/dev/null 2>&1 || install_optional valgrind
	command -v valgrind >/dev/null 2>&1 || {
		echo "build.sh: *** MEMCHECK STAGE SKIPPED: no valgrind (Debian: valgrind) ***"; return 0; }
	# --fair-sched=yes: valgrind runs one thread at a time, and by default a
	# spinning thread can starve the others for seconds (test_pool's
	# t_no_worker_lost, whose tasks spin until every worker runs one, then
	# timed out at random: 1 pass in 6 runs without it, 3 in 3 with it).
	vg="$BUILD/libtool --mode=execute valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full"
	vg="$vg --errors-for-leak-kinds=definite --suppressions=$TOP/tests/valgrind.supp"
	CK_TIMEOUT_MULTIPLIER=10 PLACE_UNDER_VALGRIND=1 make -j"$JOBS" --no-print-directory check LOG_COMPILER="$vg" >/dev/null 2>&1 || {
		show_logs; echo "build.sh: valgrind memcheck suite failed"; exit 1; }
	grep -h '^# \(TOTAL\|PASS\|FAIL\)' test-suite.log
}

# libFuzzer targets (tests/fuzz/run.sh, RELIABILITY.md): built with clang into
# build-fuzz/, each run deterministically (seed 1, a fixed number of inputs)
# from its seed corpus, which replays every crash found so far; a crash, leak, sanitizer report or
# failed invariant fails the stage. clang and libclang-rt-14-dev (libFuzzer and
# the sanitizer runtimes) are optional tools of this stage only: installed when
# missing, and the stage is skipped, loudly, if that fails.
fuzz_toolchain_ok() {
	command -v clang >/dev/null 2>&1 || return 1
	probe=$(mktemp -d "${TMPDIR:-/tmp}/place-fuzzprobe.XXXXXX")
	printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
	ok=0
	clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1 || ok=1
	rm -rf "$probe"
	return "$ok"
}

fuzz_check() {
	if ! fuzz_toolchain_ok; then
		install_optional clang libclang-rt-14-dev
	fi
	if ! fuzz_toolchain_ok; then
		echo "build.sh: *** FUZZ STAGE SKIPPED: no clang with libFuzzer (Debian: clang libclang-rt-14-dev) ***"
		return 0
	fi
	sh "$TOP/tests/fuzz/run.sh" "$TOP/build-fuzz" || { echo "build.sh: fuzzing failed (logs in build-fuzz/)"; exit 1; }
}

run_tests() {
	build
	if [ -z "${PLACE_CORPUS_DIR:-}" ] && [ -d "$TOP/../shared/testdata/topologies" ]; then
		PLACE_CORPUS_DIR=$(cd "$TOP/../shared/testdata/topologies" && pwd)
		export PLACE_CORPUS_DIR
	fi
	status=0
	make -j"$JOBS" --no-print-directory check >/dev/null 2>&1 || status=$?
	show_logs
	grep -h '^# \(TOTAL\|PASS\|FAIL\|ERROR\|SKIP\)' test-suite.log 2>/dev/null || true
	[ "$status" -eq 0 ] || { echo "build.sh: make check failed"; exit "$status"; }
	echo "== the suite under ASan+UBSan"
	asan_check
	echo "== the concurrent suites under ThreadSanitizer"
	tsan_check
	echo "== the suite under valgrind memcheck"
	valgrind_check
	echo "== fuzzing (libFuzzer, seed corpus plus a fixed-seed run per target)"
	fuzz_check
	echo "== make distcheck"
	make -j"$JOBS" --no-print-directory distcheck >distcheck.log 2>&1 ||
		{ tail -n 60 distcheck.log; echo "build.sh: make distcheck failed"; exit 1; }
	grep -A3 'archives ready for distribution' distcheck.log || true
}

case "${1:-}" in
demo) demo ;;
test) run_tests ;;
*) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
