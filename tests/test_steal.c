/*
 * Work-stealing order (src/steal.c), through the public API only.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE /* CPU_SET_S */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "place.h"
#include "testlib.h"

/* 2 packages (one node each) x 2 L3 x 2 cores x 2 threads, CPUs numbered in
 * order: core k is {2k, 2k+1}, LLC l is 4l..4l+3, package 1 is 8..15. */
#define TOPO_2P "synthetic:pack:2 [numa] l3:2 core:2 pu:2"
/* 2 packages x 2 nodes (one 1-core L3 each) x 2 threads: package ring != node ring. */
#define TOPO_NPS2 "synthetic:pack:2 group:2 [numa] l3:1 core:1 pu:2"
#define ZEN3 "synthetic:pack:2 [numa] l3:8 core:8 pu:2(indexes=core)"

struct fixture {
	place_topo *topo;
	place *p;
};

static void open_all(struct fixture *f, const char *source)
{
	ck_assert_int_eq(place_topo_load(&f->topo, source), 0);
	ck_assert_int_eq(place_create(&f->p, f->topo, NULL), 0);
	for (int i = 0; i < place_topo_nr_cpus(f->topo); i++)
		ck_assert_int_eq(place_worker_register(f->p, place_topo_cpu(f->topo, i), 0), 0);
}

static void close_all(struct fixture *f)
{
	place_destroy(f->p);
	place_topo_free(f->topo);
}

