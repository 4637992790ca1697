/*
 * place-poolbench: the example pool (examples/pool.c) on this machine, waking
 * with libplace versus waking the most recently parked worker (LIFO, what
 * Tokio, oneTBB and folly do), on two workloads:
 *   messaging  hackbench-like: G groups of S senders and R receivers; each
 *              sender sends one message to every receiver of its group per
 *              loop (waking it), M loops, yielding between loops
 *   pingpong   P pairs of tasks waking each other (sync wakeups), N hops each
 * Reports wall time (median of the repeats), wakeup latency percentiles
 * (from pool_wake to the start of the run, all repeats), task runs, the
 * share of them that were stolen and the parks, per repeat, side by side.
 * --callgrind adds each mode's instructions per unit (hop or message): the
 * workload once more, smaller, under valgrind --tool=callgrind, counting
 * the workers' threads (worker_main, inclusive) over the units they did.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opt.h"
#include "pool.h"

#define HIST_SUB 16  /* sub-buckets per power of two: ~6% resolution */
#define HIST_BUCKETS (64 * HIST_SUB)
#define MAX_MODES 8

/* Latency histogram, one per worker (written by that worker only). */
struct hist {
	uint64_t n[HIST_BUCKETS];
	struct pool_stats ps;   /* summed over the repeats (in the per-mode sums only) */
} __attribute__((aligned(64)));

struct bench {
	pool *pool;
	struct hist *hist;      /* [cpu_limit] by OS CPU */
	int cpu_limit;
	/* Completion: the main thread waits for `left` to reach 0. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long left;
	/* Parameters. */
	int groups, senders, receivers, loops, pairs, hops;
};

struct actor {
	pool_task task;
	struct bench *b;
	struct actor *peers;    /* messaging: the group's receivers; pingpong: the partner */
	unsigned long inbox;    /* messages not yet read (atomic) */
	long count;
	long goal;
	int role;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned hist_index(uint64_t v)
{
	unsigned log, sub;

	if (v < HIST_SUB)
		return (unsigned)v;
	log = 63u - (unsigned)__builtin_clzll(v);
	sub = (unsigned)(v >> (log - 4)) & (HIST_SUB - 1);
	return (log - 3) * HIST_SUB + sub;
}

static uint64_t hist_value(unsigned i)
{
	unsigned log = i / HIST_SUB + 3, sub = i % HIST_SUB;

	if (i < HIST_SUB)
		return i;
	return ((uint64_t)(HIST_SUB + sub) << (log - 4));
}

static void record(struct bench *b, pool_task *t, int cpu)
{
	uint64_t lat = now_ns() - t->woken_ns;

	b->hist[cpu].n[hist_index(lat)]++;
}

static void finished(struct bench *b)
{
	if (__atomic_sub_fetch(&b->left, 1, __ATOMIC_SEQ_CST) == 0) {
		pthread_mutex_lock(&b->lock);
		pthread_cond_signal(&b->cond);
		pthread_mutex_unlock(&b->lock);
	}
}

/* ---- messaging ------------------------------------------------------------- */

static int sender_run(pool_task *t, int cpu)
{
	struct actor *a = (struct actor *)t;
	struct bench *b = a->b;

	record(b, t, cpu);
	for (int j = 0; j < b->receivers; j++) {
		struct actor *r = &a->peers[j];

		__atomic_add_fetch(&r->inbox, 1, __ATOMIC_SEQ_CST);
		pool_wake(b->pool, &r->task, cpu, 0);
	}
	if (++a->count == a->goal) {
		finished(b);
		return POOL_DONE;
	}
	/* Yield: wake ourselves, so we run again behind whatever is queued. */
	pool_wake(b->pool, t, cpu, 0);
	return POOL_SLEEP;
}

static int receiver_run(pool_task *t, int cpu)
{
	struct actor *a = (struct actor *)t;

	record(a->b, t, cpu);
	a->count += (long)__atomic_exchange_n(&a->inbox, 0, __ATOMIC_SEQ_CST);
	if (a->count == a->goal) {
		finished(a->b);
		return POOL_DONE;
	}
	return POOL_SLEEP;
}

/* ---- pingpong ---------------------------------------------------------------- */

static int pingpong_run(pool_task *t, int cpu)
{
	struct actor *a = (struct actor *)t;

	record(a->b, t, cpu);
	a->count++;
	if (a->role == 1 && a->count == a->goal) {
		finished(a->b);
		return POOL_DONE;
	}
	/* A hand-off: this task sleeps now, its partner runs next on this CPU. */
	pool_wake(a->b->pool, &a->peers->task, cpu, PLACE_WAKE_SYNC | PLACE_WAKE_CURRENT);
	if (a->count == a->goal) {
		finished(a->b);
		return POOL_DONE;
	}
	return POOL_SLEEP;
}

/* ---- running one workload under one mode ----------------------------------- */

static struct actor *make_messaging(struct bench *b, size_t *n)
{
	int per = b->senders + b->receivers;
	struct actor *a = calloc((size_t)(b->groups * per), sizeof(*a));

