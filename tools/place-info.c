/*
 * place-info: the topology as libplace sees it.
 *
 *   place-info [--topology SOURCE] [--format console|tsv|truth]
 *
 * console  a picture, as lstopo draws one: boxes for packages, NUMA nodes and
 *          LLC domains, the cores inside with their SMT CPUs; counts and the
 *          allowed CPUs above it.
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

#include "opt.h"
#include "place.h"

static const char usage[] =
	"usage: place-info [--topology SOURCE] [--format console|tsv|truth]\n"
	"  --topology SOURCE  where the topology comes from (place_topo_load(3)):\n"
	"      live              this machine: the cgroup's cpuset and the calling\n"
	"                        thread's affinity mask (default)\n"
	"      process           this machine: the cgroup's cpuset and the union of the\n"
	"                        affinity masks of the process's threads\n"
	"      machine           this machine's online CPUs, ignoring cgroup and affinity\n"
	"      xml:PATH          an hwloc XML export (lstopo --of xml)\n"
	"      synthetic:STRING  an hwloc synthetic description, e.g.\n"
	"                        'pack:2 [numa] l3:8 core:8 pu:2(indexes=core)'\n"
	"                    $PLACE_TOPOLOGY, when set, replaces live and process\n"
	"  --format F         console  a picture: packages, nodes, LLCs, cores with their\n"
	"                              SMT CPUs (default)\n"
	"                     tsv      one line per CPU, every field libplace knows\n"
	"                              (llc_kind as a word: cache, package, node, machine)\n"
	"                     truth    the .truth.tsv format of a topology corpus, for diff\n"
	"  --help, --version\n";

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

static const char *llc_kind_word(int kind)
{
	static const char *const words[] = { "cache", "package", "node", "machine" };

	return kind >= 0 && kind < 4 ? words[kind] : "unknown";
}

static void print_tsv(const place_cpu_info *info, int n)
{
	printf("#cpu\tcore\tllc\tnode\tpackage\tllc_level\tllc_kind\tsmt\t"
	       "hw_core\thw_llc\thw_node_os\thw_package\n");
	for (int i = 0; i < n; i++) {
		const place_cpu_info *c = &info[i];

		printf("%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\n", c->cpu, c->core, c->llc,
		       c->node, c->package, c->llc_level, llc_kind_word(c->llc_kind), c->smt, c->hw_core,
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

/* ------------------------------------------------------------------------ */
/* The console picture                                                       */

/*
 * Nested boxes, coarse to fine, as lstopo draws them: packages, NUMA nodes and
 * LLC domains, then the cores of the innermost box as "[cpu sibling ...]".
 * A level nests inside the one before it when each of its groups lies inside
 * one group of that level; levels with the same groups share a box (a package
 * that is one node is drawn once, labelled with both). A level that crosses
 * another (a NUMA node spanning two LLCs and an LLC spanning two nodes) gets
 * no box: it is listed below the picture. Levels are ordered by their number
 * of groups, so a sub-NUMA-clustered package (one L3, two nodes) draws the
 * nodes inside the LLC. Plain ASCII, at most PIC_WIDTH columns.
 */

#define PIC_WIDTH 100

enum { LV_PACKAGE, LV_NODE, LV_LLC, NR_LV };

static const size_t lv_off[NR_LV] = { offsetof(place_cpu_info, package),
				       offsetof(place_cpu_info, node),
				       offsetof(place_cpu_info, llc) };
static const char *const lv_plural[NR_LV] = { "packages", "NUMA nodes", "LLC domains" };

/* A box level: one or more topology levels with the same groups. */
struct boxlv {
	int nmembers;
	int member[NR_LV];
};

struct pic {
	const place_topo *t;
	const place_cpu_info *info;
	int n;
	int nbox;
	struct boxlv box[NR_LV];
	int ncross;
	int cross[NR_LV];
	int width;
	int *sib;     /* scratch: siblings of one CPU (n ints) */
};

static int lv_id(const place_cpu_info *c, int lv)
{
	return *(const int *)((const char *)c + lv_off[lv]);
}

