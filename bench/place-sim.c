/*
 * place-sim: the placement simulator's command line. See bench/sim/sim.h
 * for the model, BENCHMARKS.md for what it shows.
 *
 *   place-sim --topology 'synthetic:pack:2 [numa] l3:8 core:8 pu:2(indexes=core)' \
 *             --workload hackbench --load 1,8,32,128
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opt.h"
#include "sim/sim.h"

#define MAX_POLICIES 32
#define MAX_LOADS 64

struct opts {
	const char *topology;
	const char *workload;
	const char *policies;
	const char *load_list;
	const char *load_name;
	int fmt;
	bool host_time, quiet, summary;
	int runs;
	struct sim_params prm;
};

struct progress {
	uint64_t start, last;
	int load, li, nl, pi, np;
	const char *policy;
	bool tty, printed;
};

static uint64_t host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char usage[] =
	"usage: place-sim [options]\n"
	"  --topology SRC       live (default), process, machine, xml:PATH or synthetic:STRING, as\n"
	"                       place_topo_load(3) takes them; $PLACE_TOPOLOGY replaces live and process\n"
	"  --workload NAME      hackbench | schbench | pingpong | stream | mix | tenants | groups\n"
	"                       (default hackbench)\n"
	"  --policies LIST      all, or NAME[/no-FEATURE|/FEATURE...],... NAME one of sis_core linear\n"
	"                       exact lifo random; FEATURE one of claim scan_sibling short_affine\n"
	"                       wake_wide sis_util cookies numa widen cluster pull_idle hub_stays\n"
	"                       hub_queue busy_stays (these two act with --steal only: the\n"
	"                       runtime has thieves); sis_core/no-cookies: COOKIES off; any case\n"
	"  --load LIST          sweep of the workload's load: 1,4,16 or A..B (doubling) or A..B+K\n"
	"                       (hackbench/mix: groups, schbench: workers, pingpong: pairs, stream: threads,\n"
	"                       tenants: tenant-tasks, groups: numa-groups)\n"
	"  --format F           table | brief (fewer columns) | summary (no rows) | tsv | json |\n"
	"                       cookies | numa (their columns; what table is for tenants / groups) |\n"
	"                       exits (when each role's tasks exited: the spread behind a makespan)\n"
	"  --seed N             PRNG seed (default 1); same seed, same output\n"
	"  --runs N             run seeds S..S+N-1 (S from --seed), report the median-time run (1)\n"
	"  --no-host-time       omit host ns per decision (byte-identical output across runs)\n"
	"  --summary            after the table, two lines per load: who wins, by how much\n"
	"  --quiet              no progress on stderr\n"
	"machine model:\n"
	"  --smt-factor F (0.6)  --wake-ns N (4000)  --llc-penalty-ns N (5000)  --node-penalty-ns N (15000)\n"
	"                       (node penalty: with NUMA latencies, the nearest node's; farther ones by latency)\n"
	"  --decision-ns N (50)  --probe-ns N (15)  --slice-ns N (3000000)  --jitter PCT (20)\n"
	"  --deep-idle-ns N --deep-wake-ns M   a worker parked N ns or more wakes M ns slower (off)\n"
	"  --steal              idle workers steal nearest-first before parking (libplace is\n"
	"                       told so: PLACE_RUNTIME_THIEVES)\n"
	"  --kick               with --steal: a wakeup queued behind a running task wakes a\n"
	"                       parked worker near it to steal it, as Tokio notifies one\n"
	"                       (libplace: place_idle_near; lifo and random: their own pick)\n"
	"  --max-time-ns N      stop a run at this virtual time\n"
	"libplace:\n"
	"  --numa-cooldown-ns N (10000000, 0 = none)  --numa-move-cap N (4)   place_config's NUMA knobs\n"
	"workloads:\n"
	"  hackbench: --groups N (4) --senders N (20) --receivers N (20) --loops N (10) --pipe N (16)\n"
	"             --send-ns N (1500) --recv-ns N (1500)\n"
	"  schbench:  --msg-threads N (2) --workers N (16) --rounds N (100) --work-ns N (20000)\n"
	"             --msg-ns N (2000)\n"
	"  pingpong:  --pairs N (16) --hops N (2000) --run-ns N (2000)\n"
	"  stream:    --threads N (0 = one per core) --iters N (40) --burst-ns N (200000)\n"
	"  tenants:   --tenants N (4, cookies 1..N) --tenant-tasks N (16 per tenant) --tenant-rounds N (40)\n"
	"             --tenant-work-ns N (50000) --tenant-sleep-ns N (50000, a timer wakes the task)\n"
	"  groups:    --numa-groups N (8) --group-tasks N (16) --group-tokens N (8) --group-hops N (100)\n"
	"             --group-work-ns N (10000) --group-xnode-ns N (4000, wakee started off its waker's node)\n"
	"  --help, --version\n";

/* "1,4,16", "A..B" (doubling from A, B included) or "A..B+K" (step K). */
static int parse_loads(const char *s, int *out, int max)
{
	int n = 0, a, b, k = 0;
	char tail;

	if (sscanf(s, "%d..%d+%d%c", &a, &b, &k, &tail) == 3 ||
	    (k = 0, sscanf(s, "%d..%d%c", &a, &b, &tail) == 2)) {
		if (a < 1 || b < a || k < 0)
			return -EINVAL;
		for (int v = a; v <= b && n < max; v = k ? v + k : v * 2)
			out[n++] = v;
		if (!k && out[n - 1] != b && n < max)
			out[n++] = b;
		return n;
	}
	while (*s && n < max) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 1 || v > INT_MAX || (*end && *end != ','))
			return -EINVAL;
		out[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return n ? n : -EINVAL;
}