	if (!a)
		return NULL;
	*n = (size_t)(b->groups * per);
	for (int g = 0; g < b->groups; g++)
		for (int i = 0; i < per; i++) {
			struct actor *x = &a[g * per + i];
			bool sender = i < b->senders;

			pool_task_init(&x->task, sender ? sender_run : receiver_run, NULL);
			x->b = b;
			x->role = sender ? 0 : 1;
			x->peers = &a[g * per + b->senders];
			x->goal = sender ? b->loops : (long)b->loops * b->senders;
		}
	return a;
}

static struct actor *make_pingpong(struct bench *b, size_t *n)
{
	struct actor *a = calloc((size_t)(2 * b->pairs), sizeof(*a));

	if (!a)
		return NULL;
	*n = (size_t)(2 * b->pairs);
	for (size_t i = 0; i < *n; i++) {
		pool_task_init(&a[i].task, pingpong_run, NULL);
		a[i].b = b;
		a[i].role = (int)(i % 2);
		a[i].peers = &a[i ^ 1];
		a[i].goal = b->hops;
	}
	return a;
}

struct mode {
	char name[32];
	int wake;      /* enum pool_wake_mode */
	int policy;    /* enum place_policy */
};

static pool *start_pool(const struct mode *m)
{
	struct pool_config cfg = { .mode = m->wake, .queue_size = 4096 };
	place_config pc;
	pool *p = NULL;
	int err;

	place_config_init(&pc);
	pc.policy = m->policy;
	cfg.place = &pc;
	err = pool_create(&p, &cfg);
	if (err < 0)
		fprintf(stderr, "place-poolbench: pool_create: %s %s\n", place_strerror(err), place_last_error());
	return err < 0 ? NULL : p;
}

/* The run's counters and latencies into the mode's sums. */
static void collect(const struct bench *b, struct hist *sum)
{
	struct pool_stats ps;

	pool_stats_read(b->pool, &ps);
	sum->ps.runs += ps.runs;
	sum->ps.steals += ps.steals;
	sum->ps.parks += ps.parks;
	sum->ps.overflow += ps.overflow;
	for (int c = 0; c < b->cpu_limit; c++)
		for (int i = 0; i < HIST_BUCKETS; i++)
			sum->n[i] += b->hist[c].n[i];
}

/* One timed run; returns wall ns, or 0 on failure. */
static uint64_t run_once(struct bench *b, const struct mode *m, bool messaging, struct hist *sum)
{
	struct actor *a = NULL;
	uint64_t t0, wall = 0;
	size_t n = 0;

	b->pool = start_pool(m);
	if (!b->pool)
		return 0;
	memset(b->hist, 0, (size_t)b->cpu_limit * sizeof(*b->hist));
	a = messaging ? make_messaging(b, &n) : make_pingpong(b, &n);
	if (!a)
		goto out;
	b->left = n;
	t0 = now_ns();
	/* The senders and the first of each pair start; the others wait. */
	for (size_t i = 0; i < n; i++) {
		int err = a[i].role == 0 ? pool_wake(b->pool, &a[i].task, PLACE_CPU_NONE, 0) : 0;

		if (err < 0) {
			fprintf(stderr, "place-poolbench: pool_wake: %s\n", place_strerror(err));
			exit(1); /* tasks already running would wait forever */
		}
	}
	pthread_mutex_lock(&b->lock);
	while (__atomic_load_n(&b->left, __ATOMIC_SEQ_CST))
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	wall = now_ns() - t0;
	collect(b, sum);
out:
	pool_destroy(b->pool);
	b->pool = NULL;
	free(a);
	return wall;
}

static uint64_t percentile(const struct hist *h, double q)
{
	uint64_t total = 0, seen = 0, want;

	for (int i = 0; i < HIST_BUCKETS; i++)
		total += h->n[i];
	if (!total)
		return 0;
	want = (uint64_t)(q * (double)total + 0.999999);
	for (int i = 0; i < HIST_BUCKETS; i++) {
		seen += h->n[i];
		if (seen >= want)
			return hist_value((unsigned)i);
	}
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int parse_modes(const char *s, struct mode *m, int max)
{
	static const struct mode known[] = {
		{ "sis_core", POOL_WAKE_PLACE, PLACE_POLICY_SIS_CORE },
		{ "linear", POOL_WAKE_PLACE, PLACE_POLICY_LINEAR },
		{ "exact", POOL_WAKE_PLACE, PLACE_POLICY_EXACT },
		{ "lifo", POOL_WAKE_LIFO, 0 },
	};
	int n = 0;

	while (*s && n < max) {
		size_t len = strcspn(s, ",");
		bool ok = false;

		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (opt_word_is(s, len, known[k].name)) {
				m[n++] = known[k];
				ok = true;
			}
		if (!ok)
			return -EINVAL;
		s += len;
		if (*s == ',')
			s++;
	}
	return n;
}

struct opts {
	const char *modes;
	int repeat;
	bool tsv;
	bool only_messaging, only_pingpong;
	bool callgrind;
	char self[4096];  /* this program, for --callgrind */
};

/* --callgrind's runs: at most this many loops (messaging) or hops (pingpong) */
#define CG_LOOPS 200
#define CG_HOPS 20000

/* Instructions per unit of mode m on the workload, from one smaller run of
 * this program under callgrind (threads serialised: deterministic for
 * pingpong, within a few per cent for messaging); -1 when it failed. */
static double callgrind_per_unit(const struct opts *o, const struct bench *b, const struct mode *m,
				 bool messaging)
{
	int loops = b->loops < CG_LOOPS ? b->loops : CG_LOOPS, hops = b->hops < CG_HOPS ? b->hops : CG_HOPS;
	uint64_t units = messaging ? (uint64_t)b->groups * b->senders * b->receivers * loops
				   : (uint64_t)b->pairs * 2 * hops;
	char out[64], cmd[8192], line[256];
	unsigned long long ir = 0;
	bool got = false;
	FILE *f;

	snprintf(out, sizeof(out), "/tmp/place-poolbench.%d.cg", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "valgrind --tool=callgrind --toggle-collect=worker_main --callgrind-out-file=%s '%s' "
		 "--modes %s --workload %s --repeat 1 --groups %d --senders %d --receivers %d --loops %d "
		 "--pairs %d --hops %d --format tsv >/dev/null 2>&1",
		 out, o->self, m->name, messaging ? "messaging" : "pingpong", b->groups, b->senders,
		 b->receivers, loops, b->pairs, hops);
	if (system(cmd) != 0 || !(f = fopen(out, "r"))) {
		unlink(out);
		return -1;
	}
	while (!got && fgets(line, sizeof(line), f))
		got = sscanf(line, "summary: %llu", &ir) == 1;
	fclose(f);
	unlink(out);
	return got && units ? (double)ir / (double)units : -1;
}

static void print_row(const struct opts *o, const char *wl, const struct mode *m, uint64_t *walls,
		      const struct hist *h, uint64_t units, const uint64_t *ref_wall, double ir)
{
	char irs[32] = "";

	if (o->callgrind)
		snprintf(irs, sizeof(irs), o->tsv ? "\t%.0f" : " %8.0f", ir);
	uint64_t med;

	qsort(walls, (size_t)o->repeat, sizeof(*walls), cmp_u64);
	med = walls[o->repeat / 2];
	if (o->tsv) {
		printf("%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		       "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "%s\n", wl, m->name, med, walls[0], walls[o->repeat - 1],
		       percentile(h, 0.5), percentile(h, 0.99), percentile(h, 0.999), h->ps.runs, h->ps.steals,
		       h->ps.parks, irs);
		return;
	}
	printf("%-10s %-9s %9.2f %9.2f %9.2f %11.0f %+7.1f%% %9.1f %9.1f %9.1f %8.0f %6.1f%% %8.0f%s\n", wl, m->name,
	       med / 1e6, walls[0] / 1e6, walls[o->repeat - 1] / 1e6, (double)units * 1e9 / (double)med,
	       ref_wall ? ((double)*ref_wall / (double)med - 1.0) * 100.0 : 0.0, percentile(h, 0.5) / 1e3,
	       percentile(h, 0.99) / 1e3, percentile(h, 0.999) / 1e3, (double)h->ps.runs / o->repeat,
	       h->ps.runs ? 100.0 * (double)h->ps.steals / (double)h->ps.runs : 0.0,
	       (double)h->ps.parks / o->repeat, irs);
}

static int run_workload(struct bench *b, const struct opts *o, const struct mode *m, int nm, bool messaging)
{
	uint64_t walls[MAX_MODES][64], ref = 0;
	struct hist *h = calloc((size_t)nm, sizeof(*h));
	uint64_t units = messaging ? (uint64_t)b->groups * b->senders * b->receivers * b->loops
				   : (uint64_t)b->pairs * 2 * b->hops;

	if (!h)
		return -ENOMEM;
	/* Interleave the modes so that drift on a shared VM hits all alike. */
	for (int r = 0; r < o->repeat; r++)
		for (int k = 0; k < nm; k++) {
			walls[k][r] = run_once(b, &m[k], messaging, &h[k]);
			if (!walls[k][r]) {
				free(h);
				return -EIO;
			}
		}
	for (int k = 0; k < nm; k++) {
		double ir = o->callgrind ? callgrind_per_unit(o, b, &m[k], messaging) : -1;

		print_row(o, messaging ? "messaging" : "pingpong", &m[k], walls[k], &h[k], units, k ? &ref : NULL, ir);
		if (!k)
			ref = walls[0][o->repeat / 2];
	}
	free(h);
	return 0;
}

static const char usage[] =
	"usage: place-poolbench [--modes sis_core,lifo] [--repeat N] [--format table|tsv]\n"
	"                       [--workload messaging|pingpong|both]\n"
	"                       [--groups G --senders S --receivers R --loops M] [--pairs P --hops N]\n"
	"                       [--callgrind]\n"
	"modes: sis_core linear exact (libplace policies) lifo (most recently parked worker)\n"
	"  --callgrind  also instructions per unit (Ir/unit): each workload and mode once more\n"
	"               under valgrind --tool=callgrind, with at most 200 loops or 20000 hops\n"
	"  --help, --version\n";

static const struct option long_opts[] = {
	{ "modes", required_argument, NULL, 'm' },   { "repeat", required_argument, NULL, 'r' },
	{ "format", required_argument, NULL, 'f' },  { "workload", required_argument, NULL, 'w' },
	{ "groups", required_argument, NULL, 'g' },  { "senders", required_argument, NULL, 's' },
	{ "receivers", required_argument, NULL, 'R' }, { "loops", required_argument, NULL, 'l' },
	{ "pairs", required_argument, NULL, 'p' },   { "hops", required_argument, NULL, 'n' },
	{ "callgrind", no_argument, NULL, 'c' },
	OPT_COMMON_LONGOPTS,                         { NULL, 0, NULL, 0 },
};

/* One option: 0, or -1 after a message naming it. */
static int parse_opt(int c, const char *arg, struct opts *o, struct bench *b)
{
	static const char *const formats[] = { "table", "tsv" },
			  *const workloads[] = { "both", "messaging", "pingpong" };
	int *const num[] = { &o->repeat, &b->groups, &b->senders, &b->receivers, &b->loops, &b->pairs, &b->hops };
	const char *const keys = "rgsRlpn", *k = c > 0 ? strchr(keys, c) : NULL;
	int i;

	if (k && *k)
		return opt_int("place-poolbench", opt_long_name(long_opts, c), arg, 1, c == 'r' ? 64 : 1000000000,
			       num[k - keys]);
	if (c == 'm') {
		o->modes = arg;
		return 0;
	}
	if (c == 'c') {
		ssize_t len = readlink("/proc/self/exe", o->self, sizeof(o->self) - 1);

		o->callgrind = len > 0;
		o->self[len > 0 ? len : 0] = '\0';
		return len > 0 ? 0 : -1;
	}
	if (c == 'f' && (i = opt_choice("place-poolbench", "format", arg, formats, 2)) >= 0) {
		o->tsv = i == 1;
		return 0;
	}
	if (c == 'w' && (i = opt_choice("place-poolbench", "workload", arg, workloads, 3)) >= 0) {
		o->only_messaging = i == 1;
		o->only_pingpong = i == 2;
		return 0;
	}
	return -1;
}

static int parse_args(int argc, char **argv, struct opts *o, struct bench *b)
{
	int c;

	while ((c = opt_next("place-poolbench", argc, argv, long_opts, usage, 0)) != -1)
		if (parse_opt(c, optarg, o, b) < 0)
			return -EINVAL;
	return 0;
}

/* What a machine with one LLC and no SMT (a small VM) cannot show. */
static void small_machine_note(const place_topo *topo)
{
	int cpus = place_topo_nr_cpus(topo), cores = place_topo_nr_cores(topo), llcs = place_topo_nr_llcs(topo);

	if (llcs > 1 || cores < cpus)
		return;
	printf("# note: %d CPU%s, one LLC, no SMT: any idle CPU is as good as another, so placement has\n"
	       "# nothing to win here. The rows compare the wake paths' costs (libplace's decision and\n"
	       "# claim vs a LIFO pop) and their park/unpark patterns, on a machine shared with others\n"
	       "# (noisy). Idle-core, LLC and NUMA effects need a bigger machine, or place-sim.\n",
	       cpus, cpus == 1 ? "" : "s");
}

static const char legend[] =
	"  units/s: messages (messaging) or hops (pingpong) per second; vs: throughput against the\n"
	"  first mode of the workload; wall, min, max: ms per repeat (median, fastest, slowest);\n"
	"  p50..p999_us: wakeup latency, pool_wake to the task's start; runs: task runs per repeat;\n"
	"  stolen: share of runs taken from another worker's queue; parks: worker sleeps per repeat\n";

static void print_header(const struct opts *o, const struct bench *b, const place_topo *topo)
{
	printf("# place-poolbench on %s: %d CPU%s; messaging %d groups x %d senders x %d receivers x %d loops;"
	       " pingpong %d pairs x %d hops; median of %d\n",
	       place_topo_source(topo), place_topo_nr_cpus(topo), place_topo_nr_cpus(topo) == 1 ? "" : "s",
	       b->groups, b->senders, b->receivers, b->loops,
	       b->pairs, b->hops, o->repeat);
	if (!o->tsv)
		small_machine_note(topo);
	if (o->tsv)
		printf("workload\tmode\twall_ns\twall_min_ns\twall_max_ns\tlat_p50_ns\tlat_p99_ns\tlat_p999_ns"
		       "\truns\tsteals\tparks%s\n", o->callgrind ? "\tir_per_unit" : "");
	else
		printf("%-10s %-9s %9s %9s %9s %11s %8s %9s %9s %9s %8s %7s %8s%s\n", "workload", "mode", "wall_ms",
		       "min_ms", "max_ms", "units/s", "vs", "p50_us", "p99_us", "p999_us", "runs", "stolen",
		       "parks", o->callgrind ? "  Ir/unit" : "");
}

int main(int argc, char **argv)
{
	struct bench b = { .groups = 4, .senders = 10, .receivers = 10, .loops = 2000, .pairs = 0, .hops = 50000 };
	struct opts o = { .modes = "sis_core,lifo", .repeat = 3 };
	struct mode modes[MAX_MODES];
	place_topo *topo;
	int nm, err;

	if (parse_args(argc, argv, &o, &b) < 0)
		return 2;
	nm = parse_modes(o.modes, modes, MAX_MODES);
	if (nm <= 0) {
		fprintf(stderr, "place-poolbench: bad value '%s' for --modes: want a list of sis_core linear "
			"exact lifo\n", o.modes);
		return 2;
	}
	err = place_topo_load(&topo, NULL);
	if (err < 0) {
		fprintf(stderr, "place-poolbench: %s %s\n", place_strerror(err), place_last_error());
		return 1;
	}
	b.cpu_limit = place_topo_cpu_limit(topo);
	if (!b.pairs)
		b.pairs = place_topo_nr_cpus(topo);
	print_header(&o, &b, topo);
	place_topo_free(topo);
	b.hist = aligned_alloc(64, (size_t)b.cpu_limit * sizeof(*b.hist));
	if (!b.hist)
		return 1;
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	if (!o.only_pingpong)
		err = run_workload(&b, &o, modes, nm, true);
	if (!err && !o.only_messaging)
		err = run_workload(&b, &o, modes, nm, false);
	if (!err && !o.tsv)
		fputs(legend, stdout);
	if (!err && !o.tsv && o.callgrind)
		printf("  Ir/unit: instructions per message or hop in the workers' threads (callgrind, one\n"
		       "  run of at most %d loops or %d hops; -1: valgrind failed)\n", CG_LOOPS, CG_HOPS);
	free(b.hist);
	pthread_mutex_destroy(&b.lock);
	pthread_cond_destroy(&b.cond);
	return err ? 1 : 0;
}
