/*
 * Policies: a libplace instance configured with one policy and feature set,
 * or one of the two baselines that runtimes use today, written here:
 *   lifo    wake the most recently idled worker (Tokio, oneTBB, folly)
 *   random  wake a uniformly random idle worker
 * Both baselines take the chosen worker out of their idle set (as unparking a
 * specific worker does), and with nobody idle they queue the task on the
 * waker's CPU (a runtime's local queue), else on the task's previous CPU.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim.h"

static const struct {
	const char *name;
	unsigned bit;
} feat_names[] = {
	{ "claim", PLACE_FEAT_CLAIM },
	{ "scan_sibling", PLACE_FEAT_SCAN_SIBLING },
	{ "short_affine", PLACE_FEAT_SHORT_AFFINE },
	{ "wake_wide", PLACE_FEAT_WAKE_WIDE },
	{ "sis_util", PLACE_FEAT_SIS_UTIL },
	{ "cookies", PLACE_FEAT_COOKIES },
	{ "numa", PLACE_FEAT_NUMA },
	{ "widen", PLACE_FEAT_WIDEN },
	{ "cluster", PLACE_FEAT_CLUSTER },
	{ "pull_idle", PLACE_FEAT_PULL_IDLE },
	{ "hub_stays", PLACE_FEAT_HUB_STAYS },
	{ "hub_queue", PLACE_FEAT_HUB_QUEUE },
	{ "busy_stays", PLACE_FEAT_BUSY_STAYS },
};

static const struct {
	const char *name;
	int kind, policy;
} base_names[] = {
	{ "sis_core", SIM_POL_PLACE, PLACE_POLICY_SIS_CORE },
	{ "linear", SIM_POL_PLACE, PLACE_POLICY_LINEAR },
	{ "exact", SIM_POL_PLACE, PLACE_POLICY_EXACT },
	{ "lifo", SIM_POL_LIFO, 0 },
	{ "random", SIM_POL_RANDOM, 0 },
};

/* The default comparison: the three libplace policies, two libplace
 * features switched off once, and the two baselines. No CLAIM-off variant:
 * the simulator decides one wakeup at a time, so no two decisions ever race
 * for one CPU and a claim can never be lost (sis_core/no-claim gives the
 * bytes of sis_core). */
static const char default_list[] =
	"linear,sis_core,exact,sis_core/no-scan_sibling,sis_core/no-short_affine,lifo,random";

static int parse_feature(const char *s, size_t len, unsigned *bit, const char **name)
{
	for (size_t i = 0; i < sizeof(feat_names) / sizeof(feat_names[0]); i++) {
		if (strlen(feat_names[i].name) == len && !strncasecmp(s, feat_names[i].name, len)) {
			*bit = feat_names[i].bit;
			*name = feat_names[i].name;
			return 0;
		}
	}
	return -EINVAL;
}

/* Appends to out->name; -EINVAL when it does not fit. */
static int name_add(struct sim_policy_spec *out, const char *a, const char *b)
{
	size_t used = strlen(out->name);
	int n = snprintf(out->name + used, sizeof(out->name) - used, "%s%s", a, b);

	return n < 0 || (size_t)n >= sizeof(out->name) - used ? -EINVAL : 0;
}

/* One feature change after the policy name: "/no-FEAT" or "/FEAT" (the
 * readable spelling), or the older "-FEAT" / "+FEAT". */
static int parse_change(const char *s, size_t len, struct sim_policy_spec *out)
{
	char op = s[0];
	const char *name;
	bool on = op == '+';
	unsigned bit;

	s++, len--;
	if (op == '/') {
		on = !(len > 3 && !strncasecmp(s, "no-", 3));
		if (!on)
			s += 3, len -= 3;
	}
	if (out->kind != SIM_POL_PLACE || parse_feature(s, len, &bit, &name) < 0)
		return -EINVAL;
	out->features = on ? out->features | bit : out->features & ~bit;
	return name_add(out, on ? "/" : "/no-", name);
}

/* One item: NAME then a sequence of feature changes; out->name is spelled
 * the readable way whichever way it was typed. */
