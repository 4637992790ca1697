/*
 * The smallest complete libplace program: load a topology, create an
 * instance, register a worker per CPU, run a wakeup loop, print statistics.
 *
 *   examples/minimal                      this machine (or $PLACE_TOPOLOGY)
 *   examples/minimal 'synthetic:pack:1 l3:1 core:4 pu:2'
 *
 * To stay short, one thread plays every worker in turn: it tells libplace
 * what each worker does (runs a task, parks) and follows libplace's answers.
 * A real pool runs one pinned thread per CPU and calls the same functions;
 * examples/pool.c is one.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <place.h>

#define NR_TASKS 6
#define ROUNDS 1000

struct task {
	place_task rec; /* libplace's record, embedded in the runtime's task */
	int id;
};

static int check(int err, const char *what)
{
	if (err < 0) {
		fprintf(stderr, "minimal: %s: %s (%s)\n", what, place_strerror(err), place_last_error());
		exit(1);
	}
	return err;
}

int main(int argc, char **argv)
{
	place_topo *topo;
	place *p;
	place_stats st;
	struct task task[NR_TASKS];
	int where[NR_TASKS];

	check(place_topo_load(&topo, argc > 1 ? argv[1] : NULL), "place_topo_load");
	check(place_create(&p, topo, NULL), "place_create"); /* NULL: SIS_CORE, every feature */
	for (int i = 0; i < place_topo_nr_cpus(topo); i++)
		check(place_worker_register(p, place_topo_cpu(topo, i), 0), "place_worker_register");
	for (int k = 0; k < NR_TASKS; k++) {
		task[k].id = k;
		place_task_init(&task[k].rec, 0, 0);
		/* a new task: libplace picks an idle CPU and claims it for the task */
		where[k] = check(place_wakeup(p, &task[k].rec, PLACE_CPU_NONE, PLACE_WAKE_NEW), "place_wakeup");
	}

	for (int round = 0; round < ROUNDS; round++) {
		int k = round % NR_TASKS, cpu = where[k];

		/* the worker of cpu takes task k from its queue and runs it (the claim ends) */
		check(place_run_begin(p, cpu, &task[k].rec), "place_run_begin");
		/* ... the task blocks on I/O ... */
		check(place_run_end(p, cpu, &task[k].rec, PLACE_RUN_SLEEP), "place_run_end");
		/* the worker's queue is empty: it parks */
		check(place_idle_enter(p, cpu), "place_idle_enter");
		/* the I/O completes; an I/O thread (not a worker) wakes the task */
		where[k] = check(place_wakeup(p, &task[k].rec, PLACE_CPU_NONE, 0), "place_wakeup");
	}

	check(place_stats_read(p, -1, &st), "place_stats_read");
	printf("%s: %d CPUs, %d LLCs\n", place_topo_source(topo), place_topo_nr_cpus(topo),
	       place_topo_nr_llcs(topo));
	/* Every wakeup counts in exactly one hit_* level, so the levels add up to
	 * wakeups (hit_cluster aside: a share of the idle core, idle cpu and
	 * sibling hits). The target is the CPU wake-affine chose: prev, or the
	 * waker's CPU; with PLACE_CPU_NONE it is always prev, so the "prev" level
	 * (prev idle when the target was the waker's CPU) stays 0 here. */
	const struct {
		const char *label;
		uint64_t n;
	} level[] = {
		{ "target", st.hit_target },       { "prev", st.hit_prev },
		{ "recent", st.hit_recent },       { "prev's SMT sibling", st.hit_prev_smt },
		{ "idle core", st.hit_idle_core }, { "idle cpu", st.hit_idle_cpu },
		{ "sibling rescan", st.hit_sibling }, { "beyond the LLC", st.hit_widened },
		{ "stacked", st.hit_fallback },
	};
	printf("wakeups %llu =", (unsigned long long)st.wakeups);
	for (size_t i = 0; i < sizeof(level) / sizeof(level[0]); i++)
		printf("%s %s %llu", i ? " +" : "", level[i].label, (unsigned long long)level[i].n);
	printf(" (of the scan hits, %llu in the target's cluster)\n",
	       (unsigned long long)st.hit_cluster);
	printf("%llu claims, %.2f CPUs probed per wakeup\n", (unsigned long long)st.claims,
	       (double)st.cpus_probed / (double)st.wakeups);
	place_destroy(p);
	place_topo_free(topo);
	return 0;
}
