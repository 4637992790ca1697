/*
 * Workloads, modelled on the seeds' benchmarks. Each owns a contiguous range
 * of task ids and reacts to the end of each burst of its tasks: it sets the
 * next burst, wakes whom the real program would wake, and says whether the
 * task continues, sleeps or exits. Every run ends: each task does a fixed
 * amount of work.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "sim.h"

/* ---- hackbench ------------------------------------------------------------
 * perf bench sched messaging, process/pipe mode: G groups of S senders and R
 * receivers. Each sender writes M messages to every receiver of its group,
 * round robin; a receiver's pipe holds at most `pipe` messages, a sender
 * meeting a full pipe sleeps until the receiver reads; a receiver sleeps on
 * an empty pipe and a write wakes it. Short bursts, many-to-many wakeups.
 * Layout of group g: senders first, then receivers.                        */

struct hb {
	int *inbox;  /* [G*R] messages in each receiver's pipe */
	int *waiter; /* [G*R] head of the senders sleeping on a full pipe */
};

static int hb_nr_tasks(const struct sim_params *p)
{
	return p->hb_groups * (p->hb_senders + p->hb_receivers);
}

static int hb_start(struct sim *s, struct sim_wl *w)
{
	const struct sim_params *p = s->prm;
	int per = p->hb_senders + p->hb_receivers, nrecv = p->hb_groups * p->hb_receivers;
	struct hb *hb = calloc(1, sizeof(*hb));

	if (!hb)
		return -ENOMEM;
	w->priv = hb;
	hb->inbox = calloc((size_t)nrecv + 1, sizeof(int));
	hb->waiter = calloc((size_t)nrecv + 1, sizeof(int));
	if (!hb->inbox || !hb->waiter)
		return -ENOMEM;
	for (int i = 0; i < nrecv; i++)
		hb->waiter[i] = -1;
	for (int i = 0; i < w->n; i++) {
		struct sim_task *t = &s->task[w->first + i];

		t->peer = i / per;
		t->idx = i % per;
		t->role = t->idx < p->hb_senders ? 0 : 1;
		t->work = sim_burst(s, t->role == 0 ? p->hb_send_ns : p->hb_recv_ns);
	}
	/* The senders start; the receivers block on their empty pipes. */
	for (int i = 0; i < w->n; i++) {
		struct sim_task *t = &s->task[w->first + i];

		if (t->role == 0 && sim_wake(s, t, -1, 0) < 0)
			return s->error;
	}
	return 0;
}

static int hb_sender(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	const struct sim_params *p = s->prm;
	struct hb *hb = w->priv;
	int j = (int)(t->count % p->hb_receivers);
	int rid = t->peer * p->hb_receivers + j;
	struct sim_task *r = &s->task[w->first + t->peer * (p->hb_senders + p->hb_receivers) +
				      p->hb_senders + j];

	t->work = sim_burst(s, p->hb_send_ns);
	if (hb->inbox[rid] >= p->hb_pipe) {
		/* Full pipe: sleep until the receiver reads, then retry the write. */
		t->wait_next = hb->waiter[rid];
		hb->waiter[rid] = t->id;
		return SIM_SLEEP;
	}
	hb->inbox[rid]++;
	s->res.sent++;
	t->count++;
	if (r->state == SIM_SLEEPING && sim_wake(s, r, cpu, 0) < 0)
		return s->error;
	return t->count == (int64_t)p->hb_loops * p->hb_receivers ? SIM_EXIT : SIM_CONTINUE;
}

static int hb_receiver(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	const struct sim_params *p = s->prm;
	struct hb *hb = w->priv;
	int rid = t->peer * p->hb_receivers + (t->idx - p->hb_senders);

	t->work = sim_burst(s, p->hb_recv_ns);
	if (hb->inbox[rid] == 0)
		return SIM_SLEEP; /* woken before any write landed: cannot happen, kept safe */
	hb->inbox[rid]--;
	s->res.delivered++;
	s->res.units++;
	t->count++;
	/* A read makes room: wake every sender sleeping on this pipe. */
	while (hb->waiter[rid] >= 0) {
		struct sim_task *snd = &s->task[hb->waiter[rid]];

		hb->waiter[rid] = snd->wait_next;
		snd->wait_next = -1;
		if (sim_wake(s, snd, cpu, 0) < 0)
			return s->error;
	}
	if (t->count == (int64_t)p->hb_loops * p->hb_senders)
		return SIM_EXIT;
	return hb->inbox[rid] > 0 ? SIM_CONTINUE : SIM_SLEEP;
}

