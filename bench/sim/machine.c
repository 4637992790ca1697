/*
 * The simulated machine: place_topo read once through the public accessors
 * into flat arrays indexed by dense CPU (ascending OS number), and the
 * stealing order libplace gives each CPU.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int *ialloc(size_t n)
{
	return calloc(n ? n : 1, sizeof(int));
}

/* Counting sort of the CPUs by group id into a CSR layout (start[g] ..
 * start[g+1]-1 in cpus[]); CPUs stay in ascending order inside a group. */
static int csr_build(const int *group, int n, int nr_groups, int **start, int **cpus)
{
	int *st = ialloc((size_t)nr_groups + 1), *c = ialloc((size_t)n), *fill;

	if (!st || !c)
		goto nomem;
	for (int i = 0; i < n; i++)
		st[group[i] + 1]++;
	for (int g = 0; g < nr_groups; g++)
		st[g + 1] += st[g];
	fill = ialloc((size_t)nr_groups);
	if (!fill)
		goto nomem;
	for (int i = 0; i < n; i++)
		c[st[group[i]] + fill[group[i]]++] = i;
	free(fill);
	*start = st;
	*cpus = c;
	return 0;
nomem:
	free(st);
	free(c);
	return -ENOMEM;
}

static int read_cpus(struct sim_machine *m, const place_topo *topo)
{
	for (int i = 0; i < m->nr_cpus; i++) {
		place_cpu_info info;
		int os = place_topo_cpu(topo, i), err;

		if (os < 0)
			return os;
		err = place_topo_cpu_info(topo, os, &info);
		if (err < 0)
			return err;
		m->os[i] = os;
		m->dense[os] = i;
		m->core[i] = info.core;
		m->llc[i] = info.llc;
		m->node[i] = info.node;
		if (info.core >= m->nr_cores || info.llc >= m->nr_llcs || info.node >= m->nr_nodes ||
		    info.core < 0 || info.llc < 0 || info.node < 0)
			return -EINVAL;
	}
	return 0;
}

/* The stealing order of every CPU, from libplace (place_steal_order: SMT
 * sibling, LLC, node, package, rest, each ring rotated per thief), read once
 * from a scratch instance with a worker on every CPU. */
static int steal_orders(struct sim_machine *m, const place_topo *topo)
{
	size_t n = (size_t)m->nr_cpus;
	place *p = NULL;
	int err = place_create(&p, topo, NULL);

	m->steal = calloc(n * n, sizeof(int));
	m->nsteal = calloc(n, sizeof(int));
	if (!err && (!m->steal || !m->nsteal))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < n; i++)
		err = place_worker_register(p, m->os[i], 0);
	for (size_t i = 0; !err && i < n; i++) {
		int *row = &m->steal[i * n];
		int k = place_steal_order(p, m->os[i], row, (int)n);

		if (k < 0 || k > (int)n) {
			err = k < 0 ? k : -ERANGE;
			break;
		}
		for (int j = 0; j < k; j++)
			row[j] = m->dense[row[j]];
		m->nsteal[i] = k;
	}
	place_destroy(p);
	return err;
}

/* The latency between nodes a and b as libplace orders them (widen.c's
 * node_far): the mean of both directions, 0 when unknown. */
static int64_t latency(const place_topo *topo, int a, int b)
{
	int64_t ab = place_topo_node_distance(topo, a, b), ba = place_topo_node_distance(topo, b, a);

	return ab > 0 && ba > 0 ? (ab + ba) / 2 : ab > 0 ? ab : ba > 0 ? ba : 0;
}

/* node_cost (sim.h): a task that moves to another node reads its memory
 * from there at that node's latency; the nearest other node costs
 * node_penalty_ns, a farther one more by its extra latency over local, an
 * unknown one as the farthest known. */
static int node_costs(struct sim_machine *m, const place_topo *topo)
{
	int nn = m->nr_nodes;

	m->node_cost = ialloc((size_t)nn * (size_t)nn);
	if (!m->node_cost)
		return -ENOMEM;
	for (int a = 0; a < nn; a++) {
		int64_t local = latency(topo, a, a), near = INT64_MAX, far = 0;

		for (int b = 0; b < nn; b++) {
			int64_t d = latency(topo, a, b);

			if (b != a && d > local && d < near)
				near = d;
			if (b != a && d > far)
				far = d;
		}
		for (int b = 0; b < nn; b++) {
			int64_t d = latency(topo, a, b), c = 1000;

			if (d <= 0)
				d = far;
			if (local > 0 && near < INT64_MAX && d > local)
				c = (d - local) * 1000 / (near - local);
			m->node_cost[a * nn + b] = c > INT_MAX ? INT_MAX : (int)c;
			m->node_scaled |= b != a && c != 1000;
		}
	}
	return 0;
}

int sim_machine_init(struct sim_machine *m, const place_topo *topo)
{
	int err;

	memset(m, 0, sizeof(*m));
	m->nr_cpus = place_topo_nr_cpus(topo);
	m->nr_cores = place_topo_nr_cores(topo);
	m->nr_llcs = place_topo_nr_llcs(topo);
	m->nr_nodes = place_topo_nr_nodes(topo);
	m->cpu_limit = place_topo_cpu_limit(topo);
	if (m->nr_cpus <= 0 || m->nr_cores <= 0 || m->nr_llcs <= 0 || m->nr_nodes <= 0 ||
	    m->cpu_limit <= 0)
		return -EINVAL;
	m->os = ialloc((size_t)m->nr_cpus);
	m->dense = ialloc((size_t)m->cpu_limit);
	m->core = ialloc((size_t)m->nr_cpus);
	m->llc = ialloc((size_t)m->nr_cpus);
	m->node = ialloc((size_t)m->nr_cpus);
	m->core_llc = ialloc((size_t)m->nr_cores);
	m->llc_cores = ialloc((size_t)m->nr_llcs);
	err = -ENOMEM;
	if (!m->os || !m->dense || !m->core || !m->llc || !m->node || !m->core_llc || !m->llc_cores)
		goto fail;
	for (int i = 0; i < m->cpu_limit; i++)
		m->dense[i] = -1;
	err = read_cpus(m, topo);
	if (err < 0)
		goto fail;
	err = csr_build(m->core, m->nr_cpus, m->nr_cores, &m->core_start, &m->core_cpus);
	if (!err)
		err = csr_build(m->llc, m->nr_cpus, m->nr_llcs, &m->llc_start, &m->llc_cpus);
	if (err < 0)
		goto fail;
	for (int c = 0; c < m->nr_cores; c++) {
		m->core_llc[c] = m->llc[m->core_cpus[m->core_start[c]]];
		m->llc_cores[m->core_llc[c]]++;
	}
	err = steal_orders(m, topo);
	if (!err)
		err = node_costs(m, topo);
	if (err < 0)
		goto fail;
	return 0;
fail:
	sim_machine_fini(m);
	return err;
}

void sim_machine_fini(struct sim_machine *m)
{
	free(m->os);
	free(m->dense);
	free(m->core);
	free(m->llc);
	free(m->node);
	free(m->core_start);
	free(m->core_cpus);
	free(m->llc_start);
	free(m->llc_cpus);
	free(m->core_llc);
	free(m->llc_cores);
	free(m->node_cost);
	free(m->steal);
	free(m->nsteal);
	memset(m, 0, sizeof(*m));
}
