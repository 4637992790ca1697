/*
 * The placement simulator (bench/sim): determinism (same seed, same output
 * bytes), conservation (every message delivered, every task accounted for,
 * the work units each workload promises), the machine model (SMT speed,
 * refill penalties) and the baselines.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "testlib.h"

/* 2 packages x 2 LLCs x 4 cores x SMT2 = 32 CPUs, Linux numbering. */
#define SMALL "synthetic:pack:2 [numa] l3:2 core:4 pu:2(indexes=core)"

struct fixture {
	place_topo *topo;
	struct sim_machine m;
};

static void fx_load(struct fixture *fx, const char *src)
{
	int err = place_topo_load(&fx->topo, src);

	ck_assert_msg(err == 0, "place_topo_load(%s): %d %s", src, err, place_last_error());
	ck_assert_int_eq(sim_machine_init(&fx->m, fx->topo), 0);
}

static void fx_free(struct fixture *fx)
{
	sim_machine_fini(&fx->m);
	place_topo_free(fx->topo);
}

static void params(struct sim_params *p, const char *workload)
{
	const char *load;

	sim_params_default(p);
	ck_assert_int_ge(sim_workload_select(p, workload, &load), 0);
	p->hb_groups = 2;
	p->hb_senders = p->hb_receivers = 5;
	p->hb_loops = 4;
	p->sb_workers = 6;
	p->sb_rounds = 10;
	p->pp_pairs = 4;
	p->pp_rounds = 50;
	p->st_threads = 12;
	p->st_iters = 5;
}

static struct sim_result run1(struct fixture *fx, const struct sim_params *p, const char *policy)
{
	struct sim_policy_spec spec;
	struct sim_result r;
	int err;

	ck_assert_int_eq(sim_policy_parse(policy, &spec, 1), 1);
	err = sim_run(fx->topo, &fx->m, p, &spec, false, &r, NULL, NULL);
	ck_assert_msg(err == 0, "sim_run %s: %d", policy, err);
	return r;
}

/* Every row of the default comparison for one workload, as TSV bytes. */
static char *report(struct fixture *fx, const struct sim_params *p, size_t *len)
{
	struct sim_policy_spec spec[32];
	int n = sim_policy_parse("all", spec, 32), w = sim_report_name_width(spec, n);
	struct sim_result first;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	ck_assert_ptr_nonnull(f);
	sim_report_header(f, SIM_FMT_TSV, "test", w);
	for (int i = 0; i < n; i++) {
		struct sim_result r;

		ck_assert_int_eq(sim_run(fx->topo, &fx->m, p, &spec[i], false, &r, NULL, NULL), 0);
		if (!i)
			first = r;
		sim_report_row(f, SIM_FMT_TSV, w, &r, &first, i == 0);
	}
	fclose(f);
	return buf;
}

static const char *const workloads[] = { "hackbench", "schbench", "pingpong", "stream", "mix" };

START_TEST(t_determinism)
{
	struct fixture fx;
	struct sim_params p;
	size_t la, lb;
	char *a, *b;

	fx_load(&fx, SMALL);
	params(&p, workloads[_i]);
	a = report(&fx, &p, &la);
	b = report(&fx, &p, &lb);
	ck_assert_msg(la == lb && !memcmp(a, b, la), "%s: two runs differ:\n%s\n---\n%s", workloads[_i], a, b);
	free(b);
	/* Another seed changes the jittered bursts, so the bytes. */
	p.seed = 2;
	b = report(&fx, &p, &lb);
	ck_assert_msg(la != lb || memcmp(a, b, la), "%s: seed has no effect", workloads[_i]);
	free(a);
	free(b);
	fx_free(&fx);
}
END_TEST

/* The work each workload promises, given p. */
static uint64_t expected_units(const struct sim_params *p)
{
	uint64_t u = 0;

	if (p->enabled[SIM_WL_HACKBENCH])
		u += (uint64_t)p->hb_groups * p->hb_senders * p->hb_receivers * p->hb_loops;
	if (p->enabled[SIM_WL_SCHBENCH])
		u += (uint64_t)p->sb_msg_threads * p->sb_workers * p->sb_rounds;
	if (p->enabled[SIM_WL_PINGPONG])
		u += (uint64_t)p->pp_pairs * 2 * p->pp_rounds;
	if (p->enabled[SIM_WL_STREAM])
		u += (uint64_t)p->st_threads * p->st_iters;
	return u;
}

