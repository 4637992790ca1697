/*
 * Topology discovery: hwloc -> the flat arrays of topo.h.
 *
 * This is the only file that includes hwloc.h. place_topo_load() loads an
 * hwloc topology, reads what libplace needs of each usable PU into a small
 * record, destroys the hwloc topology, and builds the arrays from the records
 * alone. Nothing after the load keeps or touches hwloc.
 *
 * Per PU (see include/place.h):
 *   core     the Core ancestor; without one the PU is its own core.
 *   LLC      the topmost data or unified CPU cache ancestor, per PU because
 *            hybrid parts have PUs whose LLC level differs. Instruction caches
 *            and memory-side caches never count. Without any cache the LLC
 *            domain is the package, else the NUMA node, else the machine.
 *   node     the nearest NUMA node whose cpuset holds the PU. In hwloc 2 NUMA
 *            nodes are memory children, never ancestors, so we walk up the
 *            ancestors and look at the memory children attached to each.
 *   package  the Package ancestor, if any.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include <hwloc.h>

#include "topo.h"

/* ------------------------------------------------------------------------ */
/* Sources                                                                   */

/* SRC_MACHINE: the live machine without the cgroup and affinity
 * restrictions (every online PU), for instances that place_set_topology()
 * down to their cpuset and may grow back. */
/* SRC_PROCESS: the live machine's cgroup cpuset and the CPUs some thread
 * of the process may use (the union of their masks): not the caller's
 * mask alone, which a pinned worker has narrowed to one CPU. */
enum src_kind { SRC_LIVE, SRC_XML, SRC_SYNTHETIC, SRC_MACHINE, SRC_PROCESS };

struct src {
	enum src_kind kind;
	const char *name; /* the whole source string, for messages */
	const char *arg;  /* PATH or STRING */
};

static int is_live(const char *s)
{
	return s == NULL || s[0] == '\0' || strcmp(s, "live") == 0;
}

static int is_process(const char *s)
{
	return s && strcmp(s, "process") == 0;
}

/* PLACE_TOPOLOGY replaces "live" so that an unchanged program can run against
 * a modelled machine. Its value "live" (or empty) means the machine itself. */
static int parse_source(const char *source, struct src *s)
{
	static const char xml[] = "xml:", syn[] = "synthetic:";

	if (is_live(source) || is_process(source)) {
		const char *env = getenv("PLACE_TOPOLOGY");

		if (is_process(source) && (is_live(env) || is_process(env))) {
			*s = (struct src){ SRC_PROCESS, "process", NULL };
			return 0;
		}
		if (is_live(env)) {
			*s = (struct src){ SRC_LIVE, "live", NULL };
			return 0;
		}
		source = env;
	}
	s->name = source;
	if (strcmp(source, "machine") == 0) {
		*s = (struct src){ SRC_MACHINE, "machine", NULL };
		return 0;
	}
	if (strncmp(source, xml, sizeof(xml) - 1) == 0) {
		s->kind = SRC_XML;
		s->arg = source + sizeof(xml) - 1;
	} else if (strncmp(source, syn, sizeof(syn) - 1) == 0) {
		s->kind = SRC_SYNTHETIC;
		s->arg = source + sizeof(syn) - 1;
	} else {
		return place__fail(-EINVAL, "%s: unknown topology source (expected \"live\", "
				   "\"process\", \"machine\", \"xml:PATH\" or \"synthetic:STRING\")", source);
	}
	if (s->arg[0] == '\0')
		return place__fail(-EINVAL, "%s: empty %s", source,
				   s->kind == SRC_XML ? "path" : "synthetic description");
	return 0;
}

/* hwloc 2 refuses hwloc 3 exports but says why only under HWLOC_XML_VERBOSE,
 * on stderr, which a library cannot capture. So read the version attribute of
 * the <topology> element ourselves and give hwloc's own words. */
static int xml_version(FILE *f, int *minor)
{
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	const char *p;
	int major;

	buf[n] = '\0';
	*minor = 0;
	p = strstr(buf, "<topology");
	if (!p || !(p = strstr(p, "version=\"")) || sscanf(p + 9, "%d.%d", &major, minor) < 1)
		return -1;
	return major;
}

/* Missing and unreadable files get their own errno, checked before hwloc
 * (which would only say "invalid"). */