static int hb_burst_end(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	return t->role == 0 ? hb_sender(s, w, t, cpu) : hb_receiver(s, w, t, cpu);
}

static void hb_fini(struct sim_wl *w)
{
	struct hb *hb = w->priv;

	if (!hb)
		return;
	free(hb->inbox);
	free(hb->waiter);
	free(hb);
}

const struct sim_wl_ops sim_wl_hackbench = {
	.name = "hackbench",
	.nr_tasks = hb_nr_tasks,
	.start = hb_start,
	.burst_end = hb_burst_end,
	.fini = hb_fini,
};

/* ---- schbench --------------------------------------------------------------
 * M message threads, each waking its W workers; a worker does a fixed amount
 * of work and replies; the last reply wakes the message thread, which starts
 * the next round. The wakeup latency percentiles are the figure of merit.
 * Layout of message thread m: the thread, then its workers. aux of the
 * message thread counts the replies of the current round.                  */

static int sb_nr_tasks(const struct sim_params *p)
{
	return p->sb_msg_threads * (1 + p->sb_workers);
}

static int sb_start(struct sim *s, struct sim_wl *w)
{
	const struct sim_params *p = s->prm;
	int per = 1 + p->sb_workers;

	for (int i = 0; i < w->n; i++) {
		struct sim_task *t = &s->task[w->first + i];

		t->peer = w->first + (i / per) * per;
		t->idx = i % per;
		t->role = t->idx == 0 ? 0 : 1;
		t->work = sim_burst(s, t->role == 0 ? p->sb_msg_ns : p->sb_work_ns);
	}
	for (int i = 0; i < w->n; i += per)
		if (sim_wake(s, &s->task[w->first + i], -1, 0) < 0)
			return s->error;
	return 0;
}

static int sb_burst_end(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	const struct sim_params *p = s->prm;

	if (t->role == 0) {
		t->work = sim_burst(s, p->sb_msg_ns);
		if (t->count == p->sb_rounds)
			return SIM_EXIT;
		t->count++;
		t->aux = 0;
		for (int i = 1; i <= p->sb_workers; i++)
			if (sim_wake(s, &s->task[t->id + i], cpu, 0) < 0)
				return s->error;
		return SIM_SLEEP;
	}
	t->work = sim_burst(s, p->sb_work_ns);
	s->res.units++;
	t->count++;
	if (++s->task[t->peer].aux == p->sb_workers &&
	    sim_wake(s, &s->task[t->peer], cpu, PLACE_WAKE_SYNC) < 0)
		return s->error;
	return t->count == p->sb_rounds ? SIM_EXIT : SIM_SLEEP;
}

const struct sim_wl_ops sim_wl_schbench = {
	.name = "schbench",
	.nr_tasks = sb_nr_tasks,
	.start = sb_start,
	.burst_end = sb_burst_end,
};

/* ---- pingpong ---------------------------------------------------------------
 * will-it-scale context_switch: pairs of tasks waking each other with a sync
 * wakeup and sleeping, each hop a short burst. The first of each pair starts.
 * Both do `rounds` hops; the first one's last hop wakes the second for its
 * last, which then exits without waking.                                   */

static int pp_nr_tasks(const struct sim_params *p)
{
	return 2 * p->pp_pairs;
}

static int pp_start(struct sim *s, struct sim_wl *w)
{
	for (int i = 0; i < w->n; i++) {
		struct sim_task *t = &s->task[w->first + i];

		t->idx = i % 2;
		t->peer = w->first + (i ^ 1);
		t->work = sim_burst(s, s->prm->pp_run_ns);
	}
	for (int i = 0; i < w->n; i += 2)
		if (sim_wake(s, &s->task[w->first + i], -1, 0) < 0)
			return s->error;
	return 0;
}

static int pp_burst_end(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	t->work = sim_burst(s, s->prm->pp_run_ns);
	t->count++;
	s->res.units++;
	if (t->idx == 1 && t->count == s->prm->pp_rounds)
		return SIM_EXIT;
	if (sim_wake(s, &s->task[t->peer], cpu, PLACE_WAKE_SYNC) < 0)
		return s->error;
	return t->count == s->prm->pp_rounds ? SIM_EXIT : SIM_SLEEP;
}