static void assert_order(place *p, int cpu, const int *want, int n)
{
	int got[64];
	int nr = place_steal_order(p, cpu, got, 64);

	ck_assert_int_eq(nr, n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(got[i] == want[i], "cpu %d: victim %d is %d, want %d", cpu, i, got[i],
			      want[i]);
}

START_TEST(rings_nearest_first)
{
	struct fixture f;
	static const int from0[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	/* rotated: the LLC ring of CPU 2 starts after it and wraps to 0, 1 */
	static const int from2[] = { 3, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	static const int from13[] = { 12, 14, 15, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7 };

	open_all(&f, TOPO_2P);
	assert_order(f.p, 0, from0, 15);
	assert_order(f.p, 2, from2, 15);
	assert_order(f.p, 13, from13, 15);
	close_all(&f);
}
END_TEST

START_TEST(package_ring_between_node_and_rest)
{
	struct fixture f;
	static const int from0[] = { 1, 2, 3, 4, 5, 6, 7 };
	static const int from6[] = { 7, 4, 5, 0, 1, 2, 3 };

	open_all(&f, TOPO_NPS2);
	assert_order(f.p, 0, from0, 7);
	assert_order(f.p, 6, from6, 7);
	close_all(&f);
}
END_TEST

/* Beyond the package, the nearer nodes first, by hwloc's latencies: the
 * fixture's node 2 is nearest node 0 (20), nodes 1 and 3 are 30 away (one
 * ring, in order after the thief); node 3 is nearest node 1. */
START_TEST(other_nodes_by_distance)
{
	struct fixture f;
	char source[4200];
	static const int from0[] = { 1, 4, 5, 2, 3, 6, 7 };
	static const int from3[] = { 2, 6, 7, 4, 5, 0, 1 };

	open_all(&f, place_test_fixture(source, sizeof(source), "fixtures/numa-distances.xml"));
	assert_order(f.p, 0, from0, 7);
	assert_order(f.p, 3, from3, 7);
	close_all(&f);
}
END_TEST

START_TEST(only_registered_victims)
{
	struct fixture f;
	static const int from0[] = { 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 };

	open_all(&f, TOPO_2P);
	ck_assert_int_eq(place_worker_unregister(f.p, 2), 0);
	ck_assert_int_eq(place_worker_unregister(f.p, 15), 0);
	assert_order(f.p, 0, from0, 13);
	/* a CPU without a worker gets its order too (a helper thread, a
	 * runtime computing orders before registering): 14 victims */
	ck_assert_int_eq(place_steal_order(f.p, 2, NULL, 0), 14);
	ck_assert_int_eq(place_steal_order(f.p, 15, NULL, 0), 14);
	close_all(&f);
}
END_TEST

START_TEST(truncates_and_counts)
{
	struct fixture f;
	int out[4] = { -7, -7, -7, -7 };

	open_all(&f, TOPO_2P);
	ck_assert_int_eq(place_steal_order(f.p, 0, out, 3), 15);
	ck_assert_int_eq(out[0], 1);
	ck_assert_int_eq(out[2], 3);
	ck_assert_int_eq(out[3], -7); /* nothing written past max */
	ck_assert_int_eq(place_steal_order(f.p, 0, NULL, 0), 15);
	close_all(&f);
}
END_TEST

/* On the Zen3 model every other CPU appears exactly once, and the 16 thieves
 * of one L3 all start their LLC ring at a different victim. */
START_TEST(zen3_permutation_and_spread)
{
	struct fixture f;
	int out[256], first_llc_victim[256];
	place_cpu_info self, v;

	open_all(&f, ZEN3);
	for (int cpu = 0; cpu < 256; cpu++) {
		int seen[256] = { 0 };

		ck_assert_int_eq(place_steal_order(f.p, cpu, out, 256), 255);
		for (int i = 0; i < 255; i++) {
			ck_assert_int_ne(out[i], cpu);
			ck_assert_int_eq(seen[out[i]]++, 0);
		}
		/* out[0] is the SMT sibling; out[1] the first LLC victim */
		ck_assert_int_eq(out[0], cpu < 128 ? cpu + 128 : cpu - 128);
		first_llc_victim[cpu] = out[1];
		ck_assert_int_eq(place_topo_cpu_info(f.topo, cpu, &self), 0);
		ck_assert_int_eq(place_topo_cpu_info(f.topo, out[1], &v), 0);
		ck_assert_int_eq(self.llc, v.llc);
	}
	for (int a = 0; a < 8; a++) /* L3 0: cores 0-7, CPUs 0-7 and 128-135 */
		for (int b = a + 1; b < 8; b++)
			ck_assert_int_ne(first_llc_victim[a], first_llc_victim[b]);
	close_all(&f);
}
END_TEST

START_TEST(bad_arguments)
{
	struct fixture f;
	int out[4];

	open_all(&f, TOPO_2P);
	ck_assert_int_eq(place_steal_order(NULL, 0, out, 4), -EINVAL);
	ck_assert_int_eq(place_steal_order(f.p, 0, out, -1), -EINVAL);
	ck_assert_int_eq(place_steal_order(f.p, 0, NULL, 4), -EINVAL);
	ck_assert_int_eq(place_steal_order(f.p, 16, out, 4), -ENODEV);
	ck_assert_int_eq(place_steal_order(f.p, -1, out, 4), -ENODEV);
	ck_assert_int_eq(place_steal_order(f.p, 0, out, 4), 15); /* still usable */
	close_all(&f);
}
END_TEST

/* place_steal_check: t's cpu_set_t decides where a thief may take it;
 * bad arguments are named; a CPU without a worker steals nothing. */
START_TEST(steal_check_cpus_and_arguments)
{
	struct fixture f;
	size_t size = CPU_ALLOC_SIZE(16);
	cpu_set_t *set = CPU_ALLOC(16);
	place_task t, junk;

	ck_assert_ptr_nonnull(set);
	open_all(&f, TOPO_2P);
	place_task_init(&t, 0, 0);
	memset(&junk, 0xa5, sizeof(junk));
	for (int cpu = 0; cpu < 16; cpu++)
		ck_assert_int_eq(place_steal_check(f.p, cpu, &t), 0); /* no cpu_set_t: anywhere */
	CPU_ZERO_S(size, set);
	CPU_SET_S(4, size, set);
	CPU_SET_S(9, size, set);
	ck_assert_int_eq(place_task_set_cpus(&t, set, size), 0);
	for (int cpu = 0; cpu < 16; cpu++)
		ck_assert_int_eq(place_steal_check(f.p, cpu, &t), cpu == 4 || cpu == 9 ? 0 : -EPERM);
	ck_assert_int_eq(place_steal_check(NULL, 4, &t), -EINVAL);
	ck_assert_int_eq(place_steal_check(f.p, 4, NULL), -EINVAL);
	ck_assert_int_eq(place_steal_check(f.p, 4, &junk), -EINVAL);
	ck_assert_int_eq(place_steal_check(f.p, 16, &t), -ENODEV);
	ck_assert_int_eq(place_steal_check(f.p, -1, &t), -ENODEV);
	ck_assert_int_eq(place_worker_unregister(f.p, 9), 0);
	ck_assert_int_eq(place_steal_check(f.p, 9, &t), -ENOENT);
	ck_assert_int_eq(place_steal_check(f.p, 4, &t), 0); /* still usable */
	close_all(&f);
	CPU_FREE(set);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("steal");
	TCase *tc = tcase_create("order");

	tcase_add_test(tc, rings_nearest_first);
	tcase_add_test(tc, package_ring_between_node_and_rest);
	tcase_add_test(tc, other_nodes_by_distance);
	tcase_add_test(tc, only_registered_victims);
	tcase_add_test(tc, truncates_and_counts);
	tcase_add_test(tc, zen3_permutation_and_spread);
	tcase_add_test(tc, bad_arguments);
	tcase_add_test(tc, steal_check_cpus_and_arguments);
	suite_add_tcase(s, tc);
	return place_test_run(s);
}
