/*
 * The bad-input catalogue (doc/errors.md): the rows that no other suite
 * tests. Most rows are tested where their function is (test_engine_bad,
 * test_topo, test_steal); the catalogue names the test of each row. Here:
 * extreme integers (INT_MIN, INT_MAX, ~0u) for every CPU, index and flag
 * argument, -ESRCH for each way a task's CPU set can exclude every worker,
 * PLACE_WORKER_BIND onto a CPU the process may not use, negative buffer
 * sizes, place_strerror on any int. Public API only. After every refused
 * call the task record is unchanged and the instance still works: a wakeup,
 * a run and a park go through, and the statistics add up.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>

#include "place.h"
#include "testlib.h"

/* 2 L3s of 2 cores of 2 threads: CPUs 0-7, siblings 2k and 2k+1. */
#define TOPO "synthetic:pack:1 l3:2 core:2 pu:2"
#define NCPU 8

struct fx {
	place_topo *topo;
	place *p;
	place_task t;
	uint64_t wakeups; /* successful wakeups so far, for the statistics check */
};

/* An instance with CPUs 0-6 registered (7 has no worker), CPU 2 running a
 * task, and one task record that last ran on CPU 5. */
static void open_fx(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(place_topo_load(&f->topo, TOPO), 0);
	ck_assert_int_eq(place_create(&f->p, f->topo, NULL), 0);
	for (int cpu = 0; cpu < NCPU - 1; cpu++)
		ck_assert_int_eq(place_worker_register(f->p, cpu, 0), 0);
	place_task_init(&f->t, 0, 0);
	ck_assert_int_eq(place_run_begin(f->p, 5, &f->t), 0);
	ck_assert_int_eq(place_run_end(f->p, 5, &f->t, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_idle_enter(f->p, 5), 0);
}

/* Still usable: a claiming wakeup of a fresh task, its run and the park,
 * and the statistics count exactly the wakeups that succeeded. */
static void expect_usable(struct fx *f)
{
	place_task t;
	place_stats st;
	int cpu;

	place_task_init(&t, 0, 0);
	cpu = place_wakeup(f->p, &t, PLACE_CPU_NONE, 0);
	ck_assert_msg(cpu >= 0 && cpu < NCPU - 1, "wakeup after bad input: %d", cpu);
	ck_assert_int_eq(place_task_claimed(f->p, &t), cpu);
	ck_assert_int_eq(place_run_begin(f->p, cpu, &t), 0);
	ck_assert_int_eq(place_run_end(f->p, cpu, &t, PLACE_RUN_EXIT), 0);
	ck_assert_int_eq(place_idle_enter(f->p, cpu), 0);
	f->wakeups++;
	ck_assert_int_eq(place_stats_read(f->p, -1, &st), 0);
	ck_assert_uint_eq(st.wakeups, f->wakeups);
	ck_assert_int_eq(place_topo_nr_cpus(f->topo), NCPU);
}

static void close_fx(struct fx *f)
{
	expect_usable(f);
	place_destroy(f->p);
	place_topo_free(f->topo);
}

/* call must return err and leave the task record t as it was. */
#define EXPECT(f, call, err)                                                                       \
	do {                                                                                       \
		place_task before_ = (f)->t;                                                       \
		int got_ = (call);                                                                 \
		ck_assert_msg(got_ == (err), "%s: got %d, expected %d", #call, got_, (err));       \
		ck_assert_msg(memcmp(&before_, &(f)->t, sizeof(before_)) == 0,                     \
			      "%s changed the task record", #call);                                \
	} while (0)

static const int bad_cpus[] = { INT_MIN, -2, NCPU, 1000, INT_MAX };
#define NBAD ((int)(sizeof(bad_cpus) / sizeof(bad_cpus[0])))

/* Every CPU argument outside the topology: -ENODEV, whatever the call. */
START_TEST(t_cpu_out_of_range)
{
	struct fx f;
	int out[NCPU];

	open_fx(&f);
	for (int k = 0; k < NBAD; k++) {
		int c = bad_cpus[k];

		EXPECT(&f, place_worker_register(f.p, c, 0), -ENODEV);
		EXPECT(&f, place_worker_unregister(f.p, c), -ENODEV);
		if (c != PLACE_CPU_NONE)
			EXPECT(&f, place_wakeup(f.p, &f.t, c, 0), -ENODEV);
		EXPECT(&f, place_idle_enter(f.p, c), -ENODEV);
		EXPECT(&f, place_run_begin(f.p, c, &f.t), -ENODEV);
		EXPECT(&f, place_run_end(f.p, c, &f.t, PLACE_RUN_SLEEP), -ENODEV);
		EXPECT(&f, place_claim_release(f.p, c), -ENODEV);
		EXPECT(&f, place_steal_order(f.p, c, out, NCPU), -ENODEV);
		ck_assert_int_eq(place_topo_siblings(f.topo, c, out, NCPU), -ENODEV);
		ck_assert_int_eq(place_topo_llc_cpus(f.topo, c, out, NCPU), -ENODEV);
		expect_usable(&f);
	}
	close_fx(&f);
}
END_TEST

/* Indexes and counts at the extremes. */
START_TEST(t_index_extremes)
{
	struct fx f;
	place_stats st;
	place_cpu_info info;
	int out[NCPU] = { -7, -7 };

	open_fx(&f);
	ck_assert_int_eq(place_topo_cpu(f.topo, INT_MIN), -ERANGE);
	ck_assert_int_eq(place_topo_cpu(f.topo, INT_MAX), -ERANGE);
	ck_assert_int_eq(place_topo_cpu_info(f.topo, INT_MIN, &info), -ENODEV);
	EXPECT(&f, place_stats_read(f.p, INT_MIN, &st), -ERANGE);
	EXPECT(&f, place_stats_read(f.p, INT_MAX, &st), -ERANGE);
	EXPECT(&f, place_stats_read(f.p, 2, &st), -ERANGE); /* 2 LLCs: 0 and 1 */
	EXPECT(&f, place_steal_order(f.p, 0, out, INT_MIN), -EINVAL);
	/* the topology's slices take a negative max as 0: count only */
	ck_assert_int_eq(place_topo_siblings(f.topo, 0, out, -1), 2);
	ck_assert_int_eq(place_topo_llc_cpus(f.topo, 0, out, INT_MIN), 4);
	ck_assert_int_eq(place_topo_llc_cpus(f.topo, 0, NULL, -1), 4);
	ck_assert_int_eq(out[0], -7);
	close_fx(&f);
}
END_TEST

/* Every flag and mode word with every unknown bit set. */
START_TEST(t_flags_all_bits)
{
	struct fx f;
	place_config cfg;
	place *q = NULL;

	open_fx(&f);
	EXPECT(&f, place_wakeup(f.p, &f.t, PLACE_CPU_NONE, ~0u), -EINVAL);
	EXPECT(&f, place_wakeup(f.p, &f.t, 0, 1u << 31), -EINVAL);
	EXPECT(&f, place_worker_register(f.p, 7, ~0u), -EINVAL);
	EXPECT(&f, place_worker_register(f.p, 7, ~PLACE_WORKER_BIND), -EINVAL);
	ck_assert_int_eq(place_run_begin(f.p, 2, &f.t), 0);
	EXPECT(&f, place_run_end(f.p, 2, &f.t, ~0u), -EINVAL);
	EXPECT(&f, place_run_end(f.p, 2, &f.t, PLACE_RUN_PREEMPT + 1), -EINVAL);
	ck_assert_int_eq(place_run_end(f.p, 2, &f.t, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_idle_enter(f.p, 2), 0);
	place_config_init(&cfg);
	cfg.features = ~0u;
	ck_assert_int_eq(place_create(&q, f.topo, &cfg), -EINVAL);
	place_config_init(&cfg);
	cfg.policy = INT_MAX;
	ck_assert_int_eq(place_create(&q, f.topo, &cfg), -EINVAL);
	place_config_init(&cfg);
	cfg.policy = INT_MIN;
	ck_assert_int_eq(place_create(&q, f.topo, &cfg), -EINVAL);
	place_config_init(&cfg);
	cfg.size = 0;
	ck_assert_int_eq(place_create(&q, f.topo, &cfg), -EINVAL);
	cfg.size = SIZE_MAX;
	ck_assert_int_eq(place_create(&q, f.topo, &cfg), -EINVAL);
	place_config_init(&cfg);
	cfg.reserved[0] = 1;
	ck_assert_int_eq(place_create(&q, f.topo, &cfg), -EINVAL);
	ck_assert_ptr_null(q);
	close_fx(&f);
}
END_TEST

/* -ESRCH, each way a CPU set can leave a task no worker: empty, only CPUs
 * without a worker, only CPUs outside the topology; with and without a
 * claim, a waker or a previous CPU. The record keeps its previous CPU. */
START_TEST(t_esrch)
{
	struct fx f;
	cpu_set_t *set = CPU_ALLOC(256);
	size_t size = CPU_ALLOC_SIZE(256);

	open_fx(&f);
	CPU_ZERO_S(size, set);
	ck_assert_int_eq(place_task_set_cpus(&f.t, set, size), 0);
	EXPECT(&f, place_wakeup(f.p, &f.t, PLACE_CPU_NONE, 0), -ESRCH);
	EXPECT(&f, place_wakeup(f.p, &f.t, 3, PLACE_WAKE_SYNC), -ESRCH);
	EXPECT(&f, place_wakeup(f.p, &f.t, 3, PLACE_WAKE_NOCLAIM), -ESRCH);
	EXPECT(&f, place_wakeup(f.p, &f.t, PLACE_CPU_NONE, PLACE_WAKE_NEW), -ESRCH);
	CPU_SET_S(7, size, set); /* the CPU without a worker */
	EXPECT(&f, place_wakeup(f.p, &f.t, 0, 0), -ESRCH);
	CPU_ZERO_S(size, set);
	CPU_SET_S(8, size, set); /* past the topology */
	CPU_SET_S(255, size, set);
	EXPECT(&f, place_wakeup(f.p, &f.t, 0, 0), -ESRCH);
	/* a set of one byte covers CPUs 0-7 only: 8 and above are outside */
	ck_assert_int_eq(place_task_set_cpus(&f.t, set, 1), 0);
	EXPECT(&f, place_wakeup(f.p, &f.t, 0, 0), -ESRCH);
	/* a worker leaving makes the task's only CPU unusable */
	CPU_ZERO_S(size, set);
	CPU_SET_S(6, size, set);
	ck_assert_int_eq(place_task_set_cpus(&f.t, set, size), 0);
	ck_assert_int_eq(place_worker_unregister(f.p, 6), 0);
	EXPECT(&f, place_wakeup(f.p, &f.t, 5, 0), -ESRCH);
	ck_assert_int_eq(place_worker_register(f.p, 6, 0), 0);
	ck_assert_int_eq(place_wakeup(f.p, &f.t, 5, 0), 6);
	f.wakeups++;
	ck_assert_int_eq(place_task_claimed(f.p, &f.t), 6);
	ck_assert_int_eq(place_run_begin(f.p, 6, &f.t), 0);
	ck_assert_int_eq(place_run_end(f.p, 6, &f.t, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_idle_enter(f.p, 6), 0);
	ck_assert_int_eq(place_task_set_cpus(&f.t, NULL, 0), 0);
	CPU_FREE(set);
	close_fx(&f);
}
END_TEST

/* PLACE_WORKER_BIND onto a CPU of the (synthetic) topology that this
 * process may not run on: the negative errno of sched_setaffinity, and
 * nothing changed (the CPU still has no worker, the caller's mask stands). */
START_TEST(t_bind_refused)
{
	struct fx f;
	cpu_set_t mine, after;
	int err, victim = -1;

	CPU_ZERO(&mine);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	open_fx(&f);
	ck_assert_int_eq(place_worker_unregister(f.p, 6), 0);
	for (int cpu = NCPU - 1; cpu >= 6 && victim < 0; cpu--)
		if (!CPU_ISSET(cpu, &mine))
			victim = cpu;
	if (victim < 0) {
		printf("t_bind_refused: SKIP, this process may run on CPUs 6 and 7\n");
		ck_assert_int_eq(place_worker_register(f.p, 6, 0), 0);
		close_fx(&f);
		return;
	}
	err = place_worker_register(f.p, victim, PLACE_WORKER_BIND);
	if (err == 0) { /* the CPU exists and the cgroup allows it: only taskset had narrowed us */
		printf("t_bind_refused: SKIP, CPU %d accepted the thread\n", victim);
		ck_assert_int_eq(sched_setaffinity(0, sizeof(mine), &mine), 0);
		ck_assert_int_eq(place_worker_unregister(f.p, victim), 0);
		ck_assert_int_eq(place_worker_register(f.p, 6, 0), 0);
		close_fx(&f);
		return;
	}
	ck_assert_msg(err == -EINVAL, "BIND onto CPU %d: %d (%s)", victim, err, place_strerror(err));
	ck_assert_msg(strstr(place_last_error(), "register without PLACE_WORKER_BIND"),
		      "detail: %s", place_last_error());
	ck_assert_int_eq(place_worker_unregister(f.p, victim), -ENOENT); /* not registered */
	ck_assert_int_eq(sched_getaffinity(0, sizeof(after), &after), 0);
	ck_assert(CPU_EQUAL(&mine, &after));
	ck_assert_int_eq(place_worker_register(f.p, 6, 0), 0);
	close_fx(&f);
}
END_TEST

/* A record that was never initialised (all ones, all zeros) is refused by
 * every call taking a task, before anything else is looked at. */
START_TEST(t_garbage_records)
{
	static const unsigned char fill[] = { 0x00, 0xff, 0x5a };
	struct fx f;
	place_task junk;

	open_fx(&f);
	for (int k = 0; k < 3; k++) {
		memset(&junk, fill[k], sizeof(junk));
		junk.cpus = NULL;
		junk.cpus_size = 0;
		ck_assert_int_eq(place_wakeup(f.p, &junk, PLACE_CPU_NONE, 0), -EINVAL);
		ck_assert_int_eq(place_wakeup(f.p, &junk, 0, PLACE_WAKE_NOCLAIM), -EINVAL);
		ck_assert_int_eq(place_run_begin(f.p, 0, &junk), -EINVAL);
		ck_assert_int_eq(place_run_end(f.p, 0, &junk, PLACE_RUN_SLEEP), -EINVAL);
		ck_assert_int_eq(place_task_claimed(f.p, &junk), -EINVAL);
		ck_assert_int_eq(place_task_forget(f.p, &junk), -EINVAL);
		ck_assert_int_eq(place_task_set_cpus(&junk, NULL, 0), -EINVAL);
		expect_usable(&f);
	}
	close_fx(&f);
}
END_TEST

/* Calls in the wrong state, the rows test_engine_bad does not cover. */
START_TEST(t_wrong_state)
{
	struct fx f;
	place_task other;

	open_fx(&f);
	place_task_init(&other, 0, 0);
	/* run_end of a task on a CPU that runs another one, and on an idle one */
	ck_assert_int_eq(place_run_begin(f.p, 2, &other), 0);
	EXPECT(&f, place_run_end(f.p, 2, &f.t, PLACE_RUN_EXIT), -EINVAL);
	EXPECT(&f, place_run_end(f.p, 3, &f.t, PLACE_RUN_PREEMPT), -EINVAL);
	/* a second run_begin on a busy CPU, and idle_enter while it runs */
	EXPECT(&f, place_run_begin(f.p, 2, &f.t), -EBUSY);
	EXPECT(&f, place_idle_enter(f.p, 2), -EBUSY);
	ck_assert_int_eq(place_run_end(f.p, 2, &other, PLACE_RUN_SLEEP), 0);
	ck_assert_int_eq(place_idle_enter(f.p, 2), 0);
	/* a claim released twice; a release on a CPU whose worker left with
	 * no claim; a claim outlives its worker and is still released */
	ck_assert_int_eq(place_wakeup(f.p, &other, PLACE_CPU_NONE, 0) >= 0, 1);
	f.wakeups++;
	{
		int c = place_task_claimed(f.p, &other);

		ck_assert_int_ge(c, 0);
		ck_assert_int_eq(place_worker_unregister(f.p, c), 0);
		ck_assert_int_eq(place_claim_release(f.p, c), 0);
		EXPECT(&f, place_claim_release(f.p, c), -ENOENT);
		ck_assert_int_eq(place_worker_register(f.p, c, 0), 0);
		EXPECT(&f, place_claim_release(f.p, c), -ENOENT);
	}
	EXPECT(&f, place_claim_release(f.p, 7), -ENOENT);
	/* register twice, unregister twice */
	EXPECT(&f, place_worker_register(f.p, 0, 0), -EEXIST);
	ck_assert_int_eq(place_worker_unregister(f.p, 0), 0);
	EXPECT(&f, place_worker_unregister(f.p, 0), -ENOENT);
	EXPECT(&f, place_idle_enter(f.p, 0), -ENOENT);
	EXPECT(&f, place_run_begin(f.p, 0, &f.t), -ENOENT);
	ck_assert_int_gt(place_steal_order(f.p, 0, NULL, 0), 0); /* an order without a worker too */
	ck_assert_int_eq(place_worker_register(f.p, 0, 0), 0);
	/* a never-woken task claims nothing */
	EXPECT(&f, place_task_claimed(f.p, &f.t), PLACE_CPU_NONE);
	close_fx(&f);
}
END_TEST

/* NULL for each pointer argument not covered elsewhere. */
START_TEST(t_null_pointers)
{
	struct fx f;
	int out[4];

	open_fx(&f);
	EXPECT(&f, place_steal_order(NULL, 0, out, 4), -EINVAL);
	EXPECT(&f, place_steal_order(f.p, 0, NULL, 1), -EINVAL);
	EXPECT(&f, place_run_end(f.p, 2, NULL, PLACE_RUN_SLEEP), -EINVAL);
	EXPECT(&f, place_task_forget(NULL, &f.t), -EINVAL);
	EXPECT(&f, place_task_forget(f.p, NULL), -EINVAL);
	EXPECT(&f, place_task_set_cpus(&f.t, (const cpu_set_t *)out, 0), -EINVAL);
	ck_assert_int_eq(place_task_set_cpus(&f.t, NULL, 0), 0); /* NULL set: any CPU */
	ck_assert_int_eq(place_task_set_cpus(&f.t, NULL, 64), 0);
	ck_assert_uint_eq(f.t.cpus_size, 0);
	ck_assert_ptr_null(place_get_topo(NULL));
	ck_assert_ptr_null(place_topo_source(NULL));
	place_task_init(NULL, 1, 1);
	place_config_init(NULL);
	place_topo_free(NULL);
	place_destroy(NULL);
	close_fx(&f);
}
END_TEST

/* place_set_topology and place_topo_current: NULLs, topologies that are
 * not restrictions, and registering on a CPU the current topology lacks
 * (doc/errors.md rows 39a, 85-88). Nothing changes on a refusal. */
START_TEST(t_reconf)
{
	static const char *const bad[] = {
		"synthetic:pack:2 l3:2 core:2 pu:2",  /* CPUs 8-15 are not the instance's */
		"synthetic:pack:1 l3:2 core:4 pu:1",  /* CPU 1 alone in a core: SMT differs */
		"synthetic:pack:1 l3:1 core:4 pu:2",  /* both LLCs merged */
	};
	struct fx f;
	place_topo *t, *cur = (place_topo *)&f;

	open_fx(&f);
	EXPECT(&f, place_set_topology(NULL, f.topo), -EINVAL);
	EXPECT(&f, place_set_topology(f.p, NULL), -EINVAL);
	EXPECT(&f, place_topo_current(NULL, &cur), -EINVAL);
	ck_assert_ptr_null(cur);
	EXPECT(&f, place_topo_current(f.p, NULL), -EINVAL);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_int_eq(place_topo_load(&t, bad[k]), 0);
		EXPECT(&f, place_set_topology(f.p, t), -EXDEV);
		ck_assert_ptr_nonnull(strstr(place_last_error(), "cpu "));
		place_topo_free(t);
		expect_usable(&f);
	}
	ck_assert_int_eq(place_topo_current(f.p, &cur), 0);
	ck_assert_int_eq(place_topo_nr_cpus(cur), NCPU); /* unchanged */
	place_topo_free(cur);
	/* the first LLC only: CPU 7 (no worker) may not register */
	ck_assert_int_eq(place_topo_load(&t, "synthetic:pack:1 l3:1 core:2 pu:2"), 0);
	ck_assert_int_eq(place_set_topology(f.p, t), 0);
	place_topo_free(t);
	EXPECT(&f, place_worker_register(f.p, 7, 0), -ENODEV);
	ck_assert_int_eq(place_set_topology(f.p, f.topo), 0); /* the same CPUs: a restriction */
	close_fx(&f);
}
END_TEST

/* place_strerror takes any int, including INT_MIN (whose negation
 * overflows) and codes libplace never returns. */
START_TEST(t_strerror_any_int)
{
	static const int codes[] = { INT_MIN, INT_MIN + 1, -100000, -EINVAL, -1, 0, 1, EINVAL, 4095, INT_MAX };

	for (size_t k = 0; k < sizeof(codes) / sizeof(codes[0]); k++) {
		const char *s = place_strerror(codes[k]);

		ck_assert_ptr_nonnull(s);
		ck_assert_msg(s[0] != '\0', "place_strerror(%d) is empty", codes[k]);
	}
	ck_assert_str_eq(place_strerror(-EINVAL), place_strerror(EINVAL));
	ck_assert_str_eq(place_strerror(0), "success");
	ck_assert_uint_eq(place_version(), PLACE_VERSION_HEX);
	ck_assert_ptr_nonnull(place_version_string());
}
END_TEST

/* Every code place.h documents has libplace's meaning, not libc's text
 * ("Invalid cross-device link" says nothing about a foreign task record). */
START_TEST(t_strerror_own_text)
{
	static const int codes[] = { -EINVAL, -ENOENT, -EACCES, -ENODEV, -ENOMEM, -EEXIST, -ESRCH,
				     -EBUSY, -EALREADY, -ERANGE, -ENOSPC, -EXDEV, -EAGAIN, -EPERM };

	for (size_t k = 0; k < sizeof(codes) / sizeof(codes[0]); k++)
		ck_assert_msg(strcmp(place_strerror(codes[k]), strerror(-codes[k])) != 0,
			      "place_strerror(%d) is libc's \"%s\"", codes[k], strerror(-codes[k]));
	ck_assert_str_eq(place_strerror(-ESRCH), "no worker for this task: none has registered yet, "
			 "or none serves a CPU the task may use");
	ck_assert_str_eq(place_strerror(-EXDEV), "the task record is held by another instance, or "
			 "the topology is not a restriction of the instance's");
	ck_assert_str_eq(place_strerror(-EAGAIN), "not now: nothing idle was found, or (core "
			 "scheduling) the core does not admit the switch");
	ck_assert_str_eq(place_strerror(-EPERM), "the task's cpu_set_t does not allow this CPU");
}
END_TEST

static Suite *bad_input_suite(void)
{
	Suite *s = suite_create("bad_input");
	TCase *tc = tcase_create("catalogue");

	tcase_add_test(tc, t_cpu_out_of_range);
	tcase_add_test(tc, t_index_extremes);
	tcase_add_test(tc, t_flags_all_bits);
	tcase_add_test(tc, t_esrch);
	tcase_add_test(tc, t_bind_refused);
	tcase_add_test(tc, t_garbage_records);
	tcase_add_test(tc, t_wrong_state);
	tcase_add_test(tc, t_null_pointers);
	tcase_add_test(tc, t_reconf);
	tcase_add_test(tc, t_strerror_any_int);
	tcase_add_test(tc, t_strerror_own_text);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(bad_input_suite());
}
