/*
 * place-info: the topology as libplace sees it.
 *
 *   place-info [--topology SOURCE] [--format console|tsv|truth]
 *
 * console  a readable summary: packages, NUMA nodes, LLC domains with their
 *          cores and CPUs, SMT width, allowed CPUs.
 * tsv      one line per usable CPU with every field of place_cpu_info.
 * truth    exactly the format of the topology corpus' NAME.truth.tsv files,
 *          so that `diff` compares libplace with hwloc's own answer.
 *
 * Only the public API is used: this is also an example of it.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place.h"

static const char usage[] =
	"usage: place-info [--topology SOURCE] [--format console|tsv|truth]\n"
	"  SOURCE: live (default; PLACE_TOPOLOGY overrides it), xml:PATH or synthetic:STRING\n"
	"  console  readable summary (default)\n"
	"  tsv      one line per CPU, every field libplace knows\n"
	"  truth    the topology corpus' .truth.tsv format, for diff\n";

enum format { FMT_CONSOLE, FMT_TSV, FMT_TRUTH };

struct opts {
	const char *source;
	enum format format;
};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* Fill info[] for every usable CPU, in ascending OS order. */
static place_cpu_info *all_info(const place_topo *t, int n)
{
	place_cpu_info *info = calloc((size_t)n, sizeof(*info));

	for (int i = 0; info && i < n; i++)
		place_topo_cpu_info(t, place_topo_cpu(t, i), &info[i]);
	return info;
}

/* "0-3,8,10-11" from ascending CPU numbers. */
static void print_cpulist(const int *cpus, int n)
{
	for (int i = 0; i < n;) {
		int j = i;

		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		printf("%s%d", i ? "," : "", cpus[i]);
		if (j > i)
			printf("-%d", cpus[j]);
		i = j + 1;
	}
}

/* The CPUs whose field (at offset off in place_cpu_info) equals id. */
static int select_cpus(const place_cpu_info *info, int n, size_t off, int id, int *out)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (*(const int *)((const char *)&info[i] + off) == id)
			out[k++] = info[i].cpu;
	return k;
}

/* ------------------------------------------------------------------------ */
/* Formats                                                                   */

static void print_truth(const place_cpu_info *info, int n)
{
	printf("#pu_os_index\tcore_logical_index\tllc_logical_index\tnuma_os_index\t"
	       "package_logical_index\tllc_level\n");
	for (int i = 0; i < n; i++)
		printf("%d\t%d\t%d\t%d\t%d\t%d\n", info[i].cpu, info[i].hw_core, info[i].hw_llc,
		       info[i].hw_node_os, info[i].hw_package, info[i].llc_level);
}

static void print_tsv(const place_cpu_info *info, int n)
{
	printf("#cpu\tcore\tllc\tnode\tpackage\tllc_level\tllc_kind\tsmt\t"
	       "hw_core\thw_llc\thw_node_os\thw_package\n");
	for (int i = 0; i < n; i++) {
		const place_cpu_info *c = &info[i];

		printf("%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", c->cpu, c->core, c->llc,
		       c->node, c->package, c->llc_level, c->llc_kind, c->smt, c->hw_core,
		       c->hw_llc, c->hw_node_os, c->hw_package);
	}
}

static const char *llc_name(const place_cpu_info *c, char *buf, size_t size)
{
	static const char *const kinds[] = { "cache", "package (no cache)", "NUMA node (no cache)",
					     "machine (no cache)" };

	if (c->llc_kind == PLACE_LLC_CACHE)
		snprintf(buf, size, "L%d #%d", c->llc_level, c->hw_llc);
	else
		snprintf(buf, size, "%s", kinds[c->llc_kind & 3]);
	return buf;
}