enum {
	O_TOPOLOGY = 256, O_WORKLOAD, O_POLICIES, O_LOAD, O_FORMAT, O_SEED, O_NO_HOST_TIME, O_QUIET,
	O_SUMMARY, O_SMT, O_WAKE, O_LLC_PEN, O_NODE_PEN, O_DECISION, O_PROBE, O_SLICE, O_JITTER,
	O_STEAL, O_KICK, O_MAX_TIME, O_GROUPS, O_SENDERS, O_RECEIVERS, O_LOOPS, O_PIPE, O_SEND_NS, O_RECV_NS,
	O_MSG_THREADS, O_WORKERS, O_ROUNDS, O_WORK_NS, O_MSG_NS, O_PAIRS, O_HOPS, O_RUN_NS, O_THREADS,
	O_ITERS, O_BURST_NS, O_RUNS, O_DEEP_IDLE, O_DEEP_WAKE, O_TENANTS, O_TN_TASKS, O_TN_ROUNDS,
	O_TN_WORK, O_TN_SLEEP, O_GR_GROUPS, O_GR_TASKS, O_GR_TOKENS, O_GR_HOPS, O_GR_WORK, O_GR_XNODE, O_NUMA_COOL,
	O_NUMA_CAP
};

static const struct option long_opts[] = {
	{ "topology", required_argument, NULL, O_TOPOLOGY },
	{ "workload", required_argument, NULL, O_WORKLOAD },
	{ "policies", required_argument, NULL, O_POLICIES },
	{ "load", required_argument, NULL, O_LOAD },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "seed", required_argument, NULL, O_SEED },
	{ "no-host-time", no_argument, NULL, O_NO_HOST_TIME },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "summary", no_argument, NULL, O_SUMMARY },
	{ "smt-factor", required_argument, NULL, O_SMT },
	{ "wake-ns", required_argument, NULL, O_WAKE },
	{ "llc-penalty-ns", required_argument, NULL, O_LLC_PEN },
	{ "node-penalty-ns", required_argument, NULL, O_NODE_PEN },
	{ "decision-ns", required_argument, NULL, O_DECISION },
	{ "probe-ns", required_argument, NULL, O_PROBE },
	{ "slice-ns", required_argument, NULL, O_SLICE },
	{ "jitter", required_argument, NULL, O_JITTER },
	{ "steal", no_argument, NULL, O_STEAL },
	{ "kick", no_argument, NULL, O_KICK },
	{ "max-time-ns", required_argument, NULL, O_MAX_TIME },
	{ "groups", required_argument, NULL, O_GROUPS },
	{ "senders", required_argument, NULL, O_SENDERS },
	{ "receivers", required_argument, NULL, O_RECEIVERS },
	{ "loops", required_argument, NULL, O_LOOPS },
	{ "pipe", required_argument, NULL, O_PIPE },
	{ "send-ns", required_argument, NULL, O_SEND_NS },
	{ "recv-ns", required_argument, NULL, O_RECV_NS },
	{ "msg-threads", required_argument, NULL, O_MSG_THREADS },
	{ "workers", required_argument, NULL, O_WORKERS },
	{ "rounds", required_argument, NULL, O_ROUNDS },
	{ "work-ns", required_argument, NULL, O_WORK_NS },
	{ "msg-ns", required_argument, NULL, O_MSG_NS },
	{ "pairs", required_argument, NULL, O_PAIRS },
	{ "hops", required_argument, NULL, O_HOPS },
	{ "run-ns", required_argument, NULL, O_RUN_NS },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "iters", required_argument, NULL, O_ITERS },
	{ "burst-ns", required_argument, NULL, O_BURST_NS },
	{ "runs", required_argument, NULL, O_RUNS },
	{ "deep-idle-ns", required_argument, NULL, O_DEEP_IDLE },
	{ "deep-wake-ns", required_argument, NULL, O_DEEP_WAKE },
	{ "tenants", required_argument, NULL, O_TENANTS },
	{ "tenant-tasks", required_argument, NULL, O_TN_TASKS },
	{ "tenant-rounds", required_argument, NULL, O_TN_ROUNDS },
	{ "tenant-work-ns", required_argument, NULL, O_TN_WORK },
	{ "tenant-sleep-ns", required_argument, NULL, O_TN_SLEEP },
	{ "numa-groups", required_argument, NULL, O_GR_GROUPS },
	{ "group-tasks", required_argument, NULL, O_GR_TASKS },
	{ "group-tokens", required_argument, NULL, O_GR_TOKENS },
	{ "group-hops", required_argument, NULL, O_GR_HOPS },
	{ "group-work-ns", required_argument, NULL, O_GR_WORK },
	{ "group-xnode-ns", required_argument, NULL, O_GR_XNODE },
	{ "numa-cooldown-ns", required_argument, NULL, O_NUMA_COOL },
	{ "numa-move-cap", required_argument, NULL, O_NUMA_CAP },
	OPT_COMMON_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