static int parse_one(const char *s, size_t len, struct sim_policy_spec *out)
{
	size_t n = strcspn(s, "-+/");

	if (n > len)
		n = len;
	memset(out, 0, sizeof(*out));
	out->kind = -1;
	for (size_t i = 0; i < sizeof(base_names) / sizeof(base_names[0]); i++) {
		if (strlen(base_names[i].name) == n && !strncasecmp(s, base_names[i].name, n)) {
			out->kind = base_names[i].kind;
			out->policy = base_names[i].policy;
			snprintf(out->name, sizeof(out->name), "%s", base_names[i].name);
		}
	}
	if (out->kind < 0)
		return -EINVAL;
	out->features = PLACE_FEAT_DEFAULT;
	while (n < len) {
		/* "/no-x" holds a '-' that is not a separator */
		size_t skip = s[n] == '/' && len - n > 4 && !strncasecmp(s + n + 1, "no-", 3) ? 4 : 1;
		size_t m = skip + strcspn(s + n + skip, "-+/");

		if (n + m > len)
			m = len - n;
		if (parse_change(s + n, m, out) < 0)
			return -EINVAL;
		n += m;
	}
	return 0;
}

int sim_policy_parse(const char *list, struct sim_policy_spec *out, int max)
{
	int count = 0;

	if (!strcasecmp(list, "all") || !*list)
		list = default_list;
	while (*list) {
		size_t len = strcspn(list, ",");

		if (count == max || parse_one(list, len, &out[count]) < 0) {
			fprintf(stderr, "place-sim: bad value '%.*s' for --policies: want NAME[/no-FEATURE|"
				"/FEATURE...], NAME one of sis_core linear exact lifo random, FEATURE one of claim "
				"scan_sibling short_affine wake_wide sis_util cookies numa widen cluster pull_idle hub_stays "
				"hub_queue busy_stays\n", (int)len, list);
			return -EINVAL;
		}
		count++;
		list += len;
		if (*list == ',')
			list++;
	}
	return count;
}

static uint64_t sim_clock(void *arg)
{
	return ((const struct sim *)arg)->now;
}

static int place_init(struct sim_pol *pp, const place_topo *topo)
{
	place_config cfg;
	int err;

	place_config_init(&cfg);
	cfg.policy = pp->spec.policy;
	cfg.features = pp->spec.features;
	cfg.clock = sim_clock;
	cfg.clock_arg = pp->sim;
	/* --steal: idle workers steal queued tasks, as the runtime would say */
	cfg.runtime = pp->sim->prm->steal ? PLACE_RUNTIME_THIEVES : 0;
	cfg.numa_cooldown_ns = pp->sim->prm->numa_cooldown_ns;
	cfg.numa_move_cap = (uint32_t)pp->sim->prm->numa_move_cap;
	if (pp->sim->prm->enabled[SIM_WL_GROUPS] && pp->sim->prm->gr_groups > 64)
		cfg.max_groups = (uint32_t)pp->sim->prm->gr_groups;
	err = place_create(&pp->place, topo, &cfg);
	if (err < 0)
		return err;
	for (int i = 0; i < pp->sim->m->nr_cpus; i++) {
		err = place_worker_register(pp->place, pp->sim->m->os[i], 0);
		if (err < 0)
			return err;
	}
	return 0;
}

int sim_pol_init(struct sim_pol *pp, struct sim *s, const struct sim_policy_spec *spec)
{
	int n = s->m->nr_cpus;

	memset(pp, 0, sizeof(*pp));
	pp->spec = *spec;
	pp->sim = s;
	if (spec->kind == SIM_POL_PLACE)
		return place_init(pp, s->topo);
	pp->idle = calloc((size_t)n, sizeof(int));
	pp->pos = calloc((size_t)n, sizeof(int));
	if (!pp->idle || !pp->pos)
		return -ENOMEM;
	/* Every worker starts idle, in CPU order (CPU 0 on top). */
	for (int i = 0; i < n; i++) {
		pp->idle[i] = n - 1 - i;
		pp->pos[n - 1 - i] = i;
	}
	pp->nidle = n;
	return 0;
}

void sim_pol_fini(struct sim_pol *pp)
{
	place_destroy(pp->place);
	free(pp->idle);
	free(pp->pos);
	memset(pp, 0, sizeof(*pp));
}

static void idle_remove(struct sim_pol *pp, int cpu)
{
	int i = pp->pos[cpu], last;

	if (i < 0)
		return;
	last = pp->idle[--pp->nidle];
	pp->idle[i] = last;
	pp->pos[last] = i;
	pp->pos[cpu] = -1;
}

/* Keep LIFO order exact: removal from the middle shifts (rare: only when a
 * CPU gets work without being picked, e.g. a task queued on the waker). */
static void idle_remove_ordered(struct sim_pol *pp, int cpu)
{
	int i = pp->pos[cpu];

	if (i < 0)
		return;
	for (int j = i; j + 1 < pp->nidle; j++) {
		pp->idle[j] = pp->idle[j + 1];
		pp->pos[pp->idle[j]] = j;
	}
	pp->nidle--;
	pp->pos[cpu] = -1;
}

