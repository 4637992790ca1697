/*
 * Topology unit tests: the per-PU mapping on hwloc synthetic strings and on
 * the small hand-written XML fixtures in tests/fixtures/, every error path of
 * place_topo_load(), the accessors' error returns and place__topo_dup().
 * Every loaded topology also goes through the structural checks of
 * topocheck.h.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "place.h"
#include "testlib.h"
#include "topocheck.h"

/* Load source, which must succeed, and check its structure. */
static place_topo *load(const char *source)
{
	place_topo *t = NULL;
	int err = place_topo_load(&t, source);

	ck_assert_msg(err == 0, "%s: %d %s", source, err, place_last_error());
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(place_last_error(), "");
	place_check_topo(t);
	return t;
}

static place_topo *load_fixture(const char *name)
{
	char path[PATH_MAX], source[PATH_MAX + 8];

	place_test_path(path, sizeof(path), name);
	snprintf(source, sizeof(source), "xml:%.*s", PATH_MAX - 1, path);
	return load(source);
}

static place_cpu_info info_of(const place_topo *t, int cpu)
{
	place_cpu_info i;

	ck_assert_msg(place_topo_cpu_info(t, cpu, &i) == 0, "CPU %d: %s", cpu, place_last_error());
	ck_assert_int_eq(i.cpu, cpu);
	return i;
}

