/*
 * place-ultbench: the example ULT runtime (examples/ult.c) with libplace
 * beside its LIFO build (no libplace: wake the most recently parked
 * worker), on three workloads, the two modes taking turns in one run so
 * that the machine's noise falls on both:
 *   fib        fork-join fib(N): a ULT per call, the parent joins its child
 *   pingpong   P pairs of ULTs passing a future R times, each set a
 *              hand-off (ULT_HANDOFF: PLACE_WAKE_CURRENT + place_run_switch)
 *   short      a root spawns N ULTs that each yield once, then joins them
 * Prints the median wall time of each mode over --runs and the ratio
 * lifo/place (above 1: libplace faster), with the runtime's counters.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ult.h"

struct opts {
	const char *topology;
	int workers, runs, fib, pairs, rounds, nshort, no_pin;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the workloads ------------------------------------------------------ */

struct fib {
	ult_rt *rt;
	int n;
	long r;
};

static void fib_ult(ult *self, void *arg)
{
	struct fib *f = arg, a = { f->rt, f->n - 1, 0 }, b = { f->rt, f->n - 2, 0 };
	ult *c;

	if (f->n < 2) {
		f->r = f->n;
		return;
	}
	c = ult_spawn(self, f->rt, fib_ult, &a);
	fib_ult(self, &b);
	ult_join(self, c);
	f->r = a.r + b.r;
}

struct pair {
	ult_future f[2];
	int rounds;
};

struct side {
	struct pair *p;
	int me;
};

static void side_ult(ult *self, void *arg)
{
	struct side *s = arg;
	ult_future *mine = &s->p->f[s->me], *other = &s->p->f[1 - s->me];

	for (int r = 0; r < s->p->rounds; r++) {
		if (s->me == 1 || r > 0) {
			ult_future_get(self, mine);
			ult_future_destroy(mine);
			ult_future_init(mine);
		}
		ult_future_set(self, other, NULL, ULT_HANDOFF);
	}
}

static void short_ult(ult *self, void *arg)
{
	ult_yield(self);
}

struct spawner {
	ult_rt *rt;
	int n;
	ult **kids;
};

static void spawner_ult(ult *self, void *arg)
{
	struct spawner *s = arg;

	for (int i = 0; i < s->n; i++)
		s->kids[i] = ult_spawn(self, s->rt, short_ult, NULL);
	for (int i = 0; i < s->n; i++)
		ult_join(self, s->kids[i]);
}