/* A baseline's parked worker, taken off its idle list: LIFO the most
 * recently parked, RANDOM any; -1 when none is parked. */
static int baseline_pick(struct sim_pol *pp)
{
	int cpu;

	if (!pp->nidle)
		return -1;
	if (pp->spec.kind == SIM_POL_LIFO)
		cpu = pp->idle[pp->nidle - 1];
	else
		cpu = pp->idle[sim_rand_below(&pp->sim->pol_rng, (uint32_t)pp->nidle)];
	idle_remove(pp, cpu);
	return cpu;
}

static int baseline_fallback(const struct sim *s, const struct sim_task *t, int waker)
{
	if (waker >= 0)
		return waker;
	if (t->last_cpu >= 0)
		return t->last_cpu;
	return t->id % s->m->nr_cpus;
}

int sim_pol_select(struct sim_pol *pp, struct sim_task *t, int waker, unsigned flags)
{
	int cpu;

	switch (pp->spec.kind) {
	case SIM_POL_PLACE:
		cpu = place_wakeup(pp->place, &t->pt, waker >= 0 ? pp->sim->m->os[waker] : PLACE_CPU_NONE,
				   flags);
		return cpu < 0 ? cpu : pp->sim->m->dense[cpu];
	default:
		cpu = baseline_pick(pp);
		return cpu < 0 ? baseline_fallback(pp->sim, t, waker) : cpu;
	}
}

int sim_pol_idle_enter(struct sim_pol *pp, int cpu)
{
	if (pp->spec.kind == SIM_POL_PLACE)
		return place_idle_enter(pp->place, pp->sim->m->os[cpu]);
	if (pp->pos[cpu] >= 0)
		idle_remove_ordered(pp, cpu);
	pp->pos[cpu] = pp->nidle;
	pp->idle[pp->nidle++] = cpu;
	return 0;
}

int sim_pol_run_begin(struct sim_pol *pp, int cpu, struct sim_task *t)
{
	if (pp->spec.kind == SIM_POL_PLACE)
		return place_run_begin(pp->place, pp->sim->m->os[cpu], &t->pt);
	if (pp->spec.kind == SIM_POL_LIFO)
		idle_remove_ordered(pp, cpu);
	else
		idle_remove(pp, cpu);
	return 0;
}

int sim_pol_steal_check(struct sim_pol *pp, int cpu, struct sim_task *t)
{
	if (pp->spec.kind != SIM_POL_PLACE)
		return 0; /* the baselines refuse nothing */
	return place_steal_check(pp->place, pp->sim->m->os[cpu], &t->pt);
}

int sim_pol_run_refused(struct sim_pol *pp, int cpu, struct sim_task *t)
{
	int dst;

	if (pp->spec.kind != SIM_POL_PLACE)
		return cpu; /* the baselines refuse nothing */
	dst = place_run_refused(pp->place, pp->sim->m->os[cpu], &t->pt, 0);
	return dst < 0 ? dst : pp->sim->m->dense[dst];
}

int sim_pol_run_end(struct sim_pol *pp, int cpu, struct sim_task *t, unsigned how, int *retry, int max)
{
	const struct sim_machine *m = pp->sim->m;
	int n;

	if (pp->spec.kind != SIM_POL_PLACE)
		return 0; /* the baselines refuse nothing: no one waits */
	n = place_run_end_retry(pp->place, m->os[cpu], &t->pt, how, retry, max);
	for (int i = 0; i < n && i < max; i++)
		retry[i] = m->dense[retry[i]];
	return n < max ? n : max;
}

/* The baselines wake a thief as they wake a worker for a task: LIFO the
 * most recently parked one, RANDOM any (they stack only with none parked,
 * so this is for symmetry). */
int sim_pol_kick(struct sim_pol *pp, int cpu)
{
	const struct sim_machine *m = pp->sim->m;
	int d;

	if (pp->spec.kind == SIM_POL_PLACE) {
		d = place_idle_near(pp->place, m->os[cpu], 0);
		return d < 0 ? d : m->dense[d];
	}
	d = baseline_pick(pp);
	return d < 0 ? -EAGAIN : d;
}

int sim_pol_kicked(struct sim_pol *pp, int cpu)
{
	if (pp->spec.kind != SIM_POL_PLACE)
		return 0;
	return place_claim_release(pp->place, pp->sim->m->os[cpu]);
}

void sim_pol_stats(const struct sim_pol *pp, place_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (pp->place)
		place_stats_read(pp->place, -1, out);
}