/* The OS CPUs of cpu's core (llc = 0) or LLC (llc = 1) equal want[0..n-1]. */
static void expect_cpus(const place_topo *t, int cpu, int llc, const int *want, int n)
{
	int got[1024];
	int r = llc ? place_topo_llc_cpus(t, cpu, got, 1024) : place_topo_siblings(t, cpu, got, 1024);

	ck_assert_int_eq(r, n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(got[i] == want[i], "CPU %d %s[%d]: %d, expected %d", cpu,
			      llc ? "llc" : "core", i, got[i], want[i]);
}

/* Load must fail with err and a detail containing needle. */
static void expect_fail(const char *source, int err, const char *needle)
{
	place_topo *t = (place_topo *)&t; /* poison: must come back NULL */

	ck_assert_int_eq(place_topo_load(&t, source), err);
	ck_assert_ptr_null(t);
	ck_assert_msg(strstr(place_last_error(), needle) != NULL, "%s: '%s' lacks '%s'",
		      source ? source : "(null)", place_last_error(), needle);
}

/* ------------------------------------------------------------------------ */
/* Synthetic topologies                                                      */

/* Linux x86 numbering: SMT siblings N and N+ncores. */
START_TEST(t_smt_spread)
{
	place_topo *t = load("synthetic:pack:2 [numa] l3:2 core:4 pu:2(indexes=core)");
	const struct place_topo *s = t;
	place_cpu_info i = info_of(t, 17);
	static const int sib[] = { 1, 17 }, llc[] = { 0, 1, 2, 3, 16, 17, 18, 19 };
	static const int slice[] = { 0, 16, 1, 17, 2, 18, 3, 19 };

	ck_assert_int_eq(place_topo_nr_cpus(t), 32);
	ck_assert_int_eq(place_topo_cpu_limit(t), 32);
	ck_assert_int_eq(place_topo_nr_cores(t), 16);
	ck_assert_int_eq(place_topo_nr_llcs(t), 4);
	ck_assert_int_eq(place_topo_nr_nodes(t), 2);
	ck_assert_int_eq(place_topo_nr_packages(t), 2);
	ck_assert_int_eq(i.core, 1);
	ck_assert_int_eq(i.llc, 0);
	ck_assert_int_eq(i.smt, 2);
	ck_assert_int_eq(i.llc_level, 3);
	ck_assert_int_eq(i.llc_kind, PLACE_LLC_CACHE);
	expect_cpus(t, 17, 0, sib, 2);
	expect_cpus(t, 17, 1, llc, 8);
	/* the engine's slice is grouped core by core */
	for (int p = 0; p < 8; p++)
		ck_assert_int_eq(s->os_of[s->llc_cpus[s->llc_start[0] + p]], slice[p]);
	i = info_of(t, 8); /* core 8: package 1, its first L3 */
	ck_assert_int_eq(i.package, 1);
	ck_assert_int_eq(i.node, 1);
	ck_assert_int_eq(i.llc, 2);
	place_topo_free(t);
}
END_TEST

/* POWER numbering: siblings consecutive. */
START_TEST(t_smt_consecutive)
{
	place_topo *t = load("synthetic:pack:1 l3:2 core:2 pu:4");
	static const int sib[] = { 4, 5, 6, 7 };

	expect_cpus(t, 5, 0, sib, 4);
	ck_assert_int_eq(info_of(t, 5).smt, 4);
	ck_assert_int_eq(info_of(t, 5).llc, 0);
	ck_assert_int_eq(info_of(t, 8).llc, 1);
	ck_assert_int_eq(place_topo_nr_cores(t), 4);
	place_topo_free(t);
}
END_TEST

/* Dense ids follow hwloc's logical order, not OS numbers: package L#0 holds
 * PUs 0 and 3, so CPU 3's core is dense core 1 and CPU 1's is core 2. */
START_TEST(t_logical_order)
{
	place_topo *t = load("synthetic:pack:2 core:2 pu:1(indexes=0,3,1,2)");

	ck_assert_int_eq(info_of(t, 3).core, 1);
	ck_assert_int_eq(info_of(t, 3).package, 0);
	ck_assert_int_eq(info_of(t, 1).core, 2);
	ck_assert_int_eq(info_of(t, 1).package, 1);
	place_topo_free(t);
}
END_TEST

/* No cache: the LLC domain is the package. */
START_TEST(t_nocache_package)
{
	place_topo *t = load("synthetic:pack:2 core:2 pu:2");
	place_cpu_info i = info_of(t, 5);

	ck_assert_int_eq(i.llc_kind, PLACE_LLC_PACKAGE);
	ck_assert_int_eq(i.llc_level, -1);
	ck_assert_int_eq(i.hw_llc, -1);
	ck_assert_int_eq(i.llc, i.package);
	ck_assert_int_eq(place_topo_nr_llcs(t), 2);
	ck_assert_int_eq(place_topo_llc_cpus(t, 5, NULL, 0), 4);
	place_topo_free(t);
}
END_TEST

/* No cache and no package: the NUMA node. */
START_TEST(t_nocache_node)
{
	place_topo *t = load("synthetic:numa:2 core:2 pu:1");
	place_cpu_info i = info_of(t, 3);

	ck_assert_int_eq(i.llc_kind, PLACE_LLC_NODE);
	ck_assert_int_eq(i.package, -1);
	ck_assert_int_eq(i.hw_package, -1);
	ck_assert_int_eq(i.node, 1);
	ck_assert_int_eq(i.llc, 1);
	ck_assert_int_eq(place_topo_nr_packages(t), 0);
	ck_assert_int_eq(place_topo_nr_llcs(t), 2);
	place_topo_free(t);
}
END_TEST

/* LLCs of more than 64 CPUs (Sapphire Rapids has 80 PUs in one L3). */
START_TEST(t_big_llc)
{
	place_topo *t = load("synthetic:pack:1 [numa] l3:1 core:40 pu:2(indexes=core)");
	int want[80];

	for (int c = 0; c < 80; c++)
		want[c] = c;
	expect_cpus(t, 79, 1, want, 80);
	ck_assert_int_eq(place__llc_weight(t, 0), 80);
	place_topo_free(t);
	t = load("synthetic:pack:2 [numa] l3:1 core:256 pu:2(indexes=core)");
	ck_assert_int_eq(place_topo_nr_cpus(t), 1024);
	ck_assert_int_eq(place_topo_llc_cpus(t, 1023, NULL, 0), 512);
	ck_assert_int_eq(info_of(t, 1023).core, 511);
	place_topo_free(t);
}
END_TEST

/* KNL flat mode: two nodes (DDR, MCDRAM) equally near: the lowest logical. */
START_TEST(t_two_nodes)
{
	place_topo *t = load("synthetic:pack:1 [numa] [numa] core:2 pu:1");

	ck_assert_int_eq(info_of(t, 1).hw_node_os, 0);
	ck_assert_int_eq(place_topo_nr_nodes(t), 1);
	place_topo_free(t);
}
END_TEST

/* A cache below the core (per-PU L1, nothing above) must not split the core
 * between LLC domains: the engine's SMT logic needs cores inside LLCs. */
START_TEST(t_cache_below_core)
{
	place_topo *t = load("synthetic:pack:1 core:2 l1d:2 pu:1");

	ck_assert_int_eq(place_topo_nr_llcs(t), 2);
	ck_assert_int_eq(info_of(t, 1).llc, info_of(t, 0).llc);
	ck_assert_int_ne(info_of(t, 1).hw_llc, info_of(t, 0).hw_llc);
	ck_assert_int_eq(info_of(t, 1).llc_level, 1);
	place_topo_free(t);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* XML fixtures                                                              */

/* PU 2 offline, PU 5 disallowed: cores 1 and 2 are left with one CPU. */
START_TEST(t_offline_disallowed)
{
	place_topo *t = load_fixture("fixtures/offline.xml");
	place_cpu_info i;
	static const int one[] = { 1 }, two[] = { 3, 7 }, llc[] = { 0, 1, 3, 4, 6, 7 };

	ck_assert_int_eq(place_topo_nr_cpus(t), 6);
	ck_assert_int_eq(place_topo_cpu_limit(t), 8);
	ck_assert_int_eq(place_topo_nr_cores(t), 4);
	ck_assert_int_eq(place_topo_cpu_info(t, 2, &i), -ENODEV);
	ck_assert_int_eq(place_topo_cpu_info(t, 5, &i), -ENODEV);
	expect_cpus(t, 1, 0, one, 1);
	expect_cpus(t, 7, 0, two, 2);
	expect_cpus(t, 6, 1, llc, 6);
	ck_assert_int_eq(info_of(t, 6).smt, 1);
	place_topo_free(t);
}
END_TEST

/* 8 PUs up to os_index 110; package L#0 holds NUMA node P#1. */
START_TEST(t_sparse)
{
	place_topo *t = load_fixture("fixtures/sparse.xml");
	const struct place_topo *s = t;
	static const int sib[] = { 48, 110 };
	place_cpu_info i;

	ck_assert_int_eq(place_topo_nr_cpus(t), 8);
	ck_assert_int_eq(place_topo_cpu_limit(t), 111);
	ck_assert_int_eq(place_topo_cpu(t, 7), 110);
	ck_assert_int_eq(place_topo_cpu_info(t, 109, &i), -ENODEV);
	expect_cpus(t, 110, 0, sib, 2);
	ck_assert_int_eq(info_of(t, 0).node, 0);
	ck_assert_int_eq(info_of(t, 0).hw_node_os, 1);
	ck_assert_int_eq(info_of(t, 40).hw_node_os, 0);
	ck_assert_int_eq(s->node_os[0], 1);
	ck_assert_int_eq(info_of(t, 72).llc_level, 2);
	place_topo_free(t);
}
END_TEST

/* P-cores' LLC is the L3, E-cores' the L2 of their cluster; L1i caches do
 * not count; the node is found below a memory-side cache. */
START_TEST(t_hybrid)
{
	place_topo *t = load_fixture("fixtures/hybrid.xml");
	place_cpu_info p = info_of(t, 1), e = info_of(t, 6);
	static const int cluster[] = { 4, 5, 6, 7 }, sib[] = { 0, 1 };

	ck_assert_int_eq(p.llc_level, 3);
	ck_assert_int_eq(p.hw_llc, 0);
	ck_assert_int_eq(e.llc_level, 2);
	ck_assert_int_eq(e.hw_llc, 2);
	ck_assert_int_ne(p.llc, e.llc);
	ck_assert_int_eq(place_topo_nr_llcs(t), 2);
	ck_assert_int_eq(e.hw_node_os, 0);
	ck_assert_int_eq(p.hw_node_os, 0);
	expect_cpus(t, 5, 1, cluster, 4);
	expect_cpus(t, 1, 0, sib, 2);
	place_topo_free(t);
}
END_TEST

/* No Core, no Package, no cache: each PU its own core, LLC = node. */
START_TEST(t_nocache_xml)
{
	place_topo *t = load_fixture("fixtures/nocache.xml");
	place_cpu_info i = info_of(t, 1);

	ck_assert_int_eq(i.hw_core, -1);
	ck_assert_int_eq(i.smt, 1);
	ck_assert_int_eq(i.llc_kind, PLACE_LLC_NODE);
	ck_assert_int_eq(place_topo_nr_cores(t), 2);
	ck_assert_int_eq(place_topo_nr_packages(t), 0);
	place_topo_free(t);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The live machine and PLACE_TOPOLOGY                                       */

START_TEST(t_live)
{
	cpu_set_t set;
	place_topo *t;

	unsetenv("PLACE_TOPOLOGY");
	t = load(NULL);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	ck_assert_str_eq(place_topo_source(t), "live");
	ck_assert_int_eq(place_topo_nr_cpus(t), CPU_COUNT(&set));
	for (int i = 0; i < place_topo_nr_cpus(t); i++)
		ck_assert(CPU_ISSET(place_topo_cpu(t, i), &set));
	place_topo_free(t);
}
END_TEST

/* hwloc ignores the affinity mask; libplace must not. */
START_TEST(t_live_affinity)
{
	cpu_set_t old, one;
	place_topo *t;
	int cpu = -1;

	unsetenv("PLACE_TOPOLOGY");
	ck_assert_int_eq(sched_getaffinity(0, sizeof(old), &old), 0);
	if (CPU_COUNT(&old) < 2) {
		printf("t_live_affinity: only one CPU allowed, nothing to restrict\n");
		return;
	}
	for (int c = CPU_SETSIZE - 1; c >= 0; c--)
		cpu = CPU_ISSET(c, &old) ? c : cpu;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	t = load("live");
	sched_setaffinity(0, sizeof(old), &old);
	ck_assert_int_eq(place_topo_nr_cpus(t), 1);
	ck_assert_int_eq(place_topo_cpu(t, 0), cpu);
	place_topo_free(t);
}
END_TEST

START_TEST(t_env_override)
{
	static const char *const live[] = { NULL, "", "live" };
	const char *env = "synthetic:pack:1 core:3 pu:1";
	place_topo *t;

	setenv("PLACE_TOPOLOGY", env, 1);
	for (int k = 0; k < 3; k++) {
		t = load(live[k]);
		ck_assert_int_eq(place_topo_nr_cpus(t), 3);
		ck_assert_str_eq(place_topo_source(t), env);
		place_topo_free(t);
	}
	/* an explicit source is not overridden */
	t = load("synthetic:pack:1 core:2 pu:1");
	ck_assert_int_eq(place_topo_nr_cpus(t), 2);
	place_topo_free(t);
	setenv("PLACE_TOPOLOGY", "live", 1);
	t = load(NULL);
	ck_assert_str_eq(place_topo_source(t), "live");
	place_topo_free(t);
	setenv("PLACE_TOPOLOGY", "bogus", 1);
	expect_fail(NULL, -EINVAL, "bogus: unknown topology source");
	unsetenv("PLACE_TOPOLOGY");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Errors of place_topo_load                                                 */

START_TEST(t_err_args)
{
	ck_assert_int_eq(place_topo_load(NULL, "live"), -EINVAL);
	ck_assert_str_eq(place_last_error(), "place_topo_load: out is NULL");
	expect_fail("foo:bar", -EINVAL, "foo:bar: unknown topology source");
	expect_fail("xmlfile.xml", -EINVAL, "unknown topology source");
	expect_fail("xml:", -EINVAL, "xml:: empty path");
	expect_fail("synthetic:", -EINVAL, "empty synthetic description");
}
END_TEST

START_TEST(t_err_synthetic)
{
	expect_fail("synthetic:pack:2 foo:3", -EINVAL,
		    "synthetic:pack:2 foo:3: hwloc rejects this synthetic description");
	expect_fail("synthetic:pack:0", -EINVAL, "hwloc rejects");
}
END_TEST

START_TEST(t_err_missing)
{
	char path[PATH_MAX], source[PATH_MAX + 16];

	expect_fail("xml:/nonexistent/libplace.xml", -ENOENT,
		    "xml:/nonexistent/libplace.xml: No such file or directory");
	/* a file used as a directory */
	place_test_path(path, sizeof(path), "fixtures/nocache.xml");
	snprintf(source, sizeof(source), "xml:%.*s/x.xml", PATH_MAX - 1, path);
	expect_fail(source, -ENOENT, "x.xml");
}
END_TEST

START_TEST(t_err_directory)
{
	char path[PATH_MAX], source[PATH_MAX + 8];

	place_test_path(path, sizeof(path), "fixtures");
	snprintf(source, sizeof(source), "xml:%.*s", PATH_MAX - 1, path);
	expect_fail(source, -EINVAL, "is a directory");
}
END_TEST

/* Root reads anything, so the load runs in a child that drops to nobody;
 * the parent removes the file afterwards. */
START_TEST(t_err_unreadable)
{
	char path[] = "/tmp/libplace-unreadable-XXXXXX", source[64];
	int fd = mkstemp(path), status = -1;
	pid_t pid;

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(chmod(path, 0), 0);
	snprintf(source, sizeof(source), "xml:%s", path);
	pid = fork();
	if (pid == 0) {
		place_topo *t;
		int ok;

		if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(2);
		ok = place_topo_load(&t, source) == -EACCES &&
		     strstr(place_last_error(), "cannot open: Permission denied");
		if (!ok)
			fprintf(stderr, "t_err_unreadable: '%s'\n", place_last_error());
		_exit(ok ? 0 : 1);
	}
	ck_assert_int_gt(pid, 0);
	waitpid(pid, &status, 0);
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}
END_TEST

static void expect_fixture_fail(const char *name, int err, const char *needle)
{
	char path[PATH_MAX], source[PATH_MAX + 8];

	place_test_path(path, sizeof(path), name);
	snprintf(source, sizeof(source), "xml:%.*s", PATH_MAX - 1, path);
	expect_fail(source, err, needle);
	ck_assert_msg(strstr(place_last_error(), path) != NULL, "'%s' does not name %s",
		      place_last_error(), path);
}

START_TEST(t_err_xml)
{
	expect_fixture_fail("fixtures/truncated.xml", -EINVAL, "hwloc cannot parse it as XML");
	expect_fixture_fail("fixtures/notopo.xml", -EINVAL, "not a valid hwloc XML export");
	expect_fixture_fail("fixtures/v3.xml", -EINVAL, "cannot import XML version 3.0 > 2");
	expect_fixture_fail("fixtures/noallowed.xml", -ENODEV, "no usable CPU");
	/* fuzz finding F1: a mangled os_index reads as 0, two PUs share it */
	expect_fixture_fail("fixtures/dup-os-index.xml", -EINVAL, "two PUs have OS index 0");
}
END_TEST

/* Issue 14.5: an export claiming CPU 1000000000 is refused at once, before
 * any array is sized by it (it took 15 s and 3.8 GiB); PLACE_CPU_OS_MAX
 * itself loads. Timing is not asserted: the refusal is. */
START_TEST(t_err_os_index_limit)
{
	char path[PATH_MAX], source[PATH_MAX + 8];
	place_topo *t = NULL;

	expect_fixture_fail("fixtures/huge-os-index.xml", -EINVAL, "OS index 1000000000, beyond");
	ck_assert_ptr_nonnull(strstr(place_last_error(), "65535"));
	place_test_path(path, sizeof(path), "fixtures/max-os-index.xml");
	snprintf(source, sizeof(source), "xml:%.*s", PATH_MAX - 1, path);
	ck_assert_int_eq(place_topo_load(&t, source), 0);
	ck_assert_int_eq(place_topo_nr_cpus(t), 2);
	ck_assert_int_eq(place_topo_cpu_limit(t), PLACE_CPU_OS_MAX + 1);
	place_topo_free(t);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */

START_TEST(t_acc_null)
{
	place_cpu_info i;
	int buf[4];

	ck_assert_int_eq(place_topo_nr_cpus(NULL), -EINVAL);
	ck_assert_str_eq(place_last_error(), "place_topo_nr_cpus: topo is NULL");
	ck_assert_int_eq(place_topo_nr_cores(NULL), -EINVAL);
	ck_assert_int_eq(place_topo_nr_llcs(NULL), -EINVAL);
	ck_assert_int_eq(place_topo_nr_nodes(NULL), -EINVAL);
	ck_assert_int_eq(place_topo_nr_packages(NULL), -EINVAL);
	ck_assert_int_eq(place_topo_cpu_limit(NULL), -EINVAL);
	ck_assert_int_eq(place_topo_cpu(NULL, 0), -EINVAL);
	ck_assert_int_eq(place_topo_cpu_info(NULL, 0, &i), -EINVAL);
	ck_assert_int_eq(place_topo_siblings(NULL, 0, buf, 4), -EINVAL);
	ck_assert_int_eq(place_topo_llc_cpus(NULL, 0, buf, 4), -EINVAL);
	ck_assert_ptr_null(place_topo_source(NULL));
	place_topo_free(NULL);
}
END_TEST

/* hwloc's NUMA latencies, by dense node id; 0 without a matrix. */
START_TEST(t_node_distance)
{
	place_topo *t = load_fixture("fixtures/numa-distances.xml");
	static const int want[4][4] = { { 10, 30, 20, 30 }, { 30, 10, 30, 20 }, { 20, 30, 10, 30 }, { 30, 20, 30, 10 } };

	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 4; b++)
			ck_assert_int_eq(place_topo_node_distance(t, a, b), want[a][b]);
	ck_assert_int_eq(place_topo_node_distance(t, -1, 0), -ERANGE);
	ck_assert_int_eq(place_topo_node_distance(t, 0, 4), -ERANGE);
	ck_assert_str_eq(place_last_error(), "place_topo_node_distance: nodes 0, 4 not both in 0..3");
	ck_assert_int_eq(place_topo_node_distance(t, INT_MIN, INT_MAX), -ERANGE);
	ck_assert_int_eq(place_topo_node_distance(NULL, 0, 0), -EINVAL);
	place_topo_free(t);
	t = load("synthetic:pack:2 [numa] core:2 pu:1"); /* no matrix: every other node as far */
	ck_assert_int_eq(place_topo_node_distance(t, 0, 1), 0);
	ck_assert_int_eq(place_topo_node_distance(t, 1, 1), 0);
	ck_assert_str_eq(place_last_error(), "");
	place_topo_free(t);
}
END_TEST

START_TEST(t_acc_range)
{
	place_topo *t = load("synthetic:pack:1 l3:1 core:4 pu:2(indexes=core)");
	place_cpu_info i;
	int buf[4];

	ck_assert_int_eq(place_topo_cpu(t, -1), -ERANGE);
	ck_assert_int_eq(place_topo_cpu(t, 8), -ERANGE);
	ck_assert_str_eq(place_last_error(), "place_topo_cpu: index 8 not in 0..7");
	ck_assert_int_eq(place_topo_nr_cpus(t), 8); /* success clears the detail */
	ck_assert_str_eq(place_last_error(), "");
	ck_assert_int_eq(place_topo_cpu_info(t, -1, &i), -ENODEV);
	ck_assert_int_eq(place_topo_cpu_info(t, 8, &i), -ENODEV);
	ck_assert_int_eq(place_topo_cpu_info(t, INT_MAX, &i), -ENODEV);
	ck_assert_int_eq(place_topo_cpu_info(t, 0, NULL), -EINVAL);
	ck_assert_int_eq(place_topo_siblings(t, 8, buf, 4), -ENODEV);
	ck_assert_int_eq(place_topo_llc_cpus(t, -3, buf, 4), -ENODEV);
	ck_assert_int_eq(place_topo_siblings(t, 0, NULL, 1), -EINVAL);
	ck_assert_int_eq(place_topo_llc_cpus(t, 0, NULL, 1), -EINVAL);
	place_topo_free(t);
}
END_TEST

/* A short buffer gets the first max CPUs; the total is returned. */
START_TEST(t_acc_truncate)
{
	place_topo *t = load("synthetic:pack:1 l3:1 core:4 pu:2(indexes=core)");
	int buf[4] = { -7, -7, -7, -7 };

	ck_assert_int_eq(place_topo_siblings(t, 5, NULL, 0), 2);
	ck_assert_int_eq(place_topo_siblings(t, 5, buf, 1), 2);
	ck_assert_int_eq(buf[0], 1);
	ck_assert_int_eq(buf[1], -7);
	ck_assert_int_eq(place_topo_llc_cpus(t, 5, buf, 3), 8);
	ck_assert_int_eq(buf[0], 0);
	ck_assert_int_eq(buf[1], 1);
	ck_assert_int_eq(buf[2], 2);
	ck_assert_int_eq(buf[3], -7);
	place_topo_free(t);
}
END_TEST

/* place__topo_dup: an equal, independent copy. */
START_TEST(t_dup)
{
	place_topo *t = load_fixture("fixtures/sparse.xml");
	struct place_topo *d = place__topo_dup(t);
	size_t n = (size_t)t->nr_cpus * sizeof(int);

	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->source, t->source);
	ck_assert_ptr_ne(d->source, t->source);
	ck_assert_int_eq(memcmp(d->os_of, t->os_of, n), 0);
	ck_assert_int_eq(memcmp(d->dense_of, t->dense_of, (size_t)t->cpu_limit * sizeof(int)), 0);
	ck_assert_int_eq(memcmp(d->cpu, t->cpu, (size_t)t->nr_cpus * sizeof(*t->cpu)), 0);
	ck_assert_int_eq(memcmp(d->llc_cpus, t->llc_cpus, n), 0);
	ck_assert_int_eq(memcmp(d->core_cpus, t->core_cpus, n), 0);
	place_topo_free(t);
	place_check_topo(d);
	place_topo_free(d);
}
END_TEST

static Suite *topo_suite(void)
{
	Suite *s = suite_create("topo");
	TCase *syn = tcase_create("synthetic"), *xml = tcase_create("xml");
	TCase *live = tcase_create("live"), *err = tcase_create("errors");
	TCase *acc = tcase_create("accessors");

	tcase_add_test(syn, t_smt_spread);
	tcase_add_test(syn, t_smt_consecutive);
	tcase_add_test(syn, t_logical_order);
	tcase_add_test(syn, t_nocache_package);
	tcase_add_test(syn, t_nocache_node);
	tcase_add_test(syn, t_big_llc);
	tcase_add_test(syn, t_two_nodes);
	tcase_add_test(syn, t_cache_below_core);
	tcase_add_test(xml, t_offline_disallowed);
	tcase_add_test(xml, t_sparse);
	tcase_add_test(xml, t_hybrid);
	tcase_add_test(xml, t_nocache_xml);
	tcase_add_test(live, t_live);
	tcase_add_test(live, t_live_affinity);
	tcase_add_test(live, t_env_override);
	tcase_add_test(err, t_err_args);
	tcase_add_test(err, t_err_synthetic);
	tcase_add_test(err, t_err_missing);
	tcase_add_test(err, t_err_directory);
	tcase_add_test(err, t_err_unreadable);
	tcase_add_test(err, t_err_xml);
	tcase_add_test(err, t_err_os_index_limit);
	tcase_add_test(acc, t_acc_null);
	tcase_add_test(acc, t_acc_range);
	tcase_add_test(acc, t_node_distance);
	tcase_add_test(acc, t_acc_truncate);
	tcase_add_test(acc, t_dup);
	suite_add_tcase(s, syn);
	suite_add_tcase(s, xml);
	suite_add_tcase(s, live);
	suite_add_tcase(s, err);
	suite_add_tcase(s, acc);
	return s;
}

int main(void)
{
	return place_test_run(topo_suite());
}
