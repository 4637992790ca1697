/*
 * Bad input to every public engine call (issue 3 "Bad input"): NULL
 * pointers, CPUs outside the topology or without a worker, uninitialised
 * task records, unknown flags, a config of the wrong size. Each returns its
 * documented negative errno, changes nothing (the whole instance is compared
 * byte for byte before and after), and leaves the instance usable.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdlib.h>

#include "test_engine.h"
#include "testlib.h"

/* Everything a call could change: per-CPU lines, masks, LLC blocks, stats. */
struct snapshot {
	struct place_cpu cpu[8];
	struct place_llc llc;
	uint64_t icpus, icores;
	struct place_stat_slot slot[8], ext;
};

static void take_snapshot(struct env *e, struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->cpu, e->p->cpu, sizeof(s->cpu));
	memcpy(&s->llc, &e->p->llc[0], sizeof(s->llc));
	s->icpus = e->p->llc[0].icpus[0];
	s->icores = e->p->llc[0].icores[0];
	memcpy(s->slot, e->p->slot, sizeof(s->slot));
	memcpy(&s->ext, &e->p->ext[0], sizeof(s->ext));
}

static void expect_unchanged(struct env *e, const struct snapshot *before, const char *what)
{
	struct snapshot now;

	take_snapshot(e, &now);
	ck_assert_msg(memcmp(before, &now, sizeof(now)) == 0, "%s changed the instance", what);
}