static int check_xml_file(const struct src *s)
{
	struct stat st;
	FILE *f;
	int major, minor;

	if (stat(s->arg, &st) != 0)
		return place__fail(errno == ENOTDIR ? -ENOENT : -errno, "%s: %s", s->name,
				   strerror(errno));
	if (S_ISDIR(st.st_mode))
		return place__fail(-EINVAL, "%s: is a directory, not an XML file", s->name);
	f = fopen(s->arg, "r");
	if (!f)
		return place__fail(-errno, "%s: cannot open: %s", s->name, strerror(errno));
	major = xml_version(f, &minor);
	fclose(f);
	if (major > 2)
		return place__fail(-EINVAL, "%s: cannot import XML version %d.%d > 2 "
				   "(an hwloc %d export; hwloc 2 reads XML v1 and v2 only)",
				   s->name, major, minor, major);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Loading with hwloc                                                        */

static int hwloc_setup(hwloc_topology_t t, const struct src *s)
{
	switch (s->kind) {
	case SRC_XML:
		if (hwloc_topology_set_xml(t, s->arg) != 0)
			return place__fail(-EINVAL, "%s: hwloc cannot parse it as XML (%s; "
					   "HWLOC_XML_VERBOSE=1 shows the parser's message)",
					   s->name, strerror(errno));
		return 0;
	case SRC_SYNTHETIC:
		if (hwloc_topology_set_synthetic(t, s->arg) != 0)
			return place__fail(-EINVAL, "%s: hwloc rejects this synthetic description "
					   "(HWLOC_SYNTHETIC_VERBOSE=1 shows where)", s->name);
		return 0;
	case SRC_MACHINE:
		/* the PUs outside our cgroup cpuset too (they are in the
		 * topology cpuset then; usable_cpuset takes all of them) */
		if (hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0)
			return place__fail(-EINVAL, "machine: hwloc_topology_set_flags: %s", strerror(errno));
		return 0;
	case SRC_LIVE:
	case SRC_PROCESS:
		break;
	}
	return 0;
}

/* hwloc 2.9 aborts a load whose allowed set has no PU; loading once more
 * with the disallowed PUs included tells that apart from a broken file. */
static int export_has_no_allowed_pu(const struct src *s)
{
	hwloc_topology_t t;
	int empty = 0;

	if (hwloc_topology_init(&t) != 0)
		return 0;
	if (hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) == 0 &&
	    hwloc_setup(t, s) == 0 && hwloc_topology_load(t) == 0)
		empty = !hwloc_bitmap_intersects(hwloc_topology_get_allowed_cpuset(t),
						 hwloc_topology_get_topology_cpuset(t));
	hwloc_topology_destroy(t);
	return empty;
}

static int load_failed(const struct src *s, int err)
{
	if (s->kind == SRC_XML && export_has_no_allowed_pu(s))
		return place__fail(-ENODEV, "%s: no usable CPU: the export's allowed_cpuset "
				   "holds no PU", s->name);
	if (s->kind == SRC_XML)
		return place__fail(-EINVAL, "%s: hwloc cannot load it: not a valid hwloc XML "
				   "export (HWLOC_XML_VERBOSE=1 shows hwloc's parser message)",
				   s->name);
	return place__fail(err == ENOMEM ? -ENOMEM : -EINVAL, "%s: hwloc cannot load it: %s",
			   s->name, strerror(err));
}

static int hwloc_open(hwloc_topology_t *out, const struct src *s)
{
	hwloc_topology_t t;
	int err;

	if (s->kind == SRC_XML && (err = check_xml_file(s)) < 0)
		return err;
	if (hwloc_topology_init(&t) != 0)
		return place__fail(-ENOMEM, "%s: hwloc_topology_init failed", s->name);
	err = hwloc_setup(t, s);
	if (err == 0 && hwloc_topology_load(t) != 0)
		err = load_failed(s, errno);
	if (err < 0) {
		hwloc_topology_destroy(t);
		return err;
	}
	*out = t;
	return 0;
}

/* Thread tid's affinity mask (0: the caller's), added to out, grown until
 * the kernel's mask fits. */
static int affinity_bitmap(pid_t tid, hwloc_bitmap_t out)
{
	for (int n = 1024; n <= (1 << 22); n *= 2) {
		size_t size = CPU_ALLOC_SIZE(n);
		cpu_set_t *set = CPU_ALLOC(n);

		if (!set)
			return -ENOMEM;
		if (sched_getaffinity(tid, size, set) == 0) {
			for (int c = 0; c < n; c++)
				if (CPU_ISSET_S(c, size, set))
					hwloc_bitmap_set(out, (unsigned)c);
			CPU_FREE(set);
			return 0;
		}
		CPU_FREE(set);
		if (errno != EINVAL)
			return -errno;
	}
	return -EINVAL;
}

/* The union of the masks of the process's threads (/proc/self/task);
 * a thread that exits meanwhile is skipped. Without /proc, the caller's. */
static int process_bitmap(hwloc_bitmap_t out)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	int err = 0, seen = 0;

	if (!dir)
		return affinity_bitmap(0, out);
	while (!err && (e = readdir(dir))) {
		long tid = strtol(e->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		err = affinity_bitmap((pid_t)tid, out);
		if (err == -ESRCH)
			err = 0;
		else if (!err)
			seen++;
	}
	closedir(dir);
	return err || seen ? err : affinity_bitmap(0, out);
}