static int parse_smt(const char *name, const char *s, unsigned *out)
{
	double f;

	if (opt_real("place-sim", name, s, 0.001, 1.0, &f) < 0)
		return -EINVAL;
	*out = (unsigned)(f * 1000.0 + 0.5);
	return 0;
}

/* Options that set one integer parameter, and its range. */
static int *int_param(struct sim_params *p, int opt, int *min, int *max)
{
	*min = 1;
	*max = INT_MAX;
	switch (opt) {
	case O_JITTER: *min = 0; *max = 100; return (int *)&p->jitter_pct;
	case O_GROUPS: return &p->hb_groups;
	case O_SENDERS: return &p->hb_senders;
	case O_RECEIVERS: return &p->hb_receivers;
	case O_LOOPS: return &p->hb_loops;
	case O_PIPE: return &p->hb_pipe;
	case O_MSG_THREADS: return &p->sb_msg_threads;
	case O_WORKERS: return &p->sb_workers;
	case O_ROUNDS: return &p->sb_rounds;
	case O_PAIRS: return &p->pp_pairs;
	case O_HOPS: return &p->pp_rounds;
	case O_THREADS: *min = 0; return &p->st_threads;
	case O_ITERS: return &p->st_iters;
	case O_TENANTS: return &p->tn_tenants;
	case O_TN_TASKS: return &p->tn_tasks;
	case O_TN_ROUNDS: return &p->tn_rounds;
	case O_GR_GROUPS: return &p->gr_groups;
	case O_GR_TASKS: *min = 2; return &p->gr_tasks;
	case O_GR_TOKENS: return &p->gr_tokens;
	case O_GR_HOPS: return &p->gr_hops;
	case O_NUMA_CAP: return &p->numa_move_cap;
	default: return NULL;
	}
}