#define EXPECT_ERR(e, snap, call, err)                                                             \
	do {                                                                                       \
		int got_ = (call);                                                                 \
		ck_assert_msg(got_ == (err), "%s: got %d, expected %d", #call, got_, (err));       \
		expect_unchanged((e), (snap), #call);                                              \
	} while (0)

/* An instance with CPUs 0-6 registered, CPU 2 running task 0, CPU 4 claimed
 * by task 1: some state for bad calls to disturb. */
static void setup(struct env *e, struct snapshot *s)
{
	env_open(e, TOPO_4C8T, PLACE_POLICY_SIS_CORE, PLACE_FEAT_DEFAULT, true);
	ck_assert_int_eq(place_worker_unregister(e->p, 7), 0);
	env_run(e, 2, &e->task[0]);
	ck_assert_int_eq(env_wake(e, env_task_on(e, 1, 4), PLACE_CPU_NONE, 0), 4);
	take_snapshot(e, s);
}

/* Still usable: a wakeup and a full run cycle work. */
static void expect_usable(struct env *e)
{
	int cpu = env_wake(e, env_task_on(e, 5, 6), 2, 0);

	ck_assert_int_eq(cpu, 6);
	env_run(e, 6, &e->task[5]);
	env_park(e, 6, &e->task[5]);
	env_close(e);
}

static place_task garbage_task(void)
{
	place_task t;

	memset(&t, 0xa5, sizeof(t));
	t.cpus = NULL;
	t.cpus_size = 0;
	return t;
}

START_TEST(t_config_and_create)
{
	place_topo *topo;
	place_config cfg;
	place *p = (place *)&cfg; /* a sentinel: failures leave *out alone */

	place_config_init(NULL); /* accepted, does nothing */
	ck_assert_int_eq(place_topo_load(&topo, TOPO_4C8T), 0);
	ck_assert_int_eq(place_create(NULL, topo, NULL), -EINVAL);
	ck_assert_int_eq(place_create(&p, NULL, NULL), -EINVAL);
	place_config_init(&cfg);
	cfg.size = sizeof(cfg) - 8;
	ck_assert_int_eq(place_create(&p, topo, &cfg), -EINVAL);
	ck_assert_str_ne(place_last_error(), "");
	place_config_init(&cfg);
	cfg.policy = 3;
	ck_assert_int_eq(place_create(&p, topo, &cfg), -EINVAL);
	cfg.policy = -1;
	ck_assert_int_eq(place_create(&p, topo, &cfg), -EINVAL);
	place_config_init(&cfg);
	cfg.features = PLACE_FEAT_ALL + 1;
	ck_assert_int_eq(place_create(&p, topo, &cfg), -EINVAL);
	place_config_init(&cfg);
	cfg.runtime = PLACE_RUNTIME_ALL + 1; /* an unknown runtime bit */
	ck_assert_int_eq(place_create(&p, topo, &cfg), -EINVAL);
	place_config_init(&cfg);
	cfg.reserved[4] = 1; /* the last one */
	ck_assert_int_eq(place_create(&p, topo, &cfg), -EINVAL);
	ck_assert_ptr_eq(p, (place *)&cfg);
	/* and the good case, after all that */
	place_config_init(&cfg);
	ck_assert_int_eq(place_create(&p, topo, &cfg), 0);
	place_topo_free(topo); /* the instance keeps its own copy */
	ck_assert_int_eq(place_topo_nr_cpus(place_get_topo(p)), 8);
	ck_assert_ptr_null(place_get_topo(NULL));
	place_destroy(p);
	place_destroy(NULL);
}
END_TEST

START_TEST(t_tasks)
{
	place_task t = garbage_task(), before;
	cpu_set_t set;

	place_task_init(NULL, 0, 0); /* accepted, does nothing */
	CPU_ZERO(&set);
	before = t;
	ck_assert_int_eq(place_task_set_cpus(NULL, &set, sizeof(set)), -EINVAL);
	ck_assert_int_eq(place_task_set_cpus(&t, &set, sizeof(set)), -EINVAL); /* not initialised */
	ck_assert(memcmp(&t, &before, sizeof(t)) == 0);
	place_task_init(&t, 7, 3);
	before = t;
	ck_assert_int_eq(place_task_set_cpus(&t, &set, 0), -EINVAL);
	ck_assert(memcmp(&t, &before, sizeof(t)) == 0);
	ck_assert_int_eq(place_task_set_cpus(&t, &set, sizeof(set)), 0);
	ck_assert_ptr_eq(t.cpus, &set);
	ck_assert_int_eq(place_task_set_cpus(&t, NULL, 0), 0);
	ck_assert_ptr_null(t.cpus);
	ck_assert_uint_eq(place_task_size(), sizeof(place_task));
}
END_TEST

START_TEST(t_wakeup)
{
	struct env e;
	struct snapshot s;
	place_task junk = garbage_task(), *t;
	struct place_task_rec rec;

	setup(&e, &s);
	t = env_task_on(&e, 2, 5);
	rec = *place__rec(t);
	EXPECT_ERR(&e, &s, place_wakeup(NULL, t, 0, 0), -EINVAL);
	EXPECT_ERR(&e, &s, place_wakeup(e.p, NULL, 0, 0), -EINVAL);
	EXPECT_ERR(&e, &s, place_wakeup(e.p, &junk, 0, 0), -EINVAL);
	EXPECT_ERR(&e, &s, place_wakeup(e.p, t, 0, 1u << 30), -EINVAL); /* an unknown flag */
	EXPECT_ERR(&e, &s, place_wakeup(e.p, t, PLACE_CPU_NONE, PLACE_WAKE_CURRENT), -EINVAL); /* no waker */
	EXPECT_ERR(&e, &s, place_wakeup(e.p, t, 8, 0), -ENODEV);
	EXPECT_ERR(&e, &s, place_wakeup(e.p, t, -2, 0), -ENODEV);
	EXPECT_ERR(&e, &s, place_wakeup(e.p, t, 100000, 0), -ENODEV);
	t->cpus = (const cpu_set_t *)&rec; /* set without a size */
	EXPECT_ERR(&e, &s, place_wakeup(e.p, t, 0, 0), -EINVAL);
	t->cpus = NULL;
	ck_assert(memcmp(place__rec(t), &rec, sizeof(rec)) == 0);
	expect_usable(&e);
}
END_TEST

START_TEST(t_edges)
{
	struct env e;
	struct snapshot s;
	place_task junk = garbage_task();

	setup(&e, &s);
	EXPECT_ERR(&e, &s, place_idle_enter(NULL, 0), -EINVAL);
	EXPECT_ERR(&e, &s, place_idle_enter(e.p, -1), -ENODEV);
	EXPECT_ERR(&e, &s, place_idle_enter(e.p, 8), -ENODEV);
	EXPECT_ERR(&e, &s, place_idle_enter(e.p, 7), -ENOENT);
	EXPECT_ERR(&e, &s, place_idle_enter(e.p, 2), -EBUSY); /* runs task 0 */

	EXPECT_ERR(&e, &s, place_run_begin(NULL, 0, &e.task[3]), -EINVAL);
	EXPECT_ERR(&e, &s, place_run_begin(e.p, 9, &e.task[3]), -ENODEV);
	EXPECT_ERR(&e, &s, place_run_begin(e.p, 7, &e.task[3]), -ENOENT);
	EXPECT_ERR(&e, &s, place_run_begin(e.p, 0, NULL), -EINVAL);
	EXPECT_ERR(&e, &s, place_run_begin(e.p, 0, &junk), -EINVAL);
	EXPECT_ERR(&e, &s, place_run_begin(e.p, 2, &e.task[3]), -EBUSY);

	EXPECT_ERR(&e, &s, place_run_end(NULL, 2, &e.task[0], PLACE_RUN_SLEEP), -EINVAL);
	EXPECT_ERR(&e, &s, place_run_end(e.p, 8, &e.task[0], PLACE_RUN_SLEEP), -ENODEV);
	EXPECT_ERR(&e, &s, place_run_end(e.p, 7, &e.task[0], PLACE_RUN_SLEEP), -ENOENT);
	EXPECT_ERR(&e, &s, place_run_end(e.p, 2, &e.task[3], PLACE_RUN_SLEEP), -EINVAL); /* not its task */
	EXPECT_ERR(&e, &s, place_run_end(e.p, 2, &junk, PLACE_RUN_SLEEP), -EINVAL);
	EXPECT_ERR(&e, &s, place_run_end(e.p, 2, &e.task[0], 3), -EINVAL);
	EXPECT_ERR(&e, &s, place_run_end(e.p, 3, &e.task[0], PLACE_RUN_SLEEP), -EINVAL); /* runs nothing */

	EXPECT_ERR(&e, &s, place_claim_release(NULL, 4), -EINVAL);
	EXPECT_ERR(&e, &s, place_claim_release(e.p, 8), -ENODEV);
	EXPECT_ERR(&e, &s, place_claim_release(e.p, 3), -ENOENT); /* no claim there */
	EXPECT_ERR(&e, &s, place_claim_release(e.p, 7), -ENOENT);
	EXPECT_ERR(&e, &s, place_task_claimed(NULL, &e.task[1]), -EINVAL);
	EXPECT_ERR(&e, &s, place_task_claimed(e.p, NULL), -EINVAL);
	EXPECT_ERR(&e, &s, place_task_claimed(e.p, &junk), -EINVAL);
	EXPECT_ERR(&e, &s, place_task_claimed(e.p, &e.task[1]), 4);
	expect_usable(&e);
}
END_TEST

START_TEST(t_workers_and_stats)
{
	struct env e;
	struct snapshot s;
	place_stats st, zero;

	setup(&e, &s);
	EXPECT_ERR(&e, &s, place_worker_register(NULL, 7, 0), -EINVAL);
	EXPECT_ERR(&e, &s, place_worker_register(e.p, 7, 1u << 4), -EINVAL); /* bit 1 is SHARED */
	EXPECT_ERR(&e, &s, place_worker_register(e.p, 8, 0), -ENODEV);
	EXPECT_ERR(&e, &s, place_worker_register(e.p, -1, 0), -ENODEV);
	EXPECT_ERR(&e, &s, place_worker_register(e.p, 3, 0), -EEXIST);
	EXPECT_ERR(&e, &s, place_worker_unregister(NULL, 3), -EINVAL);
	EXPECT_ERR(&e, &s, place_worker_unregister(e.p, 8), -ENODEV);
	EXPECT_ERR(&e, &s, place_worker_unregister(e.p, 7), -ENOENT);

	memset(&st, 0x5a, sizeof(st));
	zero = st;
	EXPECT_ERR(&e, &s, place_stats_read(NULL, -1, &st), -EINVAL);
	EXPECT_ERR(&e, &s, place_stats_read(e.p, -1, NULL), -EINVAL);
	EXPECT_ERR(&e, &s, place_stats_read(e.p, 1, &st), -ERANGE);
	EXPECT_ERR(&e, &s, place_stats_read(e.p, -2, &st), -ERANGE);
	ck_assert(memcmp(&st, &zero, sizeof(st)) == 0);
	ck_assert_int_eq(place_stats_read(e.p, 0, &st), 0);
	ck_assert_uint_eq(st.wakeups, 1);
	ck_assert_uint_eq(st.claims, 1);
	expect_usable(&e);
}
END_TEST

static Suite *bad_suite(void)
{
	Suite *s = suite_create("engine_bad_input");
	TCase *tc = tcase_create("errors");

	tcase_add_test(tc, t_config_and_create);
	tcase_add_test(tc, t_tasks);
	tcase_add_test(tc, t_wakeup);
	tcase_add_test(tc, t_edges);
	tcase_add_test(tc, t_workers_and_stats);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return place_test_run(bad_suite());
}
