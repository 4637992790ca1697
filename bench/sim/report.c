/*
 * Output: a readable table, TSV (one header line) or JSON. Rows come one
 * per (load, policy); "vs" compares throughput with the first policy of the
 * same load level.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

static double per(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static double throughput(const struct sim_result *r)
{
	return r->makespan_ns ? (double)r->units * 1e9 / (double)r->makespan_ns : 0.0;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

int sim_report_name_width(const struct sim_policy_spec *pol, int np)
{
	int w = 22;

	for (int i = 0; i < np; i++)
		if ((int)strlen(pol[i].name) > w)
			w = (int)strlen(pol[i].name);
	return w;
}

void sim_report_header(FILE *f, int fmt, const char *what, int name_w)
{
	switch (fmt) {
	case SIM_FMT_NONE:
		fprintf(f, "# %s\n", what);
		break;
	case SIM_FMT_TABLE:
		fprintf(f, "# %s\n", what);
		fprintf(f, "%5s %-*s %9s %11s %7s %8s %8s %8s %5s %7s %8s %8s %7s %7s %6s %7s %5s %6s\n",
			"load", name_w, "policy", "time_ms", "work/s", "vs", "p50_us", "p99_us", "p999_us",
			"util", "icmiss%", "stack", "stackany", "xllc", "xnode", "probe", "fpos", "lost", "ns/dec");
		break;
	case SIM_FMT_BRIEF:
		fprintf(f, "# %s\n", what);
		fprintf(f, "%5s %-*s %9s %7s %8s %5s %7s %6s %7s %6s\n", "load", name_w, "policy", "time_ms",
			"vs", "p99_us", "util", "icmiss%", "stack", "xllc", "probe");
		break;
	case SIM_FMT_COOKIES:
		fprintf(f, "# %s\n", what);
		fprintf(f, "%5s %-*s %9s %7s %8s %8s %6s %5s %8s %8s %7s %6s %8s %8s %9s\n", "load", name_w,
			"policy", "time_ms", "vs", "p99_us", "max_ms", "spread", "util", "forced%", "refused", "moved",
			"turns", "fallback", "viol", "viol_us");
		break;
	case SIM_FMT_NUMA:
		fprintf(f, "# %s\n", what);
		fprintf(f, "%5s %-*s %9s %7s %8s %5s %7s %7s %6s %7s %7s %6s %6s\n", "load", name_w, "policy",
			"time_ms", "vs", "p99_us", "util", "xwake%", "xnode", "imbal%", "moves", "kept", "cool",
			"cap");
		break;
	case SIM_FMT_EXITS:
		fprintf(f, "# %s\n", what);
		fprintf(f, "%5s %-*s %9s %7s %4s %6s %7s %6s %4s %6s %8s %8s %8s %8s %8s\n", "load", name_w, "policy",
			"time_ms", "vs", "role", "tasks", "sleeps", "run_ms", "smt%", "paired", "first_ms", "p10_ms",
			"p50_ms", "p90_ms", "last_ms");
		break;
	case SIM_FMT_TSV:
		fprintf(f, "load\tpolicy\tok\ttime_ns\tunits\twork_per_s\tvs_first\tlat_p50_ns\tlat_p99_ns"
			   "\tlat_p999_ns\tlat_max_ns\tutil\truns\tidle_core_misses\tstack_llc\tstack_any"
			   "\tcross_llc\tcross_node\twakeups\tprobes_per_wakeup\tfalse_positives"
			   "\tlost_claims\thit_fallback\tsteals\thost_ns_per_decision\ttasks\texited"
			   "\tsent\tdelivered\tevents\thit_prev_smt\tclaims\tclaims_stolen\tfail_prone_marks"
			   "\trefusals\tforced_ns\tviolations\tviolation_ns\txnode_wakeups\tnode_imbalance"
			   "\tcookie_refusals\tforced_idle_ns\tcookie_fallbacks\tnuma_moves\tnuma_kept"
			   "\tnuma_cooldown_skips\tnuma_cap_skips\trole_spread\n");
		break;
	default:
		fprintf(f, "{\"run\": ");
		json_string(f, what);
		fprintf(f, ",\n \"results\": [");
		break;
	}
}

static void row_table(FILE *f, int name_w, const struct sim_result *r, double vs)
{
	fprintf(f, "%5d %-*s %9.3f %11.0f %+6.1f%% %8.1f %8.1f %8.1f %4.0f%% %6.2f%% %8" PRIu64
		   " %8" PRIu64 " %7" PRIu64 " %7" PRIu64 " %6.2f %7" PRIu64 " %5" PRIu64 " %6.0f%s\n",
		r->load, name_w, r->policy, (double)r->makespan_ns / 1e6, throughput(r), vs * 100.0,
		(double)r->lat_p50 / 1e3, (double)r->lat_p99 / 1e3, (double)r->lat_p999 / 1e3,
		r->util * 100.0, 100.0 * per(r->idle_core_misses, r->run_starts), r->stack_llc,
		r->stack_any, r->cross_llc, r->cross_node, per(r->st.cpus_probed, r->st.wakeups),
		r->st.false_positives, r->st.lost_claims, per(r->host_ns, r->decisions),
		r->ok ? "" : "  (incomplete)");
}

static void row_brief(FILE *f, int name_w, const struct sim_result *r, double vs)
{
	fprintf(f, "%5d %-*s %9.3f %+6.1f%% %8.1f %4.0f%% %6.2f%% %6" PRIu64 " %7" PRIu64 " %6.2f%s\n",
		r->load, name_w, r->policy, (double)r->makespan_ns / 1e6, vs * 100.0, (double)r->lat_p99 / 1e3,
		r->util * 100.0, 100.0 * per(r->idle_core_misses, r->run_starts), r->stack_llc, r->cross_llc,
		per(r->st.cpus_probed, r->st.wakeups), r->ok ? "" : "  (incomplete)");
}

/* One line per role (0, 1) that has exited tasks. */
static void row_exits(FILE *f, int name_w, const struct sim_result *r, double vs)
{
	for (int role = 0; role < 2; role++) {
		const uint64_t *q = r->exits[role];

		if (!q[EXIT_TASKS])
			continue;
		fprintf(f, "%5d %-*s %9.3f %+6.1f%% %4d %6" PRIu64 " %7.1f %6.3f %4.0f %6" PRIu64
			   " %8.3f %8.3f %8.3f %8.3f %8.3f%s\n",
			r->load, name_w, r->policy, (double)r->makespan_ns / 1e6, vs * 100.0, role, q[EXIT_TASKS],
			per(r->sleeps[role], q[EXIT_TASKS]), per(r->run_ns[role], q[EXIT_TASKS]) / 1e6,
			100.0 * per(r->smt_ns[role], r->run_ns[role]), r->paired[role], (double)q[EXIT_FIRST] / 1e6,
			(double)q[EXIT_P10] / 1e6, (double)q[EXIT_P50] / 1e6, (double)q[EXIT_P90] / 1e6,
			(double)q[EXIT_LAST] / 1e6,
			r->ok ? "" : "  (incomplete)");
	}
}

