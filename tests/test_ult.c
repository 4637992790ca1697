/*
 * The example ULT runtime (examples/ult.c), in both modes (libplace, and
 * LIFO): fork-join (fib), blocking on futures with hand-offs (ping-pong),
 * many short ULTs that yield; every ULT runs exactly once, results are
 * right, the runtime shuts down cleanly (valgrind and TSan stages of
 * build.sh run this suite too). Hand-offs go through place_run_switch.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

#include "testlib.h"
#include "ult.h"

/* 4 workers (unpinned) on a modelled machine of 2 cores x 2 threads. */
#define TOPO "synthetic:pack:1 l3:1 core:2 pu:2"
#define MAX_IDS 20000

struct ctx {
	ult_rt *rt;
	unsigned ran[MAX_IDS];
	unsigned next_id;
};

struct fib {
	struct ctx *c;
	int n;
	long result;
};

static void mark(struct ctx *c)
{
	unsigned id = __atomic_fetch_add(&c->next_id, 1, __ATOMIC_RELAXED);

	ck_assert_uint_lt(id, MAX_IDS);
	__atomic_fetch_add(&c->ran[id], 1, __ATOMIC_RELAXED);
}

static void fib_ult(ult *self, void *arg)
{
	struct fib *f = arg, a = { f->c, f->n - 1, 0 }, b = { f->c, f->n - 2, 0 };
	ult *child;

	mark(f->c);
	if (f->n < 2) {
		f->result = f->n;
		return;
	}
	child = ult_spawn(self, f->c->rt, fib_ult, &a); /* fork */
	ck_assert_ptr_nonnull(child);
	fib_ult(self, &b);                              /* the other half here */
	ult_join(self, child);                          /* join */
	f->result = a.result + b.result;
}

static ult_rt *rt_open(int mode)
{
	struct ult_config cfg = { .topology = TOPO, .mode = mode, .no_pin = 1 };
	ult_rt *rt;

	ck_assert_int_eq(ult_rt_create(&rt, &cfg), 0);
	ck_assert(mode == ULT_MODE_LIFO ? !ult_place(rt) : !!ult_place(rt));
	return rt;
}

static void all_once(struct ctx *c, unsigned want)
{
	ck_assert_uint_eq(c->next_id, want);
	for (unsigned i = 0; i < want; i++)
		ck_assert_msg(c->ran[i] == 1, "ULT %u ran %u times", i, c->ran[i]);
}

/* fib(14) by fork-join: 1219 ULT bodies (one per call), each once. */
START_TEST(t_fib)
{
	static struct ctx c;
	struct fib f = { &c, 14, 0 };
	ult *root;

	memset(&c, 0, sizeof(c));
	c.rt = rt_open(_i);
	root = ult_spawn(NULL, c.rt, fib_ult, &f);
	ult_join(NULL, root);
	ck_assert_int_eq(f.result, 377);
	all_once(&c, 1219);
	ult_rt_destroy(c.rt);
}
END_TEST

struct pp {
	ult_future f[2];
	int rounds;
	unsigned seen[2];
};

struct pp_arg {
	struct pp *pp;
	int me;
};

/* Each side waits for its future and sets the other's, handing its CPU
 * over (ULT_HANDOFF): the waiter runs next here, by a direct switch. */
static void pp_ult(ult *self, void *arg)
{
	struct pp_arg *a = arg;
	struct pp *pp = a->pp;

	for (int r = 0; r < pp->rounds; r++) {
		if (a->me == 1 || r > 0) {
			void *v = ult_future_get(self, &pp->f[a->me]);

			ck_assert_int_eq((int)(intptr_t)v, r * 2 + (a->me == 1 ? 0 : -1) + 1);
			ult_future_destroy(&pp->f[a->me]);
			ult_future_init(&pp->f[a->me]);
		}
		pp->seen[a->me]++;
		ult_future_set(self, &pp->f[1 - a->me], (void *)(intptr_t)(r * 2 + a->me + 1), ULT_HANDOFF);
	}
}