static int lv_count(const place_topo *t, int lv)
{
	return lv == LV_PACKAGE ? place_topo_nr_packages(t) :
	       lv == LV_NODE ? place_topo_nr_nodes(t) : place_topo_nr_llcs(t);
}

/* Does every group of level a lie inside one group of level b? map: count(a) ints. */
static int refines(const place_cpu_info *info, int n, int a, int b, int *map, int na)
{
	for (int g = 0; g < na; g++)
		map[g] = -1;
	for (int i = 0; i < n; i++) {
		int ga = lv_id(&info[i], a), gb = lv_id(&info[i], b);

		if (map[ga] < 0)
			map[ga] = gb;
		else if (map[ga] != gb)
			return 0;
	}
	return 1;
}

/* Order the levels and decide which nest (see above). 0, or -1 out of memory. */
static int pic_levels(struct pic *pc)
{
	int order[NR_LV], nord = 0, max = 1, *map;

	for (int lv = 0; lv < NR_LV; lv++) {
		int ok = lv_count(pc->t, lv) > 0;

		for (int i = 0; ok && i < pc->n; i++)
			ok = lv_id(&pc->info[i], lv) >= 0;
		if (!ok)
			continue; /* e.g. no Package objects: no package boxes */
		order[nord++] = lv;
		max = lv_count(pc->t, lv) > max ? lv_count(pc->t, lv) : max;
	}
	/* Fewest groups first; ties keep package, node, LLC. */
	for (int i = 1; i < nord; i++)
		for (int j = i; j > 0 && lv_count(pc->t, order[j]) < lv_count(pc->t, order[j - 1]); j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	map = malloc((size_t)max * sizeof(int));
	if (!map)
		return -1;
	for (int i = 0; i < nord; i++) {
		int lv = order[i];
		struct boxlv *last = pc->nbox ? &pc->box[pc->nbox - 1] : NULL;
		int outer = last ? last->member[0] : -1;

		if (!last) {
			pc->box[pc->nbox++] = (struct boxlv){ 1, { lv } };
		} else if (!refines(pc->info, pc->n, lv, outer, map, lv_count(pc->t, lv))) {
			pc->cross[pc->ncross++] = lv;
		} else if (refines(pc->info, pc->n, outer, lv, map, lv_count(pc->t, outer))) {
			last->member[last->nmembers++] = lv; /* the same groups: one box */
		} else {
			pc->box[pc->nbox++] = (struct boxlv){ 1, { lv } };
		}
	}
	free(map);
	return 0;
}

/* Is CPU i of info[] in the group {level box[b], id} of every enclosing box? */
static int in_box(const struct pic *pc, const int *ids, int depth, int i)
{
	for (int b = 0; b < depth; b++)
		if (lv_id(&pc->info[i], pc->box[b].member[0]) != ids[b])
			return 0;
	return 1;
}

/* The core token of CPU i: "[0 128]", its siblings inside the box; 0 when i
 * is not the lowest of them (its core was printed already). */
static int core_token(const struct pic *pc, const int *ids, int depth, int i, char *buf, size_t size)
{
	int m = place_topo_siblings(pc->t, pc->info[i].cpu, pc->sib, pc->n), len = 1, first = 1;

	if (m <= 0)
		m = 1, pc->sib[0] = pc->info[i].cpu;
	buf[0] = '[';
	for (int j = 0; j < m && j < pc->n; j++) {
		int k = info_index(pc->info, pc->n, pc->sib[j]);

		if (pc->info[k].cpu != pc->sib[j] || !in_box(pc, ids, depth, k))
			continue;
		if (first && pc->sib[j] != pc->info[i].cpu)
			return 0;
		len += snprintf(buf + len, size - (size_t)len, "%s%d", first ? "" : " ", pc->sib[j]);
		first = 0;
	}
	snprintf(buf + len, size - (size_t)len, "]");
	return len + 1;
}

/* Cores and CPUs in a box. */
static void box_counts(const struct pic *pc, const int *ids, int depth, int *cores, int *cpus)
{
	char tok[256];

	*cores = *cpus = 0;
	for (int i = 0; i < pc->n; i++)
		if (in_box(pc, ids, depth, i)) {
			(*cpus)++;
			*cores += core_token(pc, ids, depth, i, tok, sizeof(tok)) > 0;
		}
}

/* The NUMA latencies libplace orders its searches by, when the topology
 * has them: one row per node, "from" node to each node. */
static void print_distances(const place_topo *t)
{
	int nn = place_topo_nr_nodes(t);

	if (nn < 2 || place_topo_node_distance(t, 0, 0) <= 0)
		return;
	printf("NUMA latencies (hwloc; the searches beyond a node go nearest first):\n  from\\to");
	for (int b = 0; b < nn; b++)
		printf(" %4d", b);
	for (int a = 0; a < nn; a++) {
		printf("\n  %7d", a);
		for (int b = 0; b < nn; b++)
			printf(" %4d", place_topo_node_distance(t, a, b));
	}
	printf("\n");
}

/* "Package 0 / NUMA node 0 (OS 0): 8 cores, 16 CPUs" for box level b, group of CPU i. */
static void box_label(const struct pic *pc, int b, const int *ids, int i, char *buf, size_t size)
{
	const place_cpu_info *c = &pc->info[i];
	char name[64];
	int len = 0, cores, cpus;

	for (int m = 0; m < pc->box[b].nmembers; m++) {
		const char *sep = m ? " / " : "";

		switch (pc->box[b].member[m]) {
		case LV_PACKAGE:
			len += snprintf(buf + len, size - (size_t)len, "%sPackage %d", sep, c->package);
			break;
		case LV_NODE:
			if (c->hw_node_os >= 0)
				len += snprintf(buf + len, size - (size_t)len, "%sNUMA node %d (OS %d)",
						sep, c->node, c->hw_node_os);
			else
				len += snprintf(buf + len, size - (size_t)len, "%sno NUMA node", sep);
			break;
		default:
			len += snprintf(buf + len, size - (size_t)len, "%sLLC %d = %s", sep, c->llc,
					llc_name(c, name, sizeof(name)));
			break;
		}
	}
	box_counts(pc, ids, b + 1, &cores, &cpus);
	snprintf(buf + len, size - (size_t)len, ": %d core%s, %d CPU%s", cores, cores == 1 ? "" : "s",
		 cpus, cpus == 1 ? "" : "s");
}

/* One line inside depth enclosing boxes: "| | text     | |". */
static void pic_line(const struct pic *pc, int depth, const char *text, char fill, int border)
{
	int inner = pc->width - 4 * depth, len = (int)strlen(text);

	for (int d = 0; d < depth; d++)
		fputs("| ", stdout);
	if (border) {
		/* "+- label ----+" */
		printf("+-%s%s", len ? " " : "", text);
		for (int k = 2 + (len ? len + 1 : 0); k < inner - 1; k++)
			putchar(len && k == 2 + len + 1 ? ' ' : fill);
		putchar('+');
	} else {
		printf("%s", text);
		for (int k = len; k < inner; k++)
			putchar(' ');
	}
	for (int d = 0; d < depth; d++)
		fputs(" |", stdout);
	putchar('\n');
}

/* The cores of the innermost box, wrapped to its width. */
static void pic_cores(const struct pic *pc, const int *ids, int depth)
{
	int inner = pc->width - 4 * depth, len = 0;
	char *line = malloc((size_t)inner + 1), tok[256];

	if (!line)
		return;
	line[0] = '\0';
	for (int i = 0; i < pc->n; i++) {
		int k;

		if (!in_box(pc, ids, depth, i) || (k = core_token(pc, ids, depth, i, tok, sizeof(tok))) == 0)
			continue;
		if (len && len + 1 + k > inner) {
			pic_line(pc, depth, line, ' ', 0);
			len = 0;
		}
		len += snprintf(line + len, (size_t)inner + 1 - (size_t)len, "%s%s", len ? " " : "", tok);
	}
	if (len)
		pic_line(pc, depth, line, ' ', 0);
	free(line);
}

/* Box level b (and everything inside) for the groups within ids[0..b-1]. */
static void pic_box(const struct pic *pc, int *ids, int b)
{
	int lv = pc->box[b].member[0];
	char label[256];

	for (int g = 0; g < lv_count(pc->t, lv); g++) {
		int first = -1;

		ids[b] = g;
		for (int i = 0; i < pc->n && first < 0; i++)
			if (in_box(pc, ids, b + 1, i))
				first = i;
		if (first < 0)
			continue;
		box_label(pc, b, ids, first, label, sizeof(label));
		if ((int)strlen(label) > pc->width - 4 * b - 6)
			label[pc->width - 4 * b - 6] = '\0';
		pic_line(pc, b, label, '-', 1);
		if (b + 1 < pc->nbox)
			pic_box(pc, ids, b + 1);
		else
			pic_cores(pc, ids, b + 1);
		pic_line(pc, b, "", '-', 1);
	}
}

/* The widest line the picture needs unwrapped: labels and core rows. */
static int pic_natural(const struct pic *pc, int *ids, int b)
{
	int lv = pc->box[b].member[0], w = 0;
	char label[256];

	for (int g = 0; g < lv_count(pc->t, lv); g++) {
		int first = -1, row = 0, need;

		ids[b] = g;
		for (int i = 0; i < pc->n; i++) {
			char tok[256];
			int k;

			if (!in_box(pc, ids, b + 1, i))
				continue;
			if (first < 0)
				first = i;
			if (b + 1 == pc->nbox && (k = core_token(pc, ids, b + 1, i, tok, sizeof(tok))) > 0)
				row += (row ? 1 : 0) + k;
		}
		if (first < 0)
			continue;
		box_label(pc, b, ids, first, label, sizeof(label));
		need = 4 * b + (int)strlen(label) + 6;
		w = need > w ? need : w;
		need = b + 1 < pc->nbox ? pic_natural(pc, ids, b + 1) : 4 * (b + 1) + row;
		w = need > w ? need : w;
	}
	return w;
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
	int *buf = calloc((size_t)n * 2, sizeof(int)), smin = n, smax = 0, ids[NR_LV];
	struct pic pc = { .t = t, .info = info, .n = n };

	if (!buf)
		return;
	pc.sib = buf + n;
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
	if (pic_levels(&pc) < 0) {
		free(buf);
		return;
	}
	pc.width = pic_natural(&pc, ids, 0);
	pc.width = pc.width < 40 ? 40 : pc.width > PIC_WIDTH ? PIC_WIDTH : pc.width;
	printf("%s\n", smax > 1 ? "[a b ...] is one core, its SMT CPUs by OS number:"
				: "[a] is one core (no SMT), its CPU by OS number:");
	pic_box(&pc, ids, 0);
	for (int c = 0; c < pc.ncross; c++) {
		int lv = pc.cross[c];

		printf("%s (they cross the boxes above):\n", lv_plural[lv]);
		for (int g = 0; g < lv_count(t, lv); g++) {
			int i = 0;

			while (i < n && lv_id(&info[i], lv) != g)
				i++;
			if (i == n)
				continue;
			if (lv == LV_NODE)
				printf("  NUMA node %d (OS %d): ", g, info[i].hw_node_os);
			else if (lv == LV_LLC)
				printf("  LLC %d: ", g);
			else
				printf("  package %d: ", g);
			print_group(info, n, lv_off[lv], g, buf);
		}
	}
	print_distances(t);
	free(buf);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */

/* 0 to run, 2 on bad usage (after one message); --help and --version exit. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const char *const formats[] = { "console", "tsv", "truth" };
	static const struct option lo[] = {
		{ "topology", required_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'f' },
		OPT_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c, f;

	while ((c = opt_next("place-info", argc, argv, lo, usage, 0)) != -1) {
		if (c == 't') {
			o->source = optarg;
		} else if (c == 'f' && (f = opt_choice("place-info", "format", optarg, formats, 3)) >= 0) {
			o->format = (enum format)f;
		} else {
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
	int err, n;

	if (parse_args(argc, argv, &o))
		return 2;
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