static uint64_t *u64_param(struct sim_params *p, int opt)
{
	switch (opt) {
	case O_SEED: return &p->seed;
	case O_WAKE: return &p->wake_ns;
	case O_DEEP_IDLE: return &p->deep_idle_ns;
	case O_DEEP_WAKE: return &p->deep_wake_ns;
	case O_LLC_PEN: return &p->llc_penalty_ns;
	case O_NODE_PEN: return &p->node_penalty_ns;
	case O_DECISION: return &p->decision_ns;
	case O_PROBE: return &p->probe_ns;
	case O_SLICE: return &p->slice_ns;
	case O_MAX_TIME: return &p->max_time_ns;
	case O_SEND_NS: return &p->hb_send_ns;
	case O_RECV_NS: return &p->hb_recv_ns;
	case O_WORK_NS: return &p->sb_work_ns;
	case O_MSG_NS: return &p->sb_msg_ns;
	case O_RUN_NS: return &p->pp_run_ns;
	case O_BURST_NS: return &p->st_burst_ns;
	case O_TN_WORK: return &p->tn_work_ns;
	case O_TN_SLEEP: return &p->tn_sleep_ns;
	case O_GR_WORK: return &p->gr_work_ns;
	case O_GR_XNODE: return &p->gr_xnode_ns;
	case O_NUMA_COOL: return &p->numa_cooldown_ns;
	default: return NULL;
	}
}

static int parse_format(const char *s, int *fmt)
{
	static const char *const names[] = { "table", "tsv", "json", "brief", "summary", "cookies", "numa", "exits" };
	static const int fmts[] = { SIM_FMT_TABLE, SIM_FMT_TSV, SIM_FMT_JSON, SIM_FMT_BRIEF, SIM_FMT_NONE,
				    SIM_FMT_COOKIES, SIM_FMT_NUMA, SIM_FMT_EXITS };
	int i = opt_choice("place-sim", "format", s, names, (int)(sizeof(names) / sizeof(names[0])));

	if (i < 0)
		return -EINVAL;
	*fmt = fmts[i];
	return 0;
}

/* One option: 0, or -EINVAL after a message naming it. */
static int apply_opt(struct opts *o, int opt, const char *arg)
{
	const char *name = opt_long_name(long_opts, opt);
	int *ip, min, max, err = 0;
	uint64_t *up;

	if ((ip = int_param(&o->prm, opt, &min, &max)))
		err = opt_int("place-sim", name, arg, min, max, ip);
	else if ((up = u64_param(&o->prm, opt)))
		err = opt_u64("place-sim", name, arg, 0, UINT64_MAX, up);
	else if (opt == O_RUNS)
		err = opt_int("place-sim", name, arg, 1, 16, &o->runs);
	else if (opt == O_SMT)
		err = parse_smt(name, arg, &o->prm.smt_permille);
	else if (opt == O_FORMAT)
		err = parse_format(arg, &o->fmt);
	else if (opt == O_TOPOLOGY)
		o->topology = arg;
	else if (opt == O_WORKLOAD)
		o->workload = arg;
	else if (opt == O_POLICIES)
		o->policies = arg;
	else if (opt == O_LOAD)
		o->load_list = arg;
	else if (opt == O_NO_HOST_TIME)
		o->host_time = false;
	else if (opt == O_QUIET)
		o->quiet = true;
	else if (opt == O_SUMMARY)
		o->summary = true;
	else if (opt == O_STEAL)
		o->prm.steal = true;
	else if (opt == O_KICK)
		o->prm.kick = true;
	else
		err = -EINVAL;
	return err < 0 ? -EINVAL : 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int opt;

	memset(o, 0, sizeof(*o));
	o->workload = "hackbench";
	o->policies = "all";
	o->host_time = true;
	o->runs = 1;
	sim_params_default(&o->prm);
	while ((opt = opt_next("place-sim", argc, argv, long_opts, usage, 0)) != -1)
		if (opt == OPT_ERROR || apply_opt(o, opt, optarg) < 0)
			return -EINVAL;
	if (sim_workload_select(&o->prm, o->workload, &o->load_name) < 0) {
		fprintf(stderr, "place-sim: bad value '%s' for --workload: want one of hackbench schbench "
			"pingpong stream mix tenants groups\n", o->workload);
		return -EINVAL;
	}
	/* The tenants and groups workloads are about their own figures. */
	if (o->fmt == SIM_FMT_TABLE && o->prm.enabled[SIM_WL_TENANTS])
		o->fmt = SIM_FMT_COOKIES;
	else if (o->fmt == SIM_FMT_TABLE && o->prm.enabled[SIM_WL_GROUPS])
		o->fmt = SIM_FMT_NUMA;
	return 0;
}