/* Index of OS CPU cpu in info[] (ascending OS numbers). */
static int info_index(const place_cpu_info *info, int n, int cpu)
{
	int lo = 0, hi = n - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (info[mid].cpu < cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One line per LLC domain, its cores as sibling groups: "0+128 1+129 ...".
 * A core starts at its lowest CPU; buf holds 2n ints. */
static void print_llc(const place_topo *t, const place_cpu_info *info, int n, int llc, int *buf)
{
	int k = select_cpus(info, n, offsetof(place_cpu_info, llc), llc, buf);
	const place_cpu_info *first = &info[info_index(info, n, buf[0])];
	int *sib = buf + k;
	char name[64];

	int cores = 0;

	for (int i = 0; i < k; i++)
		cores += place_topo_siblings(t, buf[i], sib, n) > 0 && sib[0] == buf[i];
	printf("  LLC %d: %s, package %d, node %d, %d cores, %d CPUs:", llc,
	       llc_name(first, name, sizeof(name)), first->package, first->node, cores, k);
	for (int i = 0; i < k; i++) {
		int m = place_topo_siblings(t, buf[i], sib, n), sep = ' ';

		if (m <= 0 || sib[0] != buf[i])
			continue;
		for (int j = 0; j < m; j++)
			if (info[info_index(info, n, sib[j])].llc == llc) {
				printf("%c%d", sep, sib[j]);
				sep = '+';
			}
	}
	printf("\n");
}

static void print_group(const place_cpu_info *info, int n, size_t off, int id, int *buf)
{
	int k = select_cpus(info, n, off, id, buf);

	printf("%d CPUs: ", k);
	print_cpulist(buf, k);
	printf("\n");
}

static void print_console(const place_topo *t, const place_cpu_info *info, int n)
{
	int *buf = calloc((size_t)n * 2, sizeof(int)), smin = n, smax = 0;

	if (!buf)
		return;
	for (int i = 0; i < n; i++) {
		buf[i] = info[i].cpu;
		smin = info[i].smt < smin ? info[i].smt : smin;
		smax = info[i].smt > smax ? info[i].smt : smax;
	}
	printf("topology: %s\n", place_topo_source(t));
	printf("allowed CPUs: %d (", n);
	print_cpulist(buf, n);
	printf("), CPU numbers below %d\n", place_topo_cpu_limit(t));
	printf("packages: %d, NUMA nodes: %d, LLC domains: %d, cores: %d, SMT width: %d",
	       place_topo_nr_packages(t), place_topo_nr_nodes(t), place_topo_nr_llcs(t),
	       place_topo_nr_cores(t), smax);
	if (smin != smax)
		printf(" (some cores %d)", smin);
	printf("\n");
	for (int p = 0; p < place_topo_nr_packages(t); p++) {
		printf("package %d: ", p);
		print_group(info, n, offsetof(place_cpu_info, package), p, buf);
	}
	for (int d = 0; d < place_topo_nr_nodes(t); d++) {
		int os = -1;

		for (int i = 0; i < n; i++)
			if (info[i].node == d)
				os = info[i].hw_node_os;
		printf("node %d (OS node %d): ", d, os);
		print_group(info, n, offsetof(place_cpu_info, node), d, buf);
	}
	printf("LLC domains, cores as SMT sibling groups:\n");
	for (int l = 0; l < place_topo_nr_llcs(t); l++)
		print_llc(t, info, n, l, buf);
	free(buf);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */

static int parse_format(const char *s, enum format *f)
{
	static const char *const names[] = { "console", "tsv", "truth" };

	for (int i = 0; i < 3; i++)
		if (strcmp(s, names[i]) == 0) {
			*f = (enum format)i;
			return 0;
		}
	fprintf(stderr, "place-info: unknown format '%s' (console, tsv or truth)\n", s);
	return -1;
}

/* Both "--opt VALUE" and "--opt=VALUE". Returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t len = strlen(name);

	if (strncmp(argv[*i], name, len) != 0)
		return NULL;
	if (argv[*i][len] == '=')
		return argv[*i] + len + 1;
	if (argv[*i][len] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

/* 0 to run, 1 after --help, 2 on bad usage. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *v;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 1;
		} else if (i + 1 == argc && (strcmp(argv[i], "--topology") == 0 ||
					     strcmp(argv[i], "--format") == 0)) {
			fprintf(stderr, "place-info: %s needs a value (try --help)\n", argv[i]);
			return 2;
		} else if ((v = opt_value(argc, argv, &i, "--topology")) != NULL) {
			o->source = v;
		} else if ((v = opt_value(argc, argv, &i, "--format")) != NULL) {
			if (parse_format(v, &o->format) < 0)
				return 2;
		} else {
			fprintf(stderr, "place-info: bad argument '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { NULL, FMT_CONSOLE };
	place_topo *t;
	place_cpu_info *info;
	int err, n, r = parse_args(argc, argv, &o);

	if (r)
		return r == 1 ? EXIT_SUCCESS : 2;
	err = place_topo_load(&t, o.source);
	if (err < 0) {
		fprintf(stderr, "place-info: %s\n",
			place_last_error()[0] ? place_last_error() : place_strerror(err));
		return EXIT_FAILURE;
	}
	n = place_topo_nr_cpus(t);
	info = all_info(t, n);
	if (!info) {
		fprintf(stderr, "place-info: out of memory\n");
		place_topo_free(t);
		return EXIT_FAILURE;
	}
	if (o.format == FMT_TRUTH)
		print_truth(info, n);
	else if (o.format == FMT_TSV)
		print_tsv(info, n);
	else
		print_console(t, info, n);
	free(info);
	place_topo_free(t);
	return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