const struct sim_wl_ops sim_wl_pingpong = {
	.name = "pingpong",
	.nr_tasks = pp_nr_tasks,
	.start = pp_start,
	.burst_end = pp_burst_end,
};

/* ---- stream -----------------------------------------------------------------
 * An OpenMP-style parallel loop: T long CPU-bound threads, a barrier after
 * each iteration (the last to arrive wakes the others). Two threads on one
 * core run at smt_factor each and the barrier waits for the slowest, so the
 * throughput says whether they spread one per core.                        */

struct st {
	int arrived;
};

static int st_nr_tasks(const struct sim_params *p)
{
	return p->st_threads;
}

static int st_start(struct sim *s, struct sim_wl *w)
{
	struct st *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	w->priv = st;
	for (int i = 0; i < w->n; i++) {
		struct sim_task *t = &s->task[w->first + i];

		t->idx = i;
		t->work = sim_burst(s, s->prm->st_burst_ns);
		if (sim_wake(s, t, -1, 0) < 0)
			return s->error;
	}
	return 0;
}

static int st_burst_end(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	struct st *st = w->priv;

	t->work = sim_burst(s, s->prm->st_burst_ns);
	t->count++;
	s->res.units++;
	if (++st->arrived < w->n)
		return t->count == s->prm->st_iters ? SIM_EXIT : SIM_SLEEP;
	st->arrived = 0;
	if (t->count == s->prm->st_iters)
		return SIM_EXIT;
	for (int i = 0; i < w->n; i++) {
		struct sim_task *o = &s->task[w->first + i];

		if (o != t && sim_wake(s, o, cpu, 0) < 0)
			return s->error;
	}
	return SIM_CONTINUE;
}

static void st_fini(struct sim_wl *w)
{
	free(w->priv);
}

const struct sim_wl_ops sim_wl_stream = {
	.name = "stream",
	.nr_tasks = st_nr_tasks,
	.start = st_start,
	.burst_end = st_burst_end,
	.fini = st_fini,
};

/* ---- tenants ----------------------------------------------------------------
 * Mixed tenants for core scheduling: K tenants (cookies 1..K) of N tasks
 * each. Every task does R rounds of a burst then a sleep that a timer ends
 * (a request handler woken by an I/O thread: no waker CPU). The tenants are
 * interleaved in task order, so that first placements mix them on cores.
 * role = the tenant.                                                       */

static int tn_nr_tasks(const struct sim_params *p)
{
	return p->tn_tenants * p->tn_tasks;
}

static int tn_start(struct sim *s, struct sim_wl *w)
{
	const struct sim_params *p = s->prm;

	for (int i = 0; i < w->n; i++) {
		struct sim_task *t = &s->task[w->first + i];

		t->idx = i;
		t->role = i % p->tn_tenants;
		t->cookie = (uint64_t)t->role + 1;
		if (place_task_set_cookie(&t->pt, t->cookie) < 0)
			return -EINVAL;
		t->work = sim_burst(s, p->tn_work_ns);
		if (sim_wake(s, t, -1, 0) < 0)
			return s->error;
	}
	return 0;
}

static int tn_burst_end(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	(void)w;
	(void)cpu;
	t->count++;
	s->res.units++;
	if (t->count == s->prm->tn_rounds)
		return SIM_EXIT;
	t->work = sim_burst(s, s->prm->tn_work_ns);
	return sim_sleep_for(s, t, s->prm->tn_sleep_ns) < 0 ? -ENOMEM : SIM_SLEEP;
}

const struct sim_wl_ops sim_wl_tenants = {
	.name = "tenants",
	.nr_tasks = tn_nr_tasks,
	.start = tn_start,
	.burst_end = tn_burst_end,
};

/* ---- groups -----------------------------------------------------------------
 * NUMA groups of communicating tasks (threads of one address space): G
 * groups (NUMA groups 1..G) of N tasks, each group circulating M tokens
 * (messages). A task holding one works a burst, then hands it to a random
 * other member of its group, waking it, and sleeps when it holds none. The
 * group's tokens make H hops each in all; when the last retires, the
 * group's sleeping members are woken to exit. A wakee that starts on
 * another node than its waker pays gr_xnode_ns (the group's data is there).
 * peer = the group index, aux = tokens held.                               */

struct gr {
	int64_t *hops_left; /* [G] */
	int *tokens;        /* [G] tokens in flight */
};