static void progress_cb(void *arg, const struct sim *s)
{
	struct progress *pg = arg;
	uint64_t now = host_ns();

	if (now - pg->start < 2000000000u || now - pg->last < 1000000000u)
		return;
	pg->last = now;
	pg->printed = true;
	fprintf(stderr, "%splace-sim: load %d (%d/%d) %s (%d/%d): %.1f ms simulated, %d/%d tasks left, %.0fs%s",
		pg->tty ? "\r" : "", pg->load, pg->li + 1, pg->nl, pg->policy, pg->pi + 1, pg->np,
		(double)s->now / 1e6, s->live, s->nr_tasks, (double)(now - pg->start) / 1e9,
		pg->tty ? "\033[K" : "\n");
}

static double thr(const struct sim_result *r)
{
	return r->makespan_ns ? (double)r->units / (double)r->makespan_ns : 0.0;
}

static const struct sim_result *find(const struct sim_result *r, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(r[i].policy, name))
			return &r[i];
	return NULL;
}

static double gain(const struct sim_result *r, int n, const char *a, const char *b, bool *ok)
{
	const struct sim_result *x = find(r, n, a), *y = find(r, n, b);

	*ok = x && y && thr(y) > 0;
	return *ok ? (thr(x) / thr(y) - 1.0) * 100.0 : 0.0;
}

static double miss_pct(const struct sim_result *r)
{
	return r->run_starts ? 100.0 * (double)r->idle_core_misses / (double)r->run_starts : 0.0;
}

/* COOKIES on (on) against off (off), in words: forced idle, the longest
 * wait, co-runs, the tenants' spread. */
static void cookie_words(const struct sim_result *on, const struct sim_result *off)
{
	double forced = on->makespan_ns ? 100.0 * (double)on->forced_ns /
						  ((double)on->makespan_ns * (double)on->nr_cpus)
					: 0.0;

	printf("; cookies on: %.2f%% CPU time forced idle, longest wait %.3f ms, %" PRIu64
	       " co-runs, spread %.2f; off: longest wait %.3f ms, %" PRIu64 " co-runs, spread %.2f",
	       forced, (double)on->lat_max / 1e6, on->violations, on->role_spread, (double)off->lat_max / 1e6,
	       off->violations, off->role_spread);
}

/* Each policy named BASE/no-cookies or BASE/no-numa beside its BASE: what
 * the feature costs or gains in throughput. */
static void feature_lines(const struct sim_result *r, int n)
{
	static const char *const suffix[] = { "/no-cookies", "/no-numa" };

	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k < sizeof(suffix) / sizeof(suffix[0]); k++) {
			size_t len = strlen(r[i].policy), sl = strlen(suffix[k]);
			char base[sizeof(r[i].policy)];
			bool ok;
			double g;

			if (len <= sl || strcmp(r[i].policy + len - sl, suffix[k]))
				continue;
			snprintf(base, sizeof(base), "%.*s", (int)(len - sl), r[i].policy);
			g = gain(r, n, base, r[i].policy, &ok);
			if (ok)
				printf("    %s: %s on vs off %+.1f%% throughput", base, suffix[k] + 4, g);
			if (ok && k == 0) /* what isolation costs besides, and what it prevents */
				cookie_words(find(r, n, base), &r[i]);
			if (ok)
				printf("\n");
		}
	}
}

/* libplace against the baselines, when they ran. */
static void baseline_line(const struct sim_result *r, int n, const struct sim_result *sc,
			  const struct sim_result *lifo, const struct sim_result *rnd)
{
	bool ok;
	double g;

	printf("   ");
	g = gain(r, n, "sis_core", "lifo", &ok);
	if (ok)
		printf(" sis_core vs LIFO %+.1f%%", g);
	g = gain(r, n, "sis_core", "random", &ok);
	if (ok)
		printf(", vs RANDOM %+.1f%%;", g);
	if (sc && lifo && rnd)
		printf(" sis_core / lifo / random: idle-core misses %.1f%% / %.1f%% / %.1f%%, p99 wakeup %.0f / %.0f / %.0f us",
		       miss_pct(sc), miss_pct(lifo), miss_pct(rnd), sc->lat_p99 / 1e3, lifo->lat_p99 / 1e3,
		       rnd->lat_p99 / 1e3);
	printf("\n");
}