/* Usable PUs: hwloc's allowed set (the cgroup cpuset for the live machine;
 * the export's allowed_cpuset for XML), and for the live machine also the
 * affinity mask, which hwloc ignores. */
static int usable_cpuset(hwloc_topology_t t, const struct src *s, hwloc_bitmap_t out)
{
	int err;

	hwloc_const_bitmap_t base = s->kind == SRC_MACHINE ? hwloc_topology_get_topology_cpuset(t)
							   : hwloc_topology_get_allowed_cpuset(t);

	if (hwloc_bitmap_copy(out, base) != 0)
		return -ENOMEM;
	if (s->kind == SRC_LIVE || s->kind == SRC_PROCESS) {
		hwloc_bitmap_t aff = hwloc_bitmap_alloc();

		if (!aff)
			return -ENOMEM;
		err = s->kind == SRC_LIVE ? affinity_bitmap(0, aff) : process_bitmap(aff);
		if (err == 0)
			hwloc_bitmap_and(out, out, aff);
		hwloc_bitmap_free(aff);
		if (err < 0)
			return place__fail(err, "%s: sched_getaffinity: %s", s->name, strerror(-err));
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Per-PU records                                                            */

/* What the flattening needs of one PU; hwloc's identifiers, -1 if absent. */
struct pu_rec {
	int os;
	int hw_core;
	int hw_llc;
	int llc_level;
	int llc_kind;
	int node_logical;
	int hw_node_os;
	int hw_package;
	int split_core; /* the Core when the LLC cache sits below it, else -1 */
	int64_t cluster; /* key of its cluster object (depth, logical index), -1 if none */
};

static int idx(unsigned i)
{
	return i == HWLOC_UNKNOWN_INDEX ? -1 : (int)i;
}

static hwloc_obj_t ancestor_of_type(hwloc_obj_t o, hwloc_obj_type_t type)
{
	for (o = o->parent; o; o = o->parent)
		if (o->type == type)
			return o;
	return NULL;
}

/* The last data/unified cache met going up is the topmost. */
static hwloc_obj_t top_dcache(hwloc_obj_t o)
{
	hwloc_obj_t top = NULL;

	for (o = o->parent; o; o = o->parent)
		if (hwloc_obj_type_is_dcache(o->type))
			top = o;
	return top;
}

/* Among the memory children of one object (through memory-side caches), the
 * NUMA node holding the PU with the lowest logical index, or best. */
static hwloc_obj_t better_node(hwloc_obj_t mem, unsigned pu, hwloc_obj_t best)
{
	for (; mem; mem = mem->next_sibling) {
		if (mem->type == HWLOC_OBJ_NUMANODE) {
			/* CPU-less nodes have an empty cpuset and so never match */
			if (hwloc_bitmap_isset(mem->cpuset, pu) &&
			    (!best || mem->logical_index < best->logical_index))
				best = mem;
		}
		best = better_node(mem->memory_first_child, pu, best);
	}
	return best;
}

/* Nearest = attached to the lowest ancestor that has a matching node. */
static hwloc_obj_t nearest_node(hwloc_obj_t pu)
{
	for (hwloc_obj_t a = pu->parent; a; a = a->parent) {
		hwloc_obj_t n = better_node(a->memory_first_child, pu->os_index, NULL);

		if (n)
			return n;
	}
	return NULL;
}

static void fill_llc(struct pu_rec *r, hwloc_obj_t pu, hwloc_obj_t core)
{
	hwloc_obj_t llc = top_dcache(pu);

	/* The engine needs every core inside one LLC domain (as the kernel's SMT
	 * domain always sits below its LLC domain). A cache below the core with
	 * nothing above (per-PU L1 only) would split the core: the domain is then
	 * the core's caches together. hw_llc still names hwloc's cache. */
	r->split_core = llc && core && !hwloc_bitmap_isincluded(core->cpuset, llc->cpuset)
			? (int)core->logical_index : -1;

	r->hw_llc = llc ? (int)llc->logical_index : -1;
	r->llc_level = llc ? (int)llc->attr->cache.depth : -1;
	if (llc)
		r->llc_kind = PLACE_LLC_CACHE;
	else if (r->hw_package >= 0)
		r->llc_kind = PLACE_LLC_PACKAGE;
	else if (r->node_logical >= 0)
		r->llc_kind = PLACE_LLC_NODE;
	else
		r->llc_kind = PLACE_LLC_MACHINE;
}

/* The cluster (SD_CLUSTER): going up from the core, the first data/unified
 * cache or Group (hwloc names ARM's clusters Groups of subtype "Cluster")
 * that holds more CPUs than the core and fewer than the LLC. Machines with
 * no such object (most x86: one L2 per core) have none. */
static int64_t cluster_key(hwloc_obj_t pu, hwloc_obj_t core, hwloc_obj_t llc)
{
	hwloc_obj_t low = core ? core : pu;

	if (!llc || !hwloc_bitmap_isincluded(low->cpuset, llc->cpuset))
		return -1;
	for (hwloc_obj_t o = low->parent; o && o != llc; o = o->parent)
		if ((hwloc_obj_type_is_dcache(o->type) || o->type == HWLOC_OBJ_GROUP) &&
		    !hwloc_bitmap_isequal(o->cpuset, low->cpuset) && !hwloc_bitmap_isequal(o->cpuset, llc->cpuset))
			return ((int64_t)o->depth << 32) | (int64_t)o->logical_index;
	return -1;
}

static void fill_rec(struct pu_rec *r, hwloc_obj_t pu)
{
	hwloc_obj_t core = ancestor_of_type(pu, HWLOC_OBJ_CORE);
	hwloc_obj_t pkg = ancestor_of_type(pu, HWLOC_OBJ_PACKAGE);
	hwloc_obj_t node = nearest_node(pu);

	r->os = (int)pu->os_index;
	r->hw_core = core ? (int)core->logical_index : -1;
	r->hw_package = pkg ? (int)pkg->logical_index : -1;
	r->node_logical = node ? (int)node->logical_index : -1;
	r->hw_node_os = node ? idx(node->os_index) : -1;
	fill_llc(r, pu, core);
	r->cluster = cluster_key(pu, core, top_dcache(pu));
}

/* Records of the usable PUs, in hwloc's logical order. */
static int read_pus(hwloc_topology_t t, hwloc_const_bitmap_t usable, const char *name, struct pu_rec **out,
		    int *nr)
{
	int n = 0, max = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
	struct pu_rec *recs = calloc(max > 0 ? (size_t)max : 1, sizeof(*recs));
	hwloc_obj_t pu = NULL;

	if (!recs)
		return -ENOMEM;
	while ((pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu)) != NULL) {
		if (pu->os_index == HWLOC_UNKNOWN_INDEX || !hwloc_bitmap_isset(usable, pu->os_index))
			continue;
		/* arrays are sized by the largest OS number: refuse one past
		 * the limit before anything is (1e9 took 3.8 GiB) */
		if (pu->os_index > PLACE_CPU_OS_MAX) {
			free(recs);
			return place__fail(-EINVAL, "%s: a PU has OS index %u, beyond libplace's limit %d "
					   "(PLACE_CPU_OS_MAX; Linux's largest NR_CPUS is 8192)", name,
					   pu->os_index, PLACE_CPU_OS_MAX);
		}
		fill_rec(&recs[n++], pu);
	}
	*out = recs;
	*nr = n;
	return 0;
}

/* hwloc's first NUMA latency matrix, rows and columns in its order: n
 * nodes (0: none), os[i] the OS index of the i-th (-1: unknown). */
struct latency {
	unsigned n;
	int *os;
	uint64_t *val; /* [n * n], from row to column */
};

static int read_latency(hwloc_topology_t t, struct latency *lat)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1, n;

	if (hwloc_distances_get_by_type(t, HWLOC_OBJ_NUMANODE, &nr, &d, HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 ||
	    !nr || !d)
		return 0; /* none: every other node is as far */
	n = d->nbobjs;
	lat->os = malloc(n * sizeof(*lat->os) + 1);
	lat->val = malloc((size_t)n * n * sizeof(*lat->val) + 1);
	if (lat->os && lat->val) {
		for (unsigned i = 0; i < n; i++)
			lat->os[i] = d->objs[i] ? idx(d->objs[i]->os_index) : -1;
		memcpy(lat->val, d->values, (size_t)n * n * sizeof(*lat->val));
		lat->n = n;
	}
	hwloc_distances_release(t, d);
	return lat->n == n ? 0 : -ENOMEM;
}

static int load_records(const struct src *s, struct pu_rec **recs, int *nr, struct latency *lat)
{
	hwloc_topology_t t = NULL;
	hwloc_bitmap_t usable;
	int err = hwloc_open(&t, s);

	if (err < 0)
		return err;
	usable = hwloc_bitmap_alloc();
	err = usable ? usable_cpuset(t, s, usable) : -ENOMEM;
	if (err == 0)
		err = read_pus(t, usable, s->name, recs, nr);
	if (err == 0)
		err = read_latency(t, lat);
	hwloc_bitmap_free(usable);
	hwloc_topology_destroy(t);
	if (err == -ENOMEM)
		return place__fail(err, "%s: out of memory", s->name);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Flattening (no hwloc from here on)                                        */

/* Dense ids in order of first appearance: keys[i] belongs to the i-th PU in
 * logical order; ids[i] receives its object's dense id (-1 for key -1). */
struct keypos {
	int64_t key;
	int pos;
};

static int cmp_keypos(const void *a, const void *b)
{
	const struct keypos *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->pos - y->pos;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Returns the number of distinct keys (other than -1) or -ENOMEM. */
static int dense_ids(const int64_t *keys, int n, int *ids)
{
	struct keypos *kp = malloc((size_t)n * sizeof(*kp) + 1);
	int *first = malloc((size_t)n * sizeof(*first) + 1);
	int nr = 0;

	if (!kp || !first) {
		free(kp);
		free(first);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		kp[i] = (struct keypos){ keys[i], i };
	qsort(kp, (size_t)n, sizeof(*kp), cmp_keypos);
	/* group leaders: the first position of each key */
	for (int i = 0; i < n; i++)
		if (kp[i].key != -1 && (i == 0 || kp[i].key != kp[i - 1].key))
			first[nr++] = kp[i].pos;
	qsort(first, (size_t)nr, sizeof(*first), cmp_int);
	/* ids[] of a leader position is its rank; members copy their leader's */
	for (int i = 0; i < n; i++)
		ids[i] = -1;
	for (int r = 0; r < nr; r++)
		ids[first[r]] = r;
	for (int i = 1; i < n; i++)
		if (kp[i].key != -1 && kp[i].key == kp[i - 1].key)
			ids[kp[i].pos] = ids[kp[i - 1].pos];
	free(kp);
	free(first);
	return nr;
}

static int64_t core_key(const struct pu_rec *r, int i)
{
	/* a PU without a Core is its own core: keys above any core index */
	return r->hw_core >= 0 ? r->hw_core : ((int64_t)1 << 32) + i;
}

/* LLC domains of different kinds and cache levels must not collide. */
static int64_t llc_key(const struct pu_rec *r)
{
	int64_t kind = (int64_t)r->llc_kind << 40, level = (int64_t)(r->llc_level + 1) << 32;

	switch (r->llc_kind) {
	case PLACE_LLC_CACHE:
		if (r->split_core >= 0) /* a kind of its own: keyed by the core */
			return ((int64_t)(PLACE_LLC_MACHINE + 1) << 40) | r->split_core;
		return kind | level | r->hw_llc;
	case PLACE_LLC_PACKAGE:
		return kind | r->hw_package;
	case PLACE_LLC_NODE:
		return kind | r->node_logical;
	default:
		return kind;
	}
}

enum { ID_CORE, ID_LLC, ID_NODE, ID_PKG, ID_CLUSTER, NR_IDS };

/* ids[k][i]: dense id of kind k for the i-th record; nr[k] the counts. */
static int assign_ids(const struct pu_rec *recs, int n, int *ids[NR_IDS], int nr[NR_IDS])
{
	int64_t *keys = malloc((size_t)n * sizeof(*keys) + 1);

	if (!keys)
		return -ENOMEM;
	for (int k = 0; k < NR_IDS; k++) {
		/* every CPU has a node (PUs without one share a stand-in: key 0);
		 * a CPU without a Package keeps package -1 (key -1) */
		for (int i = 0; i < n; i++) {
			const struct pu_rec *r = &recs[i];

			keys[i] = k == ID_CORE ? core_key(r, i) : k == ID_LLC ? llc_key(r) :
				  k == ID_NODE ? (int64_t)r->node_logical + 1 :
				  k == ID_CLUSTER ? r->cluster : r->hw_package;
		}
		nr[k] = dense_ids(keys, n, ids[k]);
		if (nr[k] < 0) {
			free(keys);
			return -ENOMEM;
		}
	}
	free(keys);
	return 0;
}

static void *zalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int alloc_arrays(struct place_topo *t)
{
	size_t n = (size_t)t->nr_cpus;

	t->os_of = zalloc(n, sizeof(int));
	t->dense_of = zalloc((size_t)t->cpu_limit, sizeof(int));
	t->cpu = zalloc(n, sizeof(*t->cpu));
	t->core_start = zalloc((size_t)t->nr_cores + 1, sizeof(int));
	t->core_cpus = zalloc(n, sizeof(int));
	t->core_llc = zalloc((size_t)t->nr_cores, sizeof(int));
	t->llc_start = zalloc((size_t)t->nr_llcs + 1, sizeof(int));
	t->llc_cpus = zalloc(n, sizeof(int));
	t->node_os = zalloc((size_t)t->nr_nodes, sizeof(int));
	if (!t->os_of || !t->dense_of || !t->cpu || !t->core_start || !t->core_cpus ||
	    !t->core_llc || !t->llc_start || !t->llc_cpus || !t->node_os)
		return -ENOMEM;
	return 0;
}

/* os_of ascending, dense_of its inverse. */
static void number_cpus(struct place_topo *t, const struct pu_rec *recs)
{
	for (int i = 0; i < t->nr_cpus; i++)
		t->os_of[i] = recs[i].os;
	qsort(t->os_of, (size_t)t->nr_cpus, sizeof(int), cmp_int);
	for (int c = 0; c < t->cpu_limit; c++)
		t->dense_of[c] = -1;
	for (int i = 0; i < t->nr_cpus; i++)
		t->dense_of[t->os_of[i]] = i;
}

static void fill_cpus(struct place_topo *t, const struct pu_rec *recs, int *ids[NR_IDS])
{
	for (int i = 0; i < t->nr_cpus; i++) {
		const struct pu_rec *r = &recs[i];
		struct place_topo_cpu *c = &t->cpu[t->dense_of[r->os]];

		c->core = ids[ID_CORE][i];
		c->llc = ids[ID_LLC][i];
		c->node = ids[ID_NODE][i];
		c->package = ids[ID_PKG][i];
		c->cluster = ids[ID_CLUSTER][i];
		c->llc_level = r->llc_level;
		c->llc_kind = r->llc_kind;
		c->hw_core = r->hw_core;
		c->hw_llc = r->hw_llc;
		c->hw_node_os = r->hw_node_os;
		c->hw_package = r->hw_package;
		t->node_os[c->node] = r->hw_node_os;
	}
}

/* Buckets in CSR form without a scratch array: count into start[], make
 * each start[b] the end of bucket b, then place the items in reverse so each
 * start[b] walks back to the bucket's beginning and items keep their order. */
static void csr_build(int nr, int n, const int *order, const int *bucket_of, int *start, int *items)
{
	for (int i = 0; i < n; i++)
		start[bucket_of[i]]++;
	for (int b = 1; b <= nr; b++)
		start[b] += start[b - 1];
	for (int i = n - 1; i >= 0; i--)
		items[--start[bucket_of[order[i]]]] = order[i];
}

/* Cores hold ascending OS numbers (dense order is ascending OS); LLCs hold
 * their cores in dense core order, so SMT siblings sit next to each other. */
static int build_csr(struct place_topo *t)
{
	int n = t->nr_cpus;
	int *core_of = zalloc((size_t)n, sizeof(int)), *llc_of = zalloc((size_t)n, sizeof(int));
	int *order = zalloc((size_t)n, sizeof(int));

	if (!core_of || !llc_of || !order) {
		free(core_of);
		free(llc_of);
		free(order);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		core_of[i] = t->cpu[i].core;
		llc_of[i] = t->cpu[i].llc;
		order[i] = i;
	}
	csr_build(t->nr_cores, n, order, core_of, t->core_start, t->core_cpus);
	csr_build(t->nr_llcs, n, t->core_cpus, llc_of, t->llc_start, t->llc_cpus);
	for (int i = 0; i < n; i++) {
		struct place_topo_cpu *c = &t->cpu[t->core_cpus[i]];

		c->core_pos = i - t->core_start[c->core];
		t->core_llc[c->core] = c->llc; /* a core lies in one LLC: see fill_llc() */
	}
	for (int i = 0; i < n; i++) {
		struct place_topo_cpu *c = &t->cpu[t->llc_cpus[i]];

		c->llc_pos = i - t->llc_start[c->llc];
	}
	free(core_of);
	free(llc_of);
	free(order);
	return 0;
}

static int flatten(struct place_topo *t, const struct pu_rec *recs, int n)
{
	int *ids[NR_IDS] = { NULL }, nr[NR_IDS], err = -ENOMEM;

	for (int k = 0; k < NR_IDS; k++)
		if (!(ids[k] = zalloc((size_t)n, sizeof(int))))
			goto out;
	if (assign_ids(recs, n, ids, nr) < 0)
		goto out;
	t->nr_cpus = n;
	t->nr_cores = nr[ID_CORE];
	t->nr_llcs = nr[ID_LLC];
	t->nr_nodes = nr[ID_NODE];
	t->nr_packages = nr[ID_PKG];
	t->nr_clusters = nr[ID_CLUSTER];
	t->cpu_limit = 0;
	for (int i = 0; i < n; i++)
		if (recs[i].os >= t->cpu_limit)
			t->cpu_limit = recs[i].os + 1;
	if (alloc_arrays(t) < 0)
		goto out;
	number_cpus(t, recs);
	fill_cpus(t, recs, ids);
	err = build_csr(t);
out:
	for (int k = 0; k < NR_IDS; k++)
		free(ids[k]);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Public: load, free, copy                                                  */

PLACE_EXTERN void place_topo_free(place_topo *t)
{
	if (!t)
		return;
	free(t->source);
	free(t->os_of);
	free(t->dense_of);
	free(t->cpu);
	free(t->core_start);
	free(t->core_cpus);
	free(t->core_llc);
	free(t->llc_start);
	free(t->llc_cpus);
	free(t->node_os);
	free(t->node_dist);
	free(t);
}

/* node_dist from hwloc's matrix, by each dense node's OS index: a stand-in
 * node or one the matrix lacks has no value (0). */
static int fill_node_dist(struct place_topo *t, const struct latency *lat)
{
	int nn = t->nr_nodes, *row;

	if (!lat->n || nn < 2)
		return 0;
	row = zalloc((size_t)nn, sizeof(int));
	if (!row || !(t->node_dist = zalloc((size_t)nn * (size_t)nn, sizeof(int)))) {
		free(row);
		return -ENOMEM;
	}
	for (int a = 0; a < nn; a++) {
		row[a] = -1;
		for (unsigned i = 0; i < lat->n && t->node_os[a] >= 0; i++)
			if (lat->os[i] == t->node_os[a])
				row[a] = (int)i;
	}
	for (int a = 0; a < nn; a++)
		for (int b = 0; b < nn && row[a] >= 0; b++) {
			uint64_t v = row[b] >= 0 ? lat->val[(size_t)row[a] * lat->n + (size_t)row[b]] : 0;

			t->node_dist[a * nn + b] = v >= INT32_MAX ? INT32_MAX - 1 : (int)v; /* INT_MAX: unknown (widen.c) */
		}
	free(row);
	return 0;
}

static int build_topo(place_topo **out, const struct src *s, const struct pu_rec *recs, int n,
		      const struct latency *lat)
{
	place_topo *t = calloc(1, sizeof(*t));

	if (!t || !(t->source = strdup(s->name)) || flatten(t, recs, n) < 0 || fill_node_dist(t, lat) < 0) {
		place_topo_free(t);
		return place__fail(-ENOMEM, "%s: out of memory", s->name);
	}
	*out = t;
	return 0;
}

/* hwloc accepts an export in which two PUs carry one OS index (a mangled
 * os_index attribute reads as 0): the OS number would then name two CPUs.
 * Refuse it (fuzz finding F1). */
static int check_unique_os(const struct src *s, const struct pu_rec *recs, int n)
{
	int limit = 0, err = 0;
	unsigned char *seen;

	for (int i = 0; i < n; i++)
		if (recs[i].os >= limit)
			limit = recs[i].os + 1;
	seen = calloc((size_t)limit, 1);
	if (!seen)
		return place__fail(-ENOMEM, "%s: out of memory", s->name);
	for (int i = 0; i < n && err == 0; i++)
		if (seen[recs[i].os]++)
			err = place__fail(-EINVAL, "%s: two PUs have OS index %d (a corrupt export)",
					  s->name, recs[i].os);
	free(seen);
	return err;
}

PLACE_EXTERN int place_topo_load(place_topo **out, const char *source)
{
	struct src s = { SRC_LIVE, "live", NULL };
	struct pu_rec *recs = NULL;
	struct latency lat = { 0, NULL, NULL };
	int n = 0, err;

	place__clear_error();
	if (!out)
		return place__fail(-EINVAL, "place_topo_load: out is NULL");
	*out = NULL;
	err = parse_source(source, &s);
	if (err == 0)
		err = load_records(&s, &recs, &n, &lat);
	if (err == 0 && n == 0)
		err = place__fail(-ENODEV, "%s: no usable CPU (allowed cpuset%s is empty)", s.name,
				  s.kind == SRC_LIVE || s.kind == SRC_PROCESS ? " and affinity mask intersection" : "");
	if (err == 0)
		err = check_unique_os(&s, recs, n);
	if (err == 0)
		err = build_topo(out, &s, recs, n, &lat);
	free(recs);
	free(lat.os);
	free(lat.val);
	return err;
}

static void *dup_mem(const void *src, size_t n, size_t size, int *failed)
{
	void *p = zalloc(n, size);

	if (p)
		memcpy(p, src, n * size);
	else
		*failed = 1;
	return p;
}

struct place_topo *place__topo_dup(const struct place_topo *s)
{
	struct place_topo *t = malloc(sizeof(*t));
	size_t n = (size_t)s->nr_cpus, is = sizeof(int);
	int failed = 0;

	if (!t)
		return NULL;
	*t = *s;
	t->source = strdup(s->source);
	failed = !t->source;
	t->os_of = dup_mem(s->os_of, n, is, &failed);
	t->dense_of = dup_mem(s->dense_of, (size_t)s->cpu_limit, is, &failed);
	t->cpu = dup_mem(s->cpu, n, sizeof(*s->cpu), &failed);
	t->core_start = dup_mem(s->core_start, (size_t)s->nr_cores + 1, is, &failed);
	t->core_cpus = dup_mem(s->core_cpus, n, is, &failed);
	t->core_llc = dup_mem(s->core_llc, (size_t)s->nr_cores, is, &failed);
	t->llc_start = dup_mem(s->llc_start, (size_t)s->nr_llcs + 1, is, &failed);
	t->llc_cpus = dup_mem(s->llc_cpus, n, is, &failed);
	t->node_os = dup_mem(s->node_os, (size_t)s->nr_nodes, is, &failed);
	t->node_dist = s->node_dist ? dup_mem(s->node_dist, (size_t)s->nr_nodes * (size_t)s->nr_nodes, is, &failed) : NULL;
	if (failed) {
		place_topo_free(t);
		return NULL;
	}
	return t;
}

/* ------------------------------------------------------------------------ */
/* Public: accessors                                                         */

static int null_topo(const char *fn)
{
	return place__fail(-EINVAL, "%s: topo is NULL", fn);
}

/* A call that succeeds leaves no stale detail behind (see place_last_error). */
static int ok(int v)
{
	place__clear_error();
	return v;
}

PLACE_EXTERN const char *place_topo_source(const place_topo *t)
{
	return t ? t->source : NULL;
}

#define PLACE__TOPO_COUNT(name, field)                                  \
	PLACE_EXTERN int place_topo_##name(const place_topo *t)         \
	{                                                               \
		return t ? ok(t->field) : null_topo("place_topo_" #name); \
	}

PLACE__TOPO_COUNT(nr_cpus, nr_cpus)
PLACE__TOPO_COUNT(nr_cores, nr_cores)
PLACE__TOPO_COUNT(nr_llcs, nr_llcs)
PLACE__TOPO_COUNT(nr_nodes, nr_nodes)
PLACE__TOPO_COUNT(nr_packages, nr_packages)
PLACE__TOPO_COUNT(cpu_limit, cpu_limit)

PLACE_EXTERN int place_topo_cpu(const place_topo *t, int i)
{
	if (!t)
		return null_topo(__func__);
	if (i < 0 || i >= t->nr_cpus)
		return place__fail(-ERANGE, "%s: index %d not in 0..%d", __func__, i, t->nr_cpus - 1);
	return ok(t->os_of[i]);
}

PLACE_EXTERN int place_topo_node_distance(const place_topo *t, int a, int b)
{
	if (!t)
		return null_topo(__func__);
	if (a < 0 || a >= t->nr_nodes || b < 0 || b >= t->nr_nodes)
		return place__fail(-ERANGE, "%s: nodes %d, %d not both in 0..%d", __func__, a, b, t->nr_nodes - 1);
	return ok(t->node_dist ? t->node_dist[a * t->nr_nodes + b] : 0);
}

/* Dense index of OS CPU cpu, or a negative errno with a detail. */
static int dense_cpu(const place_topo *t, int cpu, const char *fn)
{
	if (!t)
		return null_topo(fn);
	if (cpu < 0 || cpu >= t->cpu_limit || t->dense_of[cpu] < 0)
		return place__fail(-ENODEV, "%s: CPU %d is not usable in %s", fn, cpu, t->source);
	return ok(t->dense_of[cpu]);
}

PLACE_EXTERN int place_topo_cpu_info(const place_topo *t, int cpu, place_cpu_info *out)
{
	int d = out ? dense_cpu(t, cpu, __func__) : place__fail(-EINVAL, "%s: out is NULL", __func__);
	const struct place_topo_cpu *c;

	if (d < 0)
		return d;
	c = &t->cpu[d];
	*out = (place_cpu_info){
		.cpu = cpu, .core = c->core, .llc = c->llc, .node = c->node,
		.package = c->package, .llc_level = c->llc_level, .llc_kind = c->llc_kind,
		.smt = place__core_weight(t, c->core), .hw_core = c->hw_core,
		.hw_llc = c->hw_llc, .hw_node_os = c->hw_node_os, .hw_package = c->hw_package,
	};
	return 0;
}

/* Copy a CSR slice of dense CPUs out as OS numbers; the total is returned. */
static int copy_slice(const place_topo *t, const int *dense, int n, int *out, int max)
{
	for (int i = 0; i < n && i < max; i++)
		out[i] = t->os_of[dense[i]];
	return n;
}

/* The LLC slice is grouped by core, but the public API promises ascending OS
 * numbers: dense order is ascending OS order, so one pass over the CPUs. */
static int copy_llc(const place_topo *t, int llc, int *out, int max)
{
	int n = 0;

	for (int i = 0; i < t->nr_cpus; i++)
		if (t->cpu[i].llc == llc && n++ < max)
			out[n - 1] = t->os_of[i];
	return n;
}

/* The CPUs of cpu's core (llc = 0) or LLC domain (llc = 1), as OS numbers. */
static int cpu_slice(const place_topo *t, int cpu, int *out, int max, int llc, const char *fn)
{
	int d = (!out && max > 0) ? place__fail(-EINVAL, "%s: out is NULL", fn) : dense_cpu(t, cpu, fn);
	int core;

	if (d < 0)
		return d;
	if (llc)
		return copy_llc(t, t->cpu[d].llc, out, max);
	core = t->cpu[d].core;
	return copy_slice(t, &t->core_cpus[t->core_start[core]], place__core_weight(t, core), out,
			  max);
}

PLACE_EXTERN int place_topo_siblings(const place_topo *t, int cpu, int *out, int max)
{
	return cpu_slice(t, cpu, out, max, 0, __func__);
}

PLACE_EXTERN int place_topo_llc_cpus(const place_topo *t, int cpu, int *out, int max)
{
	return cpu_slice(t, cpu, out, max, 1, __func__);
}