START_TEST(t_ping_pong)
{
	struct pp pp = { .rounds = 2000 };
	struct pp_arg a0 = { &pp, 0 }, a1 = { &pp, 1 };
	struct ult_stats st;
	ult_rt *rt = rt_open(_i);
	ult *u0, *u1;

	ult_future_init(&pp.f[0]);
	ult_future_init(&pp.f[1]);
	u1 = ult_spawn(NULL, rt, pp_ult, &a1);
	u0 = ult_spawn(NULL, rt, pp_ult, &a0);
	ult_join(NULL, u0);
	ult_join(NULL, u1);
	ck_assert_uint_eq(pp.seen[0], 2000);
	ck_assert_uint_eq(pp.seen[1], 2000);
	ult_stats_read(rt, &st);
	ck_assert_uint_gt(st.switches, 0); /* hand-offs went by direct switches */
	if (ult_place(rt)) {
		place_stats ps;

		ck_assert_int_eq(place_stats_read(ult_place(rt), -1, &ps), 0);
		ck_assert_uint_ge(ps.wakeups, st.switches);
	}
	ult_future_destroy(&pp.f[0]);
	ult_future_destroy(&pp.f[1]);
	ult_rt_destroy(rt);
}
END_TEST

/* Two hand-offs from one run: the root sets two futures with ULT_HANDOFF,
 * each waited on by a blocked ULT. PLACE mode: the first goes to runnext
 * unseen by libplace (place_run_handoff would tell it at the switch); the
 * second, a place_wakeup since the slot is taken, evicts it, and the
 * evicted one is woken then (late_wake) into a pool; the root's join
 * switches to the second. Both get their values and return. */
struct two {
	ult_rt *rt;
	ult_future f[2];
	int got[2];
};

struct two_arg {
	struct two *t;
	int k;
};

static void two_waiter(ult *self, void *arg)
{
	struct two_arg *a = arg;

	a->t->got[a->k] = (int)(intptr_t)ult_future_get(self, &a->t->f[a->k]);
}

static bool has_waiter(ult_future *f)
{
	bool b;

	pthread_mutex_lock(&f->lock);
	b = f->waiter != NULL;
	pthread_mutex_unlock(&f->lock);
	return b;
}

static void two_root(ult *self, void *arg)
{
	struct two *t = arg;
	struct two_arg a[2] = { { t, 0 }, { t, 1 } };
	ult *w[2];

	for (int k = 0; k < 2; k++)
		w[k] = ult_spawn(self, t->rt, two_waiter, &a[k]);
	while (!has_waiter(&t->f[0]) || !has_waiter(&t->f[1]))
		ult_yield(self);
	ult_future_set(self, &t->f[0], (void *)(intptr_t)10, ULT_HANDOFF);
	ult_future_set(self, &t->f[1], (void *)(intptr_t)11, ULT_HANDOFF);
	for (int k = 0; k < 2; k++)
		ult_join(self, w[k]);
}

START_TEST(t_two_handoffs)
{
	struct two t = { .rt = rt_open(_i) };

	ult_future_init(&t.f[0]);
	ult_future_init(&t.f[1]);
	ult_join(NULL, ult_spawn(NULL, t.rt, two_root, &t));
	ck_assert_int_eq(t.got[0], 10);
	ck_assert_int_eq(t.got[1], 11);
	ult_future_destroy(&t.f[0]);
	ult_future_destroy(&t.f[1]);
	ult_rt_destroy(t.rt);
}
END_TEST

/* A root spawns 4000 short ULTs (each yields once), joins them all. */
static void short_ult(ult *self, void *arg)
{
	struct ctx *c = arg;

	ult_yield(self);
	mark(c);
}

static void spawner(ult *self, void *arg)
{
	struct ctx *c = arg;
	static ult *kids[4000];

	for (int i = 0; i < 4000; i++)
		ck_assert_ptr_nonnull(kids[i] = ult_spawn(self, c->rt, short_ult, c));
	for (int i = 0; i < 4000; i++)
		ult_join(self, kids[i]);
}

START_TEST(t_many_short)
{
	static struct ctx c;
	ult *root;

	memset(&c, 0, sizeof(c));
	c.rt = rt_open(_i);
	root = ult_spawn(NULL, c.rt, spawner, &c);
	ult_join(NULL, root);
	all_once(&c, 4000);
	ult_rt_destroy(c.rt);
}
END_TEST

/* Created and destroyed with nothing run; and the live machine. */
START_TEST(t_idle_and_live)
{
	struct ult_config cfg = { .mode = _i };
	ult_rt *rt;

	ult_rt_destroy(rt_open(_i));
	ck_assert_int_eq(ult_rt_create(&rt, &cfg), 0);
	ult_rt_destroy(rt);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ult");
	TCase *tc = tcase_create("ult");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, t_fib, 0, 2);
	tcase_add_loop_test(tc, t_ping_pong, 0, 2);
	tcase_add_loop_test(tc, t_two_handoffs, 0, 2);
	tcase_add_loop_test(tc, t_many_short, 0, 2);
	tcase_add_loop_test(tc, t_idle_and_live, 0, 2);
	suite_add_tcase(s, tc);
	return place_test_run(s);
}