/* One workload once on rt. Returns ns. */
static uint64_t run_one(ult_rt *rt, int w, const struct opts *o)
{
	uint64_t t0 = now_ns();

	if (w == 0) {
		struct fib f = { rt, o->fib, 0 };

		ult_join(NULL, ult_spawn(NULL, rt, fib_ult, &f));
	} else if (w == 1) {
		struct pair *p = calloc((size_t)o->pairs, sizeof(*p));
		struct side *s = calloc((size_t)o->pairs * 2, sizeof(*s));
		ult **u = calloc((size_t)o->pairs * 2, sizeof(*u));

		for (int i = 0; i < o->pairs; i++) {
			ult_future_init(&p[i].f[0]);
			ult_future_init(&p[i].f[1]);
			p[i].rounds = o->rounds;
			for (int k = 0; k < 2; k++) {
				s[2 * i + k] = (struct side){ &p[i], k };
				u[2 * i + k] = ult_spawn(NULL, rt, side_ult, &s[2 * i + k]);
			}
		}
		for (int i = 0; i < 2 * o->pairs; i++)
			ult_join(NULL, u[i]);
		for (int i = 0; i < o->pairs; i++) {
			ult_future_destroy(&p[i].f[0]);
			ult_future_destroy(&p[i].f[1]);
		}
		free(p);
		free(s);
		free(u);
	} else {
		struct spawner sp = { rt, o->nshort, calloc((size_t)o->nshort, sizeof(ult *)) };

		ult_join(NULL, ult_spawn(NULL, rt, spawner_ult, &sp));
		free(sp.kids);
	}
	return now_ns() - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const char *const wname[] = { "fib", "pingpong", "short" };

#define PROG "place-ultbench"

static const char usage[] =
	"usage: place-ultbench [options]\n"
	"  --topology SRC  place_topo_load() source, e.g. synthetic:... or xml:FILE\n"
	"                  (default: this machine, or PLACE_TOPOLOGY)\n"
	"  --workers N     at most N workers, on the first CPUs (default 0: one per CPU)\n"
	"  --runs N        runs of each mode per workload, 1..99; the median is shown\n"
	"                  (default 7)\n"
	"  --fib N         fib: fork-join fib(N) (default 20)\n"
	"  --pairs P       pingpong: P pairs of ULTs (default 2)\n"
	"  --rounds R      pingpong: R hand-offs each way per pair (default 20000)\n"
	"  --short N       short: N ULTs that each yield once (default 20000)\n"
	"  --no-pin        do not pin the workers (default: pinned)\n"
	"  --help, --version\n";

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "topology", required_argument, 0, 't' }, { "workers", required_argument, 0, 'w' },
		{ "runs", required_argument, 0, 'r' },     { "fib", required_argument, 0, 'f' },
		{ "pairs", required_argument, 0, 'p' },    { "rounds", required_argument, 0, 'R' },
		{ "short", required_argument, 0, 's' },    { "no-pin", no_argument, 0, 'n' },
		{ "help", no_argument, 0, 'h' },           { "version", no_argument, 0, 'V' },
		{ 0, 0, 0, 0 }
	};
	struct opts o = { NULL, 0, 7, 20, 2, 20000, 20000, 0 };
	int c;

	opterr = 0; /* one line naming the option, as the other tools (tools/opt.c) */
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (c) {
		case 't': o.topology = optarg; break;
		case 'w': o.workers = atoi(optarg); break;
		case 'r': o.runs = atoi(optarg); break;
		case 'f': o.fib = atoi(optarg); break;
		case 'p': o.pairs = atoi(optarg); break;
		case 'R': o.rounds = atoi(optarg); break;
		case 's': o.nshort = atoi(optarg); break;
		case 'n': o.no_pin = 1; break;
		case 'h': fputs(usage, stdout); return 0;
		case 'V': /* as tools/opt.c's --version */
			printf("%s (libplace) %s, library %s\n", PROG, PACKAGE_VERSION,
			       place_version_string());
			return 0;
		default:
			if (c == ':')
				fprintf(stderr, PROG ": option '%s' needs a value (see --help)\n",
					argv[optind - 1]);
			else
				fprintf(stderr, PROG ": unknown option '%s' (see --help)\n",
					argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	if (o.runs < 1 || o.runs > 99)
		o.runs = 7;
	printf("%-9s %12s %12s %8s   %s\n", "workload", "place_ms", "lifo_ms", "lifo/pl",
	       "place: runs switches steals parks | lifo: the same");
	for (int w = 0; w < 3; w++) {
		uint64_t t[2][99];
		struct ult_stats st[2];

		for (int k = 0; k < o.runs; k++)
			for (int m = 0; m < 2; m++) { /* the modes take turns */
				struct ult_config cfg = { .topology = o.topology, .mode = (k & 1) ? 1 - m : m,
							  .max_workers = o.workers, .no_pin = o.no_pin };
				ult_rt *rt;

				if (ult_rt_create(&rt, &cfg))
					return 1;
				t[cfg.mode][k] = run_one(rt, w, &o);
				ult_stats_read(rt, &st[cfg.mode]);
				ult_rt_destroy(rt);
			}
		qsort(t[0], (size_t)o.runs, sizeof(uint64_t), cmp_u64);
		qsort(t[1], (size_t)o.runs, sizeof(uint64_t), cmp_u64);
		printf("%-9s %12.3f %12.3f %8.2f   %llu %llu %llu %llu | %llu %llu %llu %llu\n", wname[w],
		       t[0][o.runs / 2] / 1e6, t[1][o.runs / 2] / 1e6,
		       (double)t[1][o.runs / 2] / (double)t[0][o.runs / 2],
		       (unsigned long long)st[0].runs, (unsigned long long)st[0].switches,
		       (unsigned long long)st[0].steals, (unsigned long long)st[0].parks,
		       (unsigned long long)st[1].runs, (unsigned long long)st[1].switches,
		       (unsigned long long)st[1].steals, (unsigned long long)st[1].parks);
	}
	return 0;
}
