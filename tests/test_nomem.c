/*
 * Out of memory: every allocation libplace makes itself fails in turn (the
 * link wraps malloc, calloc and aligned_alloc), in each public call that
 * allocates. Each such run must return -ENOMEM with a message that names the
 * call, leave nothing allocated (the suite runs under ASan's leak checker and
 * valgrind in build.sh), and leave an instance it was given as it was:
 * usable, its topology unchanged. Allocations made inside hwloc or libc
 * (strdup, CPU_ALLOC) are not counted: only libplace's own code is wrapped.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "test_engine.h"
#include "testlib.h"

/* Four nodes whose latencies give three rings from node 0 (fixture). */
#define FIXTURE_NUMA_DIST "fixtures/numa-distances.xml"
/* More LLCs than one summary word holds, on two nodes, with SMT. */
#define TOPO_MANY "synthetic:pack:2 [numa] l3:36 core:2 pu:2"

/* The allocation that fails (1 = the first after arming), 0 = none; how
 * many were made since arming. One thread: Check forks each case. */
static long fail_at, made;

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);

static bool fails_now(void)
{
	if (!fail_at || ++made != fail_at)
		return false;
	errno = ENOMEM;
	return true;
}

void *__wrap_malloc(size_t size)
{
	return fails_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fails_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	return fails_now() ? NULL : __real_aligned_alloc(align, size);
}

/* One call under test on arg; 0 or its error. On success it undoes what
 * it made (frees, destroys), so that every run starts from the same state. */
typedef int (*call_fn)(void *arg);

/* Run call with its k-th allocation failing for k = 1, 2, ... until a run
 * makes fewer than k (it succeeded with none failing): each failing run
 * returns -ENOMEM and place_last_error() names the call (name). check, if
 * given, runs after each failure (is arg still whole?). Returns how many
 * allocations a successful run makes. */
static long each_failure(const char *name, call_fn call, void *arg, void (*check)(void *arg))
{
	for (long k = 1;; k++) {
		int err;

		made = 0;
		fail_at = k;
		err = call(arg);
		fail_at = 0;
		if (made < k) {
			ck_assert_msg(err == 0, "%s: %d (%s) with no allocation failing", name, err, place_last_error());
			printf("%s: %ld allocation(s), each failed in turn\n", name, made);
			return made;
		}
		ck_assert_msg(err == -ENOMEM, "%s: allocation %ld of %ld failed, returned %d (%s)", name, k, made, err,
			      place_last_error());
		ck_assert_msg(strstr(place_last_error(), name), "%s: allocation %ld failed, message \"%s\"", name, k,
			      place_last_error());
		if (check)
			check(arg);
	}
}

static int load(void *source)
{
	place_topo *t = (place_topo *)&t; /* not NULL: a failure must clear it */
	int err = place_topo_load(&t, source);

	if (err)
		ck_assert_ptr_null(t);
	place_topo_free(t);
	return err;
}

/* The shapes the loop tests take in turn: more LLCs than a summary word
 * holds (TOPO_MANY), and the fixture's NUMA latencies (node 0 sees two
 * distances: three rings with its own). */
static const char *shape(int i, char *buf, size_t size)
{
	return i == 0 ? TOPO_MANY : place_test_fixture(buf, size, FIXTURE_NUMA_DIST);
}

START_TEST(t_topo_load)
{
	char buf[4200];
	const char *source = shape(_i, buf, sizeof(buf));

	ck_assert_int_gt(each_failure(source, load, (void *)source, NULL), 5);
}
END_TEST

static int create(void *topo)
{
	place *p = NULL;
	int err = place_create(&p, topo, NULL);

	if (err)
		ck_assert_ptr_null(p);
	place_destroy(p);
	return err;
}

/* place_create over each shape: the NUMA rings, two summary words, the
 * NUMA group tables. */
START_TEST(t_create)
{
	char buf[4200];
	place_topo *t;

	ck_assert_int_eq(place_topo_load(&t, shape(_i, buf, sizeof(buf))), 0);
	ck_assert_int_gt(each_failure("place_create", create, t, NULL), 10);
	place_topo_free(t);
}
END_TEST

/* An instance, and the restriction a reconfiguration swaps it to. */
struct swap {
	struct env e;
	place_topo *to;
};

static int set_topology(void *arg)
{
	struct swap *s = arg;
	int err = place_set_topology(s->e.p, s->to);

	if (!err) {
		fail_at = 0; /* the way back is not under test */
		ck_assert_int_eq(place_set_topology(s->e.p, s->e.topo), 0); /* the next run starts alike */
	}
	return err;
}

/* After a failed swap every CPU is still there: a wakeup from LLC 0, all
 * of whose CPUs are busy, widens to the other package (which the
 * restriction would have removed). */
static void still_whole(void *arg)
{
	struct swap *s = arg;
	place_topo *cur;
	int cpu;

	ck_assert_int_eq(place_topo_current(s->e.p, &cur), 0);
	ck_assert_int_eq(place_topo_nr_cpus(cur), s->e.nr_cpus);
	place_topo_free(cur);
	cpu = env_wake(&s->e, env_task_on(&s->e, 0, 0), PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu >= 4, "got %d: wanted a CPU of the other package", cpu);
	ck_assert_int_eq(place_claim_release(s->e.p, cpu), 0);
}

static int topo_current(void *p)
{
	place_topo *t = (place_topo *)&t;
	int err = place_topo_current(p, &t);

	if (err)
		ck_assert_ptr_null(t);
	place_topo_free(t);
	return err;
}

START_TEST(t_reconfigure)
{
	struct swap s;

	env_open(&s.e, "synthetic:pack:2 l3:1 core:2 pu:2", PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	ck_assert_int_eq(place_topo_load(&s.to, "synthetic:pack:1 l3:1 core:2 pu:2"), 0);
	for (int cpu = 0; cpu < 4; cpu++)
		env_run(&s.e, cpu, &s.e.task[32 + cpu]);
	ck_assert_int_gt(each_failure("place_set_topology", set_topology, &s, still_whole), 1);
	ck_assert_int_gt(each_failure("place_topo_current", topo_current, s.e.p, NULL), 1);
	place_topo_free(s.to);
	env_close(&s.e);
}
END_TEST

static int bind_worker(void *p)
{
	int err = place_worker_register(p, 0, PLACE_WORKER_BIND);

	if (!err) {
		fail_at = 0;
		ck_assert_int_eq(place_worker_unregister(p, 0), 0);
	}
	return err;
}

/* A failed register binds nothing and registers nothing. */
static cpu_set_t before;

static void not_bound(void *p)
{
	cpu_set_t now;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(now), &now), 0);
	ck_assert(CPU_EQUAL(&now, &before));
	ck_assert_int_eq(place_worker_unregister(p, 0), -ENOENT);
}

START_TEST(t_register)
{
	struct env e;

	env_open(&e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, false);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(before), &before), 0);
	ck_assert_int_ge(each_failure("place_worker_register", bind_worker, e.p, not_bound), 1);
	env_close(&e);
}
END_TEST

static Suite *nomem_suite(void)
{
	Suite *s = suite_create("nomem");
	TCase *tc = tcase_create("each allocation fails");

	tcase_add_loop_test(tc, t_topo_load, 0, 2);
	tcase_add_loop_test(tc, t_create, 0, 2);
	tcase_add_test(tc, t_reconfigure);
	tcase_add_test(tc, t_register);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(nomem_suite());
}
