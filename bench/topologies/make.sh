#!/bin/sh
# bench/topologies/make.sh: the modelled machines with a NUMA latency matrix
# (hwloc synthetic strings carry none), written as hwloc XML with lstopo and
# hwloc-annotate (Debian's hwloc package). The XML files are kept in git, so
# the simulator and the sweep need neither tool; run this again after
# changing a model below:  sh bench/topologies/make.sh
#
#   numa4x2   4 packages x 2 nodes (one L3 of 6 SMT2 cores each), as a
#             4-socket part whose packages hold two dies: 10 local, 16 the
#             other node of the package, 22 another package.
#   cube8     8 sockets (one L3 of 8 SMT2 cores each) wired as a cube, as
#             glueless 8-socket boards are: 10 local, 21 a direct neighbour
#             (the socket numbers differ in one bit), 31 two hops, 41 three.
#
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# $1 name, $2 synthetic string, $3 nodes, $4 awk expression of the latency
# from node a to node b
model() {
	lstopo-no-graphics -i "$2" --of xml "$tmp/$1.xml"
	awk -v n="$3" "BEGIN {
		print \"name=NUMALatency\"; print 5; print n
		for (i = 0; i < n; i++) print \"numa:\" i
		for (a = 0; a < n; a++) for (b = 0; b < n; b++) print $4
	}" >"$tmp/$1.dist"
	hwloc-annotate "$tmp/$1.xml" "$dir/$1.xml" -- all -- distances "$tmp/$1.dist"
}

model numa4x2 'pack:4 group:2 [numa] l3:1 core:6 pu:2(indexes=core)' 8 \
	'(a == b ? 10 : int(a / 2) == int(b / 2) ? 16 : 22)'
model cube8 'pack:8 [numa] l3:1 core:8 pu:2(indexes=core)' 8 \
	'(a == b ? 10 : 11 + 10 * ((a % 2 != b % 2) + (int(a / 2) % 2 != int(b / 2) % 2) + (int(a / 4) != int(b / 4))))'