START_TEST(t_conservation)
{
	struct sim_policy_spec spec[32];
	int n = sim_policy_parse("all", spec, 32);
	struct fixture fx;
	struct sim_params p;

	fx_load(&fx, SMALL);
	params(&p, workloads[_i]);
	for (int k = 0; k < n; k++) {
		struct sim_result r;

		ck_assert_int_eq(sim_run(fx.topo, &fx.m, &p, &spec[k], false, &r, NULL, NULL), 0);
		ck_assert_msg(r.ok, "%s/%s did not finish", workloads[_i], spec[k].name);
		ck_assert_uint_eq(r.exited, r.tasks);
		ck_assert_uint_eq(r.sent, r.delivered);
		if (p.enabled[SIM_WL_HACKBENCH])
			ck_assert_uint_eq(r.delivered, (uint64_t)p.hb_groups * p.hb_senders * p.hb_receivers *
							   p.hb_loops);
		ck_assert_msg(r.units == expected_units(&p), "%s/%s: %lu units, expected %lu", workloads[_i],
			      spec[k].name, (unsigned long)r.units, (unsigned long)expected_units(&p));
		/* Every wakeup ends in a run, and runs include preemption resumes. */
		ck_assert_uint_ge(r.run_starts, r.wakeups);
		ck_assert(r.util > 0.0 && r.util <= 1.0);
		ck_assert_uint_le(r.lat_p50, r.lat_p99);
		ck_assert_uint_le(r.lat_p99, r.lat_p999);
		if (spec[k].kind == SIM_POL_PLACE)
			ck_assert_uint_eq(r.st.wakeups, r.wakeups);
	}
	fx_free(&fx);
}
END_TEST

/* One CPU leaves no choice: every policy gives the same schedule. */
START_TEST(t_one_cpu_same_schedule)
{
	struct fixture fx;
	struct sim_params p;
	struct sim_result ref;

	fx_load(&fx, "synthetic:core:1 pu:1");
	params(&p, "hackbench");
	p.decision_ns = p.probe_ns = 0;
	ref = run1(&fx, &p, "lifo");
	ck_assert(ref.ok);
	for (const char *const *pol = (const char *const[]){ "random", "sis_core", "linear", "exact", NULL };
	     *pol; pol++) {
		struct sim_result r = run1(&fx, &p, *pol);

		ck_assert_msg(r.makespan_ns == ref.makespan_ns, "%s: %lu ns, lifo %lu ns", *pol,
			      (unsigned long)r.makespan_ns, (unsigned long)ref.makespan_ns);
		ck_assert_uint_eq(r.idle_core_misses, 0);
		ck_assert_uint_eq(r.cross_llc, 0);
	}
	fx_free(&fx);
}
END_TEST

/* Two stream threads forced onto one SMT2 core run at smt_factor each. */
START_TEST(t_smt_speed)
{
	struct fixture fx;
	struct sim_params p;
	struct sim_result r;
	uint64_t ideal;

	fx_load(&fx, "synthetic:core:1 pu:2");
	params(&p, "stream");
	p.st_threads = 2;
	p.jitter_pct = 0;
	p.wake_ns = p.decision_ns = p.probe_ns = 0;
	r = run1(&fx, &p, "lifo");
	ideal = (uint64_t)p.st_iters * p.st_burst_ns;
	/* 0.6 of full speed: 1/0.6 of the time (rounding: within 1 ns per burst). */
	ck_assert_uint_ge(r.makespan_ns, ideal * 1000 / 600);
	ck_assert_uint_le(r.makespan_ns, ideal * 1000 / 600 + (uint64_t)p.st_iters * 10);
	ck_assert_uint_eq(r.idle_core_misses, 0); /* no idle core ever existed */
	fx_free(&fx);
}
END_TEST

/* A task resumed in another LLC pays the refill penalty as extra work. */
START_TEST(t_refill_penalty)
{
	struct fixture fx;
	struct sim_params p;
	struct sim_result a, b;

	fx_load(&fx, SMALL);
	params(&p, "pingpong");
	p.pp_pairs = 8;
	a = run1(&fx, &p, "random");
	ck_assert_uint_gt(a.cross_llc, 0);
	ck_assert_uint_gt(a.cross_node, 0);
	ck_assert_uint_le(a.cross_node, a.cross_llc);
	p.llc_penalty_ns = p.node_penalty_ns = 0;
	b = run1(&fx, &p, "random");
	ck_assert_uint_lt(b.makespan_ns, a.makespan_ns);
	fx_free(&fx);
}
END_TEST

