# shellcheck shell=sh
# Shared by the shell tests of the command-line tools (test_place_info.sh,
# test_place_sim.sh), sourced from the source tree's tests/ directory:
#   . "${PLACE_TEST_SRCDIR:-tests}/testlib.sh"
# PLACE_TEST_SRCDIR comes from make check (tests/local.am), so this also
# works in a VPATH build such as make distcheck's.
#
# It makes a scratch directory $TMP (removed on exit), the PASS/FAIL
# counters and their reporters ok and bad, and use_tool / expect_error.
#
# SPDX-License-Identifier: LGPL-2.1-or-later

TMP=$(mktemp -d) || exit 99
trap 'rm -rf "$TMP"' EXIT
checks=0 failures=0

ok() { checks=$((checks + 1)); echo "PASS: $1"; }
bad() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $1"; }

# use_tool PROG: $TOOL runs ./PROG (the build directory's), under valgrind
# memcheck in build.sh's memcheck stage (PLACE_UNDER_VALGRIND), so that the
# stage checks the tool and not the shell; $TOOL_PLAIN runs it bare.
use_tool() {
	TOOL_NAME=$1
	TOOL_PLAIN=./$1
	TOOL=$TOOL_PLAIN
	if [ -n "${PLACE_UNDER_VALGRIND:-}" ] && command -v valgrind >/dev/null 2>&1; then
		TOOL="./libtool --mode=execute valgrind -q --error-exitcode=99 --leak-check=full \
--errors-for-leak-kinds=definite --suppressions=${PLACE_TEST_SRCDIR:-tests}/valgrind.supp $TOOL_PLAIN"
	fi
}

# expect_error NAME STATUS ARGS...: $TOOL ARGS exits STATUS with one
# "PROG: " line on stderr and nothing on stdout.
expect_error() {
	name=$1 want=$2
	shift 2
	$TOOL "$@" >"$TMP/out" 2>"$TMP/err"
	st=$?
	if [ "$st" -eq "$want" ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
		grep -q "^$TOOL_NAME: " "$TMP/err"; then
		ok "$name: $(cat "$TMP/err")"
	else
		bad "$name: exit $st (want $want), stdout $(wc -c <"$TMP/out") bytes, stderr: $(cat "$TMP/err")"
	fi
}
