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
