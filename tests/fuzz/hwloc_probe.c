/*
 * Helper of fuzz_topo: load one XML export (-x PATH) or synthetic string
 * (-s STRING) with plain hwloc (no libplace) and exit 0. Built with LeakSanitizer only (exit code 23 on a leak).
 * fuzz_topo spawns it for each XML input first and skips the inputs that
 * kill it or make it leak: those are hwloc's own bugs (see fuzz_topo.c).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <hwloc.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	hwloc_topology_t t;

	alarm(10);
	if (argc < 3 || hwloc_topology_init(&t) != 0)
		return 0;
	if ((argv[1][1] == 's' ? hwloc_topology_set_synthetic(t, argv[2])
			       : hwloc_topology_set_xml(t, argv[2])) == 0)
		(void)hwloc_topology_load(t);
	hwloc_topology_destroy(t);
	return 0;
}
