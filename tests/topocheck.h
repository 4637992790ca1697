/*
 * Structural checks of a flattened topology (src/topo.h), shared by the
 * topology unit tests and the corpus test: whatever the machine, the arrays
 * the placement engine reads must agree with each other and with the public
 * accessors. Call from inside a Check test.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef PLACE_TOPOCHECK_H
#define PLACE_TOPOCHECK_H

#include <check.h>
#include <stdlib.h>

#include "topo.h"

/* Dense ids lie in 0..nr-1 (or -1) and every id is used by some CPU. */
static inline void place_check_ids(const struct place_topo *t, const char *what, size_t off, int nr)
{
	int *used = calloc((size_t)nr + 1, sizeof(int));

	ck_assert_ptr_nonnull(used);
	for (int i = 0; i < t->nr_cpus; i++) {
		int v = *(const int *)((const char *)&t->cpu[i] + off);

		ck_assert_msg(v >= -1 && v < nr, "%s: cpu %d has %s %d of %d", t->source,
			      t->os_of[i], what, v, nr);
		if (v >= 0)
			used[v]++;
	}
	for (int id = 0; id < nr; id++)
		ck_assert_msg(used[id] > 0, "%s: %s %d has no CPU", t->source, what, id);
	free(used);
}

static inline void place_check_numbering(const struct place_topo *t)
{
	int seen = 0;

	ck_assert_int_gt(t->nr_cpus, 0);
	ck_assert_int_eq(t->cpu_limit, t->os_of[t->nr_cpus - 1] + 1);
	for (int i = 0; i < t->nr_cpus; i++) {
		ck_assert(i == 0 || t->os_of[i] > t->os_of[i - 1]);
		ck_assert_int_eq(t->dense_of[t->os_of[i]], i);
	}
	for (int c = 0; c < t->cpu_limit; c++)
		seen += t->dense_of[c] >= 0;
	ck_assert_int_eq(seen, t->nr_cpus);
}

/* Core slices: ascending, core_pos right, the whole core in one LLC. */
static inline void place_check_cores(const struct place_topo *t)
{
	ck_assert_int_eq(t->core_start[0], 0);
	ck_assert_int_eq(t->core_start[t->nr_cores], t->nr_cpus);
	for (int c = 0; c < t->nr_cores; c++) {
		ck_assert_int_gt(place__core_weight(t, c), 0);
		for (int p = t->core_start[c]; p < t->core_start[c + 1]; p++) {
			const struct place_topo_cpu *cpu = &t->cpu[t->core_cpus[p]];

			ck_assert(p == t->core_start[c] || t->core_cpus[p] > t->core_cpus[p - 1]);
			ck_assert_int_eq(cpu->core, c);
			ck_assert_int_eq(cpu->core_pos, p - t->core_start[c]);
			ck_assert_msg(cpu->llc == t->core_llc[c], "%s: core %d spans LLCs %d and %d",
				      t->source, c, cpu->llc, t->core_llc[c]);
		}
	}
}

/* LLC slices: grouped core by core, cores in ascending dense order. */
static inline void place_check_llcs(const struct place_topo *t)
{
	ck_assert_int_eq(t->llc_start[0], 0);
	ck_assert_int_eq(t->llc_start[t->nr_llcs], t->nr_cpus);
	for (int l = 0; l < t->nr_llcs; l++) {
		ck_assert_int_gt(place__llc_weight(t, l), 0);
		for (int p = t->llc_start[l]; p < t->llc_start[l + 1]; p++) {
			const struct place_topo_cpu *cpu = &t->cpu[t->llc_cpus[p]];

			ck_assert_int_eq(cpu->llc, l);
			ck_assert_int_eq(cpu->llc_pos, p - t->llc_start[l]);
			if (p > t->llc_start[l]) {
				const struct place_topo_cpu *prev = &t->cpu[t->llc_cpus[p - 1]];

				ck_assert(prev->core < cpu->core ||
					  (prev->core == cpu->core && prev->core_pos + 1 == cpu->core_pos));
			}
		}
	}
}

/* The public accessors tell the same story as the arrays. */
static inline void place_check_accessors(const struct place_topo *t)
{
	int buf[8];

	ck_assert_int_eq(place_topo_nr_cpus(t), t->nr_cpus);
	for (int i = 0; i < t->nr_cpus; i++) {
		const struct place_topo_cpu *c = &t->cpu[i];
		place_cpu_info info;

		ck_assert_int_eq(place_topo_cpu(t, i), t->os_of[i]);
		ck_assert_int_eq(place_topo_cpu_info(t, t->os_of[i], &info), 0);
		ck_assert_int_eq(info.core, c->core);
		ck_assert_int_eq(info.llc, c->llc);
		ck_assert_int_eq(info.smt, place__core_weight(t, c->core));
		ck_assert_int_eq(t->node_os[c->node], c->hw_node_os);
		ck_assert_int_eq(place_topo_siblings(t, t->os_of[i], buf, 8), info.smt);
		ck_assert_int_eq(place_topo_llc_cpus(t, t->os_of[i], NULL, 0),
				 place__llc_weight(t, c->llc));
		ck_assert(c->llc_kind == PLACE_LLC_CACHE ? c->llc_level >= 1 && c->llc_level <= 5
							 : c->llc_level == -1 && c->hw_llc == -1);
	}
}

static inline void place_check_topo(const struct place_topo *t)
{
	place_check_numbering(t);
	place_check_ids(t, "core", offsetof(struct place_topo_cpu, core), t->nr_cores);
	place_check_ids(t, "llc", offsetof(struct place_topo_cpu, llc), t->nr_llcs);
	place_check_ids(t, "node", offsetof(struct place_topo_cpu, node), t->nr_nodes);
	place_check_ids(t, "package", offsetof(struct place_topo_cpu, package), t->nr_packages);
	place_check_cores(t);
	place_check_llcs(t);
	place_check_accessors(t);
}

#endif