/* CPU time forced idle, in per cent of all CPU time. */
static double forced_pct(const struct sim_result *r, int nr_cpus)
{
	return 100.0 * per(r->forced_ns, r->makespan_ns * (uint64_t)nr_cpus);
}

static void row_cookies(FILE *f, int name_w, const struct sim_result *r, double vs)
{
	fprintf(f, "%5d %-*s %9.3f %+6.1f%% %8.1f %8.3f %6.2f %4.0f%% %7.2f%% %8" PRIu64 " %7" PRIu64 " %6" PRIu64
		   " %8" PRIu64 " %8" PRIu64 " %9.1f%s\n",
		r->load, name_w, r->policy, (double)r->makespan_ns / 1e6, vs * 100.0, (double)r->lat_p99 / 1e3,
		(double)r->lat_max / 1e6, r->role_spread, r->util * 100.0, forced_pct(r, r->nr_cpus), r->st.cookie_refusals,
		r->replaced, r->st.cookie_turns, r->st.cookie_fallbacks, r->violations,
		(double)r->violation_ns / 1e3, r->ok ? "" : "  (incomplete)");
}

static void row_numa(FILE *f, int name_w, const struct sim_result *r, double vs)
{
	fprintf(f, "%5d %-*s %9.3f %+6.1f%% %8.1f %4.0f%% %6.2f%% %7" PRIu64 " %5.1f%% %7" PRIu64 " %7" PRIu64
		   " %6" PRIu64 " %6" PRIu64 "%s\n",
		r->load, name_w, r->policy, (double)r->makespan_ns / 1e6, vs * 100.0, (double)r->lat_p99 / 1e3,
		r->util * 100.0, 100.0 * per(r->xnode_wakeups, r->wakeups), r->cross_node,
		r->node_imbalance * 100.0, r->st.numa_moves, r->st.numa_kept, r->st.numa_cooldown_skips,
		r->st.numa_cap_skips, r->ok ? "" : "  (incomplete)");
}

