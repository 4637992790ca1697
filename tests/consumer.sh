#!/bin/sh
# Consumers build against the *installed* library, as a runtime author would:
# `make install DESTDIR=...` of this build tree into a temporary root, then
#   - examples/minimal.c with  cc $(pkg-config --cflags --libs libplace)
#   - tests/consumer.cc with   c++ -std=c++11 -Wall -Wextra -Werror -pedantic ...
#   - examples/minimal.c again, libplace linked statically, with pkg-config --static
# Each program runs (the shared ones with LD_LIBRARY_PATH into the root) and its
# output is checked. The .pc file is checked too: Cflags carry only -I (nothing
# like ck's -D__x86_64__ leaks through Requires.private), a shared link needs
# only -lplace, and the header and library found are the installed ones.
# pkg-config sees the staged root through PKG_CONFIG_SYSROOT_DIR (pkgconf).
#
# Run by make check from the top build directory (tests/local.am passes the
# configured make, compilers and flags); works under make distcheck (read-only
# srcdir, VPATH build). Writes only below a mktemp directory.
set -eu
top_srcdir=${PLACE_TEST_SRCDIR:-$(cd "$(dirname "$0")" && pwd)}/..
MAKE=${PLACE_CONSUMER_MAKE:-make}
CC=${PLACE_CONSUMER_CC:-cc}
CXX=${PLACE_CONSUMER_CXX-c++}
CFLAGS=${PLACE_CONSUMER_CFLAGS:-}
CXXFLAGS=${PLACE_CONSUMER_CXXFLAGS:-}
PKG_CONFIG=${PLACE_CONSUMER_PKG_CONFIG:-pkg-config}
builddir=$(pwd)
unset PLACE_TOPOLOGY

[ -f "$builddir/libplace.la" ] || { echo "consumer: run from the build directory (no libplace.la here)"; exit 99; }
command -v "${PKG_CONFIG%% *}" >/dev/null 2>&1 || { echo "consumer: SKIP: no $PKG_CONFIG"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/place-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

fail() {
	echo "consumer: FAIL: $*"
	exit 1
}

# 1. Install. A nested make started from a test is not a recursive make of
# the parent: it must not try to join the parent's jobserver.
(unset MAKEFLAGS MFLAGS; $MAKE -C "$builddir" install DESTDIR="$root") >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "make install DESTDIR=$root"; }
pc=$(find "$root" -name libplace.pc | head -n 1)
[ -n "$pc" ] || fail "no libplace.pc installed under $root"
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
echo "consumer: installed into $root; using $pc"

# 2. The .pc file.
version=$($PKG_CONFIG --modversion libplace) || fail "pkg-config --modversion libplace"
cflags=$($PKG_CONFIG --cflags libplace)
libs=$($PKG_CONFIG --libs libplace)
static_libs=$($PKG_CONFIG --static --libs libplace)
libdir=$root$($PKG_CONFIG --variable=libdir libplace | sed "s|^$root||")
includedir=$root$($PKG_CONFIG --variable=includedir libplace | sed "s|^$root||")
echo "consumer: libplace $version"
echo "consumer:   --cflags:         $cflags"
echo "consumer:   --libs:           $libs"
echo "consumer:   --static --libs:  $static_libs"
[ -f "$includedir/place.h" ] || fail "$includedir/place.h not installed"
for flag in $cflags; do
	case $flag in
	-I*) ;;
	*) fail "Cflags leak '$flag' into consumers (only -I belongs there)" ;;
	esac
done
for flag in $libs; do
	case $flag in
	-L"$libdir" | -lplace) ;;
	*) fail "Libs carry '$flag': a shared link needs only -L$libdir -lplace" ;;
	esac
done
case " $static_libs " in
*" -lhwloc "*" -lurcu-bp "* | *" -lurcu-bp "*" -lhwloc "*) ;;
*) fail "--static --libs lacks hwloc or liburcu-bp (libplace.a needs both)" ;;
esac

shared=yes
[ -e "$libdir/libplace.so" ] || { shared=no; echo "consumer: no libplace.so (static-only build): static link only"; }
# A sanitizer build's libplace.a needs the sanitizer runtime in every link.
sanitize=""
for flag in $CFLAGS; do
	case $flag in -fsanitize* | -fno-sanitize*) sanitize="$sanitize $flag" ;; esac
done

# The header a consumer compiles must be the installed one, not the source tree's.
header_used() {
	$CC -M -o - "$1" $cflags 2>/dev/null | tr ' \\' '\n\n' | grep '/place\.h$' | head -n 1
}
used=$(header_used "$top_srcdir/examples/minimal.c")
[ "$used" = "$includedir/place.h" ] || fail "minimal.c includes '$used', not $includedir/place.h"

# Which libplace the loader maps for a program ("" when none: linked statically).
libplace_loaded() {
	if command -v ldd >/dev/null 2>&1; then
		LD_LIBRARY_PATH=$libdir ldd "$1" | awk '/libplace/ {print $3}'
	fi
}

