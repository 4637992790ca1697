/*
 * Helper of fuzz_topo: load one XML export (-x PATH) or synthetic string
 * (-s STRING) with plain hwloc (no libplace) and exit 0. Built with
 * LeakSanitizer only: exit code 23 on a leak, and nothing else. A crash
 * must die of its signal, not of LeakSanitizer's report of it (which also
 * exits 23: every hwloc crash was counted as a leak, issue 14.8), and a
 * hang of SIGALRM. fuzz_topo spawns it for each input first and skips the
 * inputs that kill it or make it leak: those are hwloc's own bugs (see
 * fuzz_topo.c).
 *
 * It makes the same hwloc calls as src/topo.c, in the same order: a load
 * with HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED (topo.c's empty-allowed-set
 * check), then a plain load. A probe that skipped one of them let an hwloc
 * leak on that path through as a libplace finding (CI, 2026-12-02).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <hwloc.h>
#include <unistd.h>

/* LeakSanitizer's defaults: leave deadly signals to the kernel, so that the
 * parent sees WIFSIGNALED; leaks alone exit 23. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "exitcode=23:handle_segv=0:handle_sigbus=0:handle_abort=0:handle_sigfpe=0:handle_sigill=0";
}

static void load(const char *mode, const char *arg, unsigned long flags)
{
	hwloc_topology_t t;

	if (hwloc_topology_init(&t) != 0)
		return;
	if (hwloc_topology_set_flags(t, flags) == 0 &&
	    (mode[1] == 's' ? hwloc_topology_set_synthetic(t, arg) : hwloc_topology_set_xml(t, arg)) == 0)
		(void)hwloc_topology_load(t);
	hwloc_topology_destroy(t);
}

int main(int argc, char **argv)
{
	alarm(10);
	if (argc < 3)
		return 0;
	load(argv[1], argv[2], HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	load(argv[1], argv[2], 0);
	return 0;
}