static void row_tsv(FILE *f, const struct sim_result *r, double vs)
{
	fprintf(f, "%d\t%s\t%d\t%" PRIu64 "\t%" PRIu64 "\t%.1f\t%.4f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		   "\t%" PRIu64 "\t%.4f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		   "\t%" PRIu64 "\t%" PRIu64 "\t%.3f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		   "\t%.1f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		   "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64,
		r->load, r->policy, r->ok, r->makespan_ns, r->units, throughput(r), vs, r->lat_p50,
		r->lat_p99, r->lat_p999, r->lat_max, r->util, r->run_starts, r->idle_core_misses,
		r->stack_llc, r->stack_any, r->cross_llc, r->cross_node, r->wakeups,
		per(r->st.cpus_probed, r->st.wakeups), r->st.false_positives, r->st.lost_claims,
		r->st.hit_fallback, r->steals, per(r->host_ns, r->decisions), r->tasks, r->exited,
		r->sent, r->delivered, r->events, r->st.hit_prev_smt, r->st.claims, r->st.claims_stolen,
		r->st.fail_prone_marks);
	fprintf(f, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%.4f\t%" PRIu64
		   "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%.4f\n",
		r->refusals, r->forced_ns, r->violations, r->violation_ns, r->xnode_wakeups, r->node_imbalance,
		r->st.cookie_refusals, r->st.forced_idle_ns, r->st.cookie_fallbacks, r->st.numa_moves,
		r->st.numa_kept, r->st.numa_cooldown_skips, r->st.numa_cap_skips, r->role_spread);
}