/* With far more CPUs than runnable tasks, the baselines always find an
 * idle worker: no stacking, and every wakeup latency is the wake latency. */
START_TEST(t_baselines_light)
{
	struct fixture fx;
	struct sim_params p;

	fx_load(&fx, SMALL);
	params(&p, "pingpong");
	p.pp_pairs = 2;
	for (const char *const *pol = (const char *const[]){ "lifo", "random", NULL }; *pol; pol++) {
		struct sim_result r = run1(&fx, &p, *pol);

		ck_assert_uint_eq(r.stack_llc, 0);
		ck_assert_uint_eq(r.stack_any, 0);
		ck_assert_uint_eq(r.lat_p50, p.wake_ns);
		ck_assert_uint_eq(r.lat_max, p.wake_ns);
		ck_assert_uint_eq(r.st.wakeups, 0); /* no libplace behind them */
	}
	fx_free(&fx);
}
END_TEST

/* LIFO wakes the most recently idled worker: a lone pingpong pair bounces
 * between the same two CPUs; RANDOM spreads over the machine. */
START_TEST(t_baselines_lifo_order)
{
	struct fixture fx;
	struct sim_params p;
	struct sim_result lifo, rnd;

	fx_load(&fx, SMALL);
	params(&p, "pingpong");
	p.pp_pairs = 1;
	lifo = run1(&fx, &p, "lifo");
	rnd = run1(&fx, &p, "random");
	ck_assert_uint_eq(lifo.cross_llc, 0);
	ck_assert_uint_gt(rnd.cross_llc, 0);
	fx_free(&fx);
}
END_TEST

START_TEST(t_policy_parse)
{
	struct sim_policy_spec s[4];

	ck_assert_int_eq(sim_policy_parse("sis_core-claim+claim,linear-scan_sibling-sis_util,lifo", s, 4), 3);
	ck_assert_int_eq(s[0].kind, SIM_POL_PLACE);
	ck_assert_uint_eq(s[0].features, PLACE_FEAT_DEFAULT);
	ck_assert_int_eq(s[1].policy, PLACE_POLICY_LINEAR);
	ck_assert_uint_eq(s[1].features, PLACE_FEAT_DEFAULT & ~(PLACE_FEAT_SCAN_SIBLING | PLACE_FEAT_SIS_UTIL));
	ck_assert_int_eq(s[2].kind, SIM_POL_LIFO);
	ck_assert_int_lt(sim_policy_parse("lifo-claim", s, 4), 0);
	ck_assert_int_lt(sim_policy_parse("bogus", s, 4), 0);
	ck_assert_int_lt(sim_policy_parse("sis_core-nope", s, 4), 0);
	/* The readable spelling, any case; names come out the readable way. */
	ck_assert_int_eq(sim_policy_parse("SIS_CORE/no-cookies/numa,linear-claim,exact+sis_util", s, 4), 3);
	ck_assert_str_eq(s[0].name, "sis_core/no-cookies/numa");
	ck_assert_uint_eq(s[0].features, PLACE_FEAT_DEFAULT & ~PLACE_FEAT_COOKIES);
	ck_assert_str_eq(s[1].name, "linear/no-claim");
	ck_assert_uint_eq(s[1].features, PLACE_FEAT_DEFAULT & ~PLACE_FEAT_CLAIM);
	ck_assert_str_eq(s[2].name, "exact/sis_util");
	ck_assert_int_lt(sim_policy_parse("sis_core/no-", s, 4), 0);
	ck_assert_int_lt(sim_policy_parse("sis_core/", s, 4), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim");
	TCase *tc = tcase_create("sim");
	int nwl = (int)(sizeof(workloads) / sizeof(workloads[0]));

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, t_determinism, 0, nwl);
	tcase_add_loop_test(tc, t_conservation, 0, nwl);
	tcase_add_test(tc, t_one_cpu_same_schedule);
	tcase_add_test(tc, t_smt_speed);
	tcase_add_test(tc, t_refill_penalty);
	tcase_add_test(tc, t_baselines_light);
	tcase_add_test(tc, t_baselines_lifo_order);
	tcase_add_test(tc, t_policy_parse);
	suite_add_tcase(s, tc);
	return place_test_run(s);
}