/* Two lines per load level (three and more with feature pairs): the fastest
 * policy, then SIS_CORE against the linear scan, libplace against the
 * baselines, idle-core misses. */
static void summary_line(const char *load_name, const struct sim_result *r, int n)
{
	const struct sim_result *sc = find(r, n, "sis_core"), *lifo = find(r, n, "lifo"), *rnd = find(r, n, "random");
	int best = 0, worst = 0;
	bool ok;
	double g;

	for (int i = 1; i < n; i++) {
		if (thr(&r[i]) > thr(&r[best]))
			best = i;
		if (thr(&r[i]) < thr(&r[worst]))
			worst = i;
	}
	printf("  --%s %d (util %.0f%%): fastest %s, %.1f%% ahead of the slowest (%s)", load_name, r[0].load,
	       r[0].util * 100.0, r[best].policy, (thr(&r[best]) / thr(&r[worst]) - 1.0) * 100.0, r[worst].policy);
	g = gain(r, n, "sis_core", "linear", &ok);
	if (ok)
		printf("; sis_core vs linear %+.1f%%", g);
	printf("\n");
	if (lifo || rnd)
		baseline_line(r, n, sc, lifo, rnd);
	feature_lines(r, n);
}

static const char *plural(int n)
{
	return n == 1 ? "" : "s";
}

static void describe(char *buf, size_t size, const struct opts *o, const struct sim_machine *m,
		     const place_topo *topo)
{
	const struct sim_params *p = &o->prm;
	const char *steal = !p->steal ? "" : p->kick ? " steal kick" : " steal";
	char runs[48] = "", deep[64] = "";

	if (p->deep_idle_ns)
		snprintf(deep, sizeof(deep), " (+%" PRIu64 "ns after %" PRIu64 "ns parked)", p->deep_wake_ns,
			 p->deep_idle_ns);
	if (o->runs > 1)
		snprintf(runs, sizeof(runs), " (median of %d seeds)", o->runs < 16 ? o->runs : 16);
	snprintf(buf, size,
		 "place-sim %s on %s: %d CPU%s, %d core%s, %d LLC%s, %d node%s; smt %.2f wake %" PRIu64
		 "ns%s llc+%" PRIu64 "ns node+%" PRIu64 "ns%s decision %" PRIu64 "ns+%" PRIu64
		 "ns/probe slice %" PRIu64 "ns jitter %u%%%s seed %" PRIu64 "%s",
		 o->workload, place_topo_source(topo), m->nr_cpus, plural(m->nr_cpus), m->nr_cores,
		 plural(m->nr_cores), m->nr_llcs, plural(m->nr_llcs), m->nr_nodes, plural(m->nr_nodes),
		 p->smt_permille / 1000.0, p->wake_ns, deep, p->llc_penalty_ns, p->node_penalty_ns,
		 m->node_scaled ? " (the nearest; farther nodes by NUMA latency)" : "", p->decision_ns, p->probe_ns, p->slice_ns, p->jitter_pct, steal, p->seed, runs);
}

static int cmp_makespan(const void *a, const void *b)
{
	const struct sim_result *x = a, *y = b;

	return x->makespan_ns < y->makespan_ns ? -1 : x->makespan_ns > y->makespan_ns;
}

/* One (load, policy) cell: o->runs seeds, the run with the median time. */
static int run_cell(struct opts *o, const place_topo *topo, const struct sim_machine *m,
		    const struct sim_policy_spec *pol, struct progress *pg, struct sim_result *out)
{
	struct sim_result rr[16];
	uint64_t seed = o->prm.seed;
	int n = o->runs < 16 ? o->runs : 16, err = 0;

	for (int r = 0; r < n && !err; r++) {
		o->prm.seed = seed + (uint64_t)r;
		err = sim_run(topo, m, &o->prm, pol, o->host_time, &rr[r], o->quiet ? NULL : progress_cb, pg);
	}
	o->prm.seed = seed;
	if (err)
		return err;
	qsort(rr, (size_t)n, sizeof(rr[0]), cmp_makespan);
	*out = rr[n / 2];
	return 0;
}