static void row_json(FILE *f, const struct sim_result *r, double vs, bool first)
{
	fprintf(f, "%s\n  {\"load\": %d, \"policy\": ", first ? "" : ",", r->load);
	json_string(f, r->policy);
	fprintf(f, ", \"ok\": %s, \"time_ns\": %" PRIu64 ", \"units\": %" PRIu64
		   ", \"work_per_s\": %.1f, \"vs_first\": %.4f,\n   \"lat_ns\": {\"p50\": %" PRIu64
		   ", \"p99\": %" PRIu64 ", \"p999\": %" PRIu64 ", \"max\": %" PRIu64 "}, \"util\": %.4f"
		   ", \"runs\": %" PRIu64 ", \"idle_core_misses\": %" PRIu64 ",\n   \"stack_llc\": %" PRIu64
		   ", \"stack_any\": %" PRIu64 ", \"cross_llc\": %" PRIu64 ", \"cross_node\": %" PRIu64
		   ", \"wakeups\": %" PRIu64 ", \"steals\": %" PRIu64 ", \"kicks\": %" PRIu64 ",\n",
		r->ok ? "true" : "false", r->makespan_ns, r->units, throughput(r), vs, r->lat_p50,
		r->lat_p99, r->lat_p999, r->lat_max, r->util, r->run_starts, r->idle_core_misses,
		r->stack_llc, r->stack_any, r->cross_llc, r->cross_node, r->wakeups, r->steals, r->kicks);
	fprintf(f, "   \"place\": {\"wakeups\": %" PRIu64 ", \"affine\": %" PRIu64 ", \"hit_target\": %" PRIu64
		   ", \"hit_prev\": %" PRIu64 ", \"hit_recent\": %" PRIu64 ", \"hit_idle_core\": %" PRIu64
		   ", \"hit_idle_cpu\": %" PRIu64 ", \"hit_sibling\": %" PRIu64 ", \"hit_fallback\": %" PRIu64
		   ", \"cpus_probed\": %" PRIu64 ", \"false_positives\": %" PRIu64 ", \"lost_claims\": %" PRIu64
		   ", \"hit_prev_smt\": %" PRIu64 ", \"claims\": %" PRIu64 ", \"claims_stolen\": %" PRIu64
		   ", \"claims_released\": %" PRIu64 ", \"fail_prone_marks\": %" PRIu64 ", \"idle_enters\": %" PRIu64
		   ",\n    \"cookie_refusals\": %" PRIu64 ", \"forced_idle_ns\": %" PRIu64 ", \"cookie_fallbacks\": %" PRIu64
		   ", \"numa_moves\": %" PRIu64 ", \"numa_kept\": %" PRIu64 ", \"numa_cooldown_skips\": %" PRIu64
		   ", \"numa_cap_skips\": %" PRIu64 "},\n   \"refusals\": %" PRIu64 ", \"forced_ns\": %" PRIu64
		   ", \"violations\": %" PRIu64 ", \"violation_ns\": %" PRIu64 ", \"xnode_wakeups\": %" PRIu64
		   ", \"node_imbalance\": %.4f, \"role_spread\": %.4f,\n   \"host_ns_per_decision\": %.1f, \"tasks\": %" PRIu64 ", \"exited\": %" PRIu64
		   ", \"sent\": %" PRIu64 ", \"delivered\": %" PRIu64 ", \"events\": %" PRIu64 "}",
		r->st.wakeups, r->st.affine_wakeups, r->st.hit_target, r->st.hit_prev, r->st.hit_recent,
		r->st.hit_idle_core, r->st.hit_idle_cpu, r->st.hit_sibling, r->st.hit_fallback,
		r->st.cpus_probed, r->st.false_positives, r->st.lost_claims, r->st.hit_prev_smt, r->st.claims,
		r->st.claims_stolen, r->st.claims_released, r->st.fail_prone_marks, r->st.idle_enters,
		r->st.cookie_refusals, r->st.forced_idle_ns, r->st.cookie_fallbacks, r->st.numa_moves,
		r->st.numa_kept, r->st.numa_cooldown_skips, r->st.numa_cap_skips, r->refusals, r->forced_ns,
		r->violations, r->violation_ns, r->xnode_wakeups, r->node_imbalance, r->role_spread,
		per(r->host_ns, r->decisions),
		r->tasks, r->exited, r->sent, r->delivered, r->events);
}

void sim_report_row(FILE *f, int fmt, int name_w, const struct sim_result *r, const struct sim_result *ref,
		    bool first)
{
	double vs = ref && throughput(ref) > 0 ? throughput(r) / throughput(ref) - 1.0 : 0.0;

	if (fmt == SIM_FMT_NONE)
		return;
	if (fmt == SIM_FMT_TABLE)
		row_table(f, name_w, r, vs);
	else if (fmt == SIM_FMT_BRIEF)
		row_brief(f, name_w, r, vs);
	else if (fmt == SIM_FMT_COOKIES)
		row_cookies(f, name_w, r, vs);
	else if (fmt == SIM_FMT_NUMA)
		row_numa(f, name_w, r, vs);
	else if (fmt == SIM_FMT_EXITS)
		row_exits(f, name_w, r, vs);
	else if (fmt == SIM_FMT_TSV)
		row_tsv(f, r, vs);
	else
		row_json(f, r, vs, first);
	fflush(f);
}

