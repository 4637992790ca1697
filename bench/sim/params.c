/*
 * Default parameters, and the mapping from a workload name to the workloads
 * it enables and the parameter its load sweep varies.
 *
 * The defaults are chosen to keep runs bounded (a Zen3 sweep of all policies
 * in seconds), not to match one benchmark's absolute numbers: what the
 * simulator compares is policies against each other on the same work.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "sim.h"

void sim_params_default(struct sim_params *p)
{
	memset(p, 0, sizeof(*p));
	p->smt_permille = 600;       /* two busy siblings: 0.6 of full speed each */
	p->wake_ns = 4000;           /* futex wake of a parked worker, idle-state exit */
	p->llc_penalty_ns = 5000;    /* refill a small working set from another L3 */
	p->node_penalty_ns = 15000;  /* ... from the other socket */
	p->decision_ns = 50;         /* the policy's fixed cost, paid by the waker */
	p->probe_ns = 15;            /* one remote per-CPU cache line per CPU probed */
	p->slice_ns = 3000000;       /* base scheduling slice before preemption */
	p->jitter_pct = 20;
	p->seed = 1;
	p->enabled[SIM_WL_HACKBENCH] = true;
	p->hb_groups = 4;            /* perf bench sched messaging -g */
	p->hb_senders = 20;          /* its default 20 senders and 20 receivers per group */
	p->hb_receivers = 20;
	p->hb_loops = 10;            /* -l: messages per sender per receiver (100 there) */
	p->hb_pipe = 16;             /* messages a pipe holds before the writer sleeps */
	p->hb_send_ns = 1500;
	p->hb_recv_ns = 1500;
	p->sb_msg_threads = 2;       /* schbench -m */
	p->sb_workers = 16;          /* -t: workers per message thread */
	p->sb_rounds = 100;
	p->sb_work_ns = 20000;
	p->sb_msg_ns = 2000;
	p->pp_pairs = 16;
	p->pp_rounds = 2000;
	p->pp_run_ns = 2000;
	p->st_threads = 0;           /* 0: one per core of the machine */
	p->st_iters = 40;
	p->st_burst_ns = 200000;
	p->tn_tenants = 4;           /* cookies 1..4 */
	p->tn_tasks = 16;            /* per tenant */
	p->tn_rounds = 40;
	p->tn_work_ns = 50000;       /* a request's CPU time ... */
	p->tn_sleep_ns = 50000;      /* ... and the wait for the next one */
	p->gr_groups = 8;
	p->gr_tasks = 16;            /* threads per group (address space) */
	p->gr_tokens = 8;            /* messages in flight in each group */
	p->gr_hops = 100;            /* hops per message */
	p->gr_work_ns = 10000;
	p->gr_xnode_ns = 4000;       /* the message and the group's data from another node */
	p->numa_cooldown_ns = 10000000; /* libplace's defaults */
	p->numa_move_cap = 4;
}

static const struct {
	const char *name;
	unsigned mask; /* bits of enum sim_wl_kind */
	const char *load; /* what --load varies */
} workloads[] = {
	{ "hackbench", 1u << SIM_WL_HACKBENCH, "groups" },
	{ "schbench", 1u << SIM_WL_SCHBENCH, "workers" },
	{ "pingpong", 1u << SIM_WL_PINGPONG, "pairs" },
	{ "stream", 1u << SIM_WL_STREAM, "threads" },
	{ "mix", 0xfu, "groups" },
	{ "tenants", 1u << SIM_WL_TENANTS, "tenant-tasks" },
	{ "groups", 1u << SIM_WL_GROUPS, "numa-groups" },
};

/* The parameter each load name sweeps. */
static int *load_param(struct sim_params *p, const char *load_name)
{
	static const char *const names[] = { "groups", "workers", "pairs", "threads", "tenant-tasks",
					     "numa-groups" };
	int *const params[] = { &p->hb_groups, &p->sb_workers, &p->pp_pairs, &p->st_threads, &p->tn_tasks,
				&p->gr_groups };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(load_name, names[i]))
			return params[i];
	return &p->st_threads;
}

int sim_workload_select(struct sim_params *p, const char *name, const char **load_name)
{
	for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
		if (strcmp(name, workloads[i].name))
			continue;
		for (int k = 0; k < SIM_WL_NR; k++)
			p->enabled[k] = workloads[i].mask & (1u << k);
		*load_name = workloads[i].load;
		return (int)i;
	}
	return -EINVAL;
}

void sim_set_load(struct sim_params *p, const char *load_name, int value)
{
	*load_param(p, load_name) = value;
}

int sim_get_load(struct sim_params *p, const char *load_name)
{
	return *load_param(p, load_name);
}