static int run_all(struct opts *o, const place_topo *topo, const struct sim_machine *m,
		   const struct sim_policy_spec *pol, int np, const int *loads, int nl)
{
	struct progress pg = { .start = host_ns(), .nl = nl, .np = np, .tty = isatty(2) };
	struct sim_result *res = calloc((size_t)np, sizeof(*res));
	struct sim_result *all = calloc((size_t)(np * nl), sizeof(*all));
	char what[1024];
	int err = 0, name_w = sim_report_name_width(pol, np);
	/* Not under the machine-readable formats. */
	bool summarise = o->summary && o->fmt != SIM_FMT_TSV && o->fmt != SIM_FMT_JSON;

	if (!res || !all) {
		free(res);
		free(all);
		return -ENOMEM;
	}
	describe(what, sizeof(what), o, m, topo);
	sim_report_header(stdout, o->fmt, what, name_w);
	for (int li = 0; li < nl && !err; li++) {
		sim_set_load(&o->prm, o->load_name, loads[li]);
		for (int pi = 0; pi < np && !err; pi++) {
			pg.load = loads[li], pg.li = li, pg.pi = pi, pg.policy = pol[pi].name;
			err = run_cell(o, topo, m, &pol[pi], &pg, &res[pi]);
			res[pi].load = loads[li];
			if (err < 0)
				fprintf(stderr, "place-sim: %s at %s=%d: %s\n", pol[pi].name, o->load_name,
					loads[li], place_strerror(err));
			else
				sim_report_row(stdout, o->fmt, name_w, &res[pi], &res[0], li == 0 && pi == 0);
		}
		if (!err && summarise)
			memcpy(&all[li * np], res, (size_t)np * sizeof(*res));
	}
	sim_report_footer(stdout, o->fmt);
	snprintf(what, sizeof(what), "%s --%s", o->workload, o->load_name);
	if (!err)
		sim_report_legend(stdout, o->fmt, what);
	if (pg.printed && pg.tty)
		fprintf(stderr, "\r\033[K");
	if (!err && summarise) {
		printf("summary per load: the fastest and the slowest policy by throughput; sis_core against the "
		       "others (+: sis_core faster):\n");
		for (int li = 0; li < nl; li++)
			summary_line(o->load_name, &all[li * np], np);
	}
	free(res);
	free(all);
	return err;
}

/* hub_queue and busy_stays act only where the runtime has thieves: named
 * without --steal, on or off, they change nothing; say so once each. */
static void warn_thieves_only(const struct sim_policy_spec *pol, int np, bool steal)
{
	static const char *const feat[] = { "hub_queue", "busy_stays" };

	for (size_t f = 0; !steal && f < sizeof(feat) / sizeof(feat[0]); f++)
		for (int i = 0; i < np; i++)
			if (strstr(pol[i].name, feat[f])) {
				fprintf(stderr, "place-sim: warning: %s acts only with --steal (the runtime "
					"has thieves): in %s it changes nothing\n", feat[f], pol[i].name);
				break;
			}
}

int main(int argc, char **argv)
{
	struct sim_policy_spec pol[MAX_POLICIES];
	struct sim_machine m;
	place_topo *topo = NULL;
	struct opts o;
	int loads[MAX_LOADS], nl = 1, np, err;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	np = sim_policy_parse(o.policies, pol, MAX_POLICIES);
	if (np < 0)
		return 2;
	warn_thieves_only(pol, np, o.prm.steal);
	if (o.load_list) {
		nl = parse_loads(o.load_list, loads, MAX_LOADS);
		if (nl < 0) {
			fprintf(stderr, "place-sim: bad value '%s' for --load: want 1,4,16 or A..B or A..B+K "
				"(whole numbers from 1)\n", o.load_list);
			return 2;
		}
	}
	err = place_topo_load(&topo, o.topology);
	if (err < 0) {
		fprintf(stderr, "place-sim: %s: %s\n", place_strerror(err), place_last_error());
		return 1;
	}
	err = sim_machine_init(&m, topo);
	if (err < 0) {
		fprintf(stderr, "place-sim: cannot read the topology: %s\n", place_strerror(err));
		place_topo_free(topo);
		return 1;
	}
	if (!o.prm.st_threads)
		o.prm.st_threads = m.nr_cores;
	if (!o.load_list) /* no sweep: one level, the workload's own parameter */
		loads[0] = sim_get_load(&o.prm, o.load_name);
	err = run_all(&o, topo, &m, pol, np, loads, nl);
	sim_machine_fini(&m);
	place_topo_free(topo);
	return err < 0 ? 1 : 0;
}