static int gr_nr_tasks(const struct sim_params *p)
{
	return p->gr_groups * p->gr_tasks;
}

static int gr_setup(struct sim *s, struct sim_wl *w)
{
	const struct sim_params *p = s->prm;
	struct gr *gr = calloc(1, sizeof(*gr));

	if (!gr)
		return -ENOMEM;
	w->priv = gr;
	gr->hops_left = calloc((size_t)p->gr_groups, sizeof(*gr->hops_left));
	gr->tokens = calloc((size_t)p->gr_groups, sizeof(*gr->tokens));
	if (!gr->hops_left || !gr->tokens)
		return -ENOMEM;
	for (int g = 0; g < p->gr_groups; g++) {
		gr->hops_left[g] = (int64_t)p->gr_tokens * p->gr_hops;
		gr->tokens[g] = p->gr_tokens;
	}
	return 0;
}

static int gr_start(struct sim *s, struct sim_wl *w)
{
	const struct sim_params *p = s->prm;
	int err;

	if (p->gr_tasks < 2 || p->gr_tokens < 1)
		return -EINVAL;
	err = gr_setup(s, w);
	if (err < 0)
		return err;
	for (int i = 0; i < w->n; i++) {
		struct sim_task *t = &s->task[w->first + i];

		t->peer = i / p->gr_tasks;
		t->idx = i % p->gr_tasks;
		t->group = (uint32_t)t->peer + 1;
		if (place_task_set_group(&t->pt, t->group) < 0)
			return -EINVAL;
		t->work = sim_burst(s, p->gr_work_ns);
	}
	/* Tokens go round robin to the members of each group. */
	for (int g = 0; g < p->gr_groups; g++)
		for (int k = 0; k < p->gr_tokens; k++)
			s->task[w->first + g * p->gr_tasks + k % p->gr_tasks].aux++;
	for (int i = 0; i < w->n; i++)
		if (s->task[w->first + i].aux && sim_wake(s, &s->task[w->first + i], -1, 0) < 0)
			return s->error;
	return 0;
}

/* The group of t is done: wake its sleeping members, who exit. */
static int gr_finish(struct sim *s, struct sim_wl *w, const struct sim_task *t, int cpu)
{
	int first = w->first + t->peer * s->prm->gr_tasks;

	for (int i = first; i < first + s->prm->gr_tasks; i++)
		if (s->task[i].state == SIM_SLEEPING && sim_wake(s, &s->task[i], cpu, 0) < 0)
			return s->error;
	return 0;
}

/* One hop of the token t holds: pass it on, or retire it when the group's
 * hops are used up. */
static int gr_hop(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	const struct sim_params *p = s->prm;
	struct gr *gr = w->priv;
	int g = t->peer;
	struct sim_task *mate;
	uint32_t j;

	t->aux--;
	t->count++;
	s->res.units++;
	if (--gr->hops_left[g] < gr->tokens[g]) {
		gr->tokens[g]--;
		return gr->tokens[g] ? 0 : gr_finish(s, w, t, cpu);
	}
	j = sim_rand_below(&s->rng, (uint32_t)p->gr_tasks - 1);
	if ((int)j >= t->idx)
		j++;
	mate = &s->task[w->first + g * p->gr_tasks + (int)j];
	mate->aux++;
	s->res.sent++;
	s->res.delivered++;
	return mate->state == SIM_SLEEPING ? sim_wake(s, mate, cpu, 0) : 0;
}

static int gr_burst_end(struct sim *s, struct sim_wl *w, struct sim_task *t, int cpu)
{
	struct gr *gr = w->priv;
	int err;

	t->work = sim_burst(s, s->prm->gr_work_ns);
	if (t->aux > 0 && (err = gr_hop(s, w, t, cpu)) < 0)
		return err;
	if (!gr->tokens[t->peer])
		return SIM_EXIT;
	return t->aux > 0 ? SIM_CONTINUE : SIM_SLEEP;
}

static void gr_fini(struct sim_wl *w)
{
	struct gr *gr = w->priv;

	if (!gr)
		return;
	free(gr->hops_left);
	free(gr->tokens);
	free(gr);
}

const struct sim_wl_ops sim_wl_groups = {
	.name = "groups",
	.nr_tasks = gr_nr_tasks,
	.start = gr_start,
	.burst_end = gr_burst_end,
	.fini = gr_fini,
};