synth='synthetic:pack:1 l3:1 core:4 pu:2'
want_minimal="$synth: 8 CPUs, 1 LLCs"
check_minimal() { # program output-file
	head -n 1 "$2" | grep -qxF "$want_minimal" || { cat "$2"; fail "$1 printed no '$want_minimal'"; }
	sed -n 2p "$2" | grep -q '^wakeups 1006 = target ' || { cat "$2"; fail "$1: no 'wakeups 1006 = target ...' line"; }
}

if [ "$shared" = yes ]; then
	# 3. C: examples/minimal.c, shared.
	# shellcheck disable=SC2086
	$CC $CFLAGS -o "$tmp/minimal" "$top_srcdir/examples/minimal.c" $cflags $libs ||
		fail "cc examples/minimal.c \$(pkg-config --cflags --libs libplace)"
	LD_LIBRARY_PATH=$libdir "$tmp/minimal" "$synth" >"$tmp/minimal.out" 2>&1 ||
		{ cat "$tmp/minimal.out"; fail "minimal exited $?"; }
	check_minimal minimal "$tmp/minimal.out"
	loaded=$(libplace_loaded "$tmp/minimal")
	case $loaded in
	"$libdir"/libplace.so*) ;;
	*) fail "minimal loads libplace from '$loaded', not $libdir" ;;
	esac
	echo "consumer: C, shared: ok ($(head -n 1 "$tmp/minimal.out"); libplace from $loaded)"

	# 4. C++: tests/consumer.cc (configure found no C++ compiler: skipped, said so).
	if [ -z "$CXX" ]; then
		echo "consumer: C++11: skipped (configure found no C++ compiler)"
	else
		# shellcheck disable=SC2086
		$CXX -std=c++11 -Wall -Wextra -Werror -pedantic $CXXFLAGS -o "$tmp/consumer-cxx" \
			"$top_srcdir/tests/consumer.cc" $cflags $libs ||
			fail "c++ -std=c++11 -Wall -Wextra -Werror -pedantic tests/consumer.cc \$(pkg-config --cflags --libs libplace)"
		LD_LIBRARY_PATH=$libdir "$tmp/consumer-cxx" >"$tmp/consumer-cxx.out" 2>&1 ||
			{ cat "$tmp/consumer-cxx.out"; fail "consumer.cc exited $?"; }
		want="consumer.cc: libplace $version, 8 CPUs, 4 wakeups claimed, 7 steal victims"
		grep -qxF "$want" "$tmp/consumer-cxx.out" || { cat "$tmp/consumer-cxx.out"; fail "consumer.cc printed no '$want'"; }
		echo "consumer: C++11, shared: ok ($want)"
	fi
fi

# 5. Static: libplace.a, its private requirements from pkg-config --static.
# Debian's hwloc.pc lists -ludev in Libs.private (for a static libhwloc), which
# links only when libudev-dev is installed; libplace links libhwloc.so here, so
# a library that the toolchain cannot find is left out, and said so, unless it
# is one libplace itself requires.
printf 'int main(void) { return 0; }\n' >"$tmp/probe.c"
link=""
for flag in $static_libs; do
	case $flag in
	-lplace) flag="-Wl,-Bstatic -lplace -Wl,-Bdynamic" ;;
	-lhwloc | -lurcu-bp | -lurcu-common | -L* | -pthread) ;;
	-l*)
		# shellcheck disable=SC2086
		if ! $CC -o "$tmp/probe" "$tmp/probe.c" $flag >/dev/null 2>&1; then
			echo "consumer: note: '$flag' (from a dependency's Libs.private) does not link here: left out"
			continue
		fi ;;
	esac
	link="$link $flag"
done
# shellcheck disable=SC2086
$CC $CFLAGS -o "$tmp/minimal-static" "$top_srcdir/examples/minimal.c" $cflags $link ||
	fail "cc examples/minimal.c \$(pkg-config --cflags libplace) with libplace.a and \$(pkg-config --static --libs libplace)"
[ -z "$(libplace_loaded "$tmp/minimal-static")" ] || fail "minimal-static still loads libplace.so"
"$tmp/minimal-static" "$synth" >"$tmp/minimal-static.out" 2>&1 ||
	{ cat "$tmp/minimal-static.out"; fail "minimal-static exited $?"; }
check_minimal minimal-static "$tmp/minimal-static.out"
echo "consumer: C, libplace static:$link: ok"
if [ "$shared" = no ]; then
	# shellcheck disable=SC2086
	$CXX -std=c++11 -Wall -Wextra -Werror -pedantic $CXXFLAGS $sanitize -o "$tmp/consumer-cxx" \
		"$top_srcdir/tests/consumer.cc" $cflags $link || fail "c++ tests/consumer.cc, static"
	"$tmp/consumer-cxx" >"$tmp/consumer-cxx.out" 2>&1 || { cat "$tmp/consumer-cxx.out"; fail "consumer.cc exited $?"; }
	echo "consumer: C++11, libplace static: ok ($(cat "$tmp/consumer-cxx.out"))"
fi