/* One legend under each human-readable table: what its columns mean. */
void sim_report_legend(FILE *f, int fmt, const char *load_what)
{
	static const char common[] =
		"  load: %s; vs: throughput against the first row of the same load; p99_us: 99th\n"
		"  percentile wakeup-to-run latency (virtual us); util: busy CPU time / all CPU time\n";

	if (fmt == SIM_FMT_EXITS) {
		fprintf(f, "  load: %s; vs: throughput against the first row of the same load; role:\n"
			   "  hackbench 0 senders, 1 receivers; schbench 0 message threads, 1 workers; tasks: how "
			   "many exited;\n  sleeps, run_ms: how often each went to sleep, how long it ran (means); "
			   "smt%%: the part of that\n  run time beside a busy SMT sibling; paired: tasks that ran "
			   "so more than half the time;\n  first_ms .. last_ms: when they exited (virtual ms): the "
			   "first, the 10th, 50th and 90th\n  percentile, the last (time_ms, the makespan, is the "
			   "last task's)\n",
			load_what);
		return;
	}
	if (fmt != SIM_FMT_TABLE && fmt != SIM_FMT_BRIEF && fmt != SIM_FMT_COOKIES && fmt != SIM_FMT_NUMA)
		return;
	fprintf(f, common, load_what);
	if (fmt == SIM_FMT_TABLE)
		fprintf(f, "  work/s: units of work per virtual second; p50_us, p999_us: other percentiles; "
			   "stackany: like stack, any idle CPU\n"
			   "  of the machine; xnode: wakeups moved to another NUMA node; fpos: idle hints "
			   "found busy; lost: lost claims;\n  ns/dec: host ns per decision\n");
	if (fmt == SIM_FMT_TABLE || fmt == SIM_FMT_BRIEF)
		fprintf(f, "  icmiss%%: runs started beside a busy SMT sibling while a whole core of the "
			   "LLC was idle; stack: wakeups\n  queued behind a running task while a CPU of "
			   "that LLC was idle; xllc: wakeups moved to another LLC;\n  probe: CPUs "
			   "probed per wakeup (0 for lifo and random, which keep their own idle list)\n");
	else if (fmt == SIM_FMT_COOKIES)
		fprintf(f, "  max_ms: the longest wakeup-to-run wait of any task; spread: the last exit of the "
			   "slowest tenant over\n  the fastest's (1.00: each got its share); forced%%: CPU time forced "
			   "idle (tasks waiting,\n  none allowed beside a sibling of another cookie); refused: "
			   "place_run_begin refusals; moved: refused\n  tasks that place_run_refused placed on "
			   "another CPU; turns: refusals that drained a core for a\n  cookie waiting "
			   "PLACE_COOKIE_TURN_NS; fallback: wakeups stacked on a CPU other than a fitting "
			   "target;\n  viol, viol_us: co-runs of two cookies on one core and their core time "
			   "(must be 0 with COOKIES)\n");
	else
		fprintf(f, "  xwake%%: wakeups started on another node than the waker's; xnode: moves "
			   "across nodes; imbal%%: busiest\n  node's CPU time over the mean; moves, kept, "
			   "cool, cap: libplace's NUMA moves, kept placements,\n  and moves skipped "
			   "by the cool-down and by the cap\n");
}

void sim_report_footer(FILE *f, int fmt)
{
	if (fmt == SIM_FMT_JSON)
		fprintf(f, "\n ]}\n");
}
