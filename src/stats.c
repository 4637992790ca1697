/*
 * Statistics, schedstat-like. Counters live in per-CPU slots written by that
 * CPU's worker (its wakeups, its edges) and per-LLC external slots for what
 * other threads do (wakeups by non-workers, claim releases): no counter line
 * is shared by all wakeups. place_stats_read sums them without stopping the
 * writers: each counter is exact, the set is not one snapshot.
 *
 * Where a wakeup counts: in the waker's LLC when the waker is a worker
 * (schedstat counts ttwu on the waking CPU), else in the LLC it placed the
 * task in.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "internal.h"

/* place_stats and the slots share one list; the public struct keeps the
 * order of PLACE_STATS (its last field, cookie_turns, was reserved[0]). */
#define PLACE_STAT_OFFSET(name)                                                                    \
	_Static_assert(offsetof(place_stats, name) == PLACE_STAT_##name * sizeof(uint64_t),        \
		       "place_stats." #name " follows PLACE_STATS");
PLACE_STATS(PLACE_STAT_OFFSET)
#undef PLACE_STAT_OFFSET
_Static_assert(PLACE_NR_STATS * sizeof(uint64_t) == sizeof(place_stats),
	       "every statistic has a place_stats field");
_Static_assert(sizeof(place_stats) == 28 * sizeof(uint64_t), "place_stats keeps its size (ABI)");

static void add_slot(uint64_t *sum, const struct place_stat_slot *s)
{
	for (int i = 0; i < PLACE_NR_SLOT_STATS; i++)
		sum[i] += place_load_64(&s->v[i]);
}

static void add_llc(uint64_t *sum, const struct place *p, int l)
{
	const struct place_topo *t = p->topo;

	for (int i = t->llc_start[l]; i < t->llc_start[l + 1]; i++)
		add_slot(sum, &p->slot[t->llc_cpus[i]]);
	add_slot(sum, &p->ext[l]);
}

/* Every wakeup counts exactly one level (wake_commit): wakeups is their sum,
 * one counter update fewer on the hot path. Every level but hit_fallback
 * returned an idle CPU, claimed unless counted unclaimed: so claims. */
static uint64_t wakeups(const uint64_t *sum)
{
	static const enum place_stat_id level[] = {
		PLACE_STAT_hit_target,   PLACE_STAT_hit_prev,     PLACE_STAT_hit_recent,
		PLACE_STAT_hit_idle_core, PLACE_STAT_hit_idle_cpu, PLACE_STAT_hit_sibling,
		PLACE_STAT_hit_fallback, PLACE_STAT_hit_prev_smt, PLACE_STAT_hit_widened,
	};
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(level) / sizeof(level[0]); i++)
		n += sum[level[i]];
	return n;
}

PLACE_EXTERN int place_stats_read(const place *p, int llc, place_stats *out)
{
	uint64_t sum[PLACE_NR_SLOT_STATS] = { 0 };

	if (!p || !out)
		return -EINVAL;
	if (llc < -1 || llc >= p->topo->nr_llcs)
		return -ERANGE;
	for (int l = 0; l < p->topo->nr_llcs; l++)
		if (llc == -1 || llc == l)
			add_llc(sum, p, l);
	sum[PLACE_STAT_wakeups] = wakeups(sum);
	sum[PLACE_STAT_claims] = sum[PLACE_STAT_wakeups] - sum[PLACE_STAT_hit_fallback] - sum[PLACE_STAT_unclaimed];
	memset(out, 0, sizeof(*out));
	memcpy(out, sum, PLACE_NR_STATS * sizeof(uint64_t));
	return 0;
}
