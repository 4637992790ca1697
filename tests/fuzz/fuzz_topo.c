/*
 * libFuzzer target: topology sources through place_topo_load().
 *
 * Each input is tried twice:
 *   - as "synthetic:<bytes>" (up to the first NUL byte), and
 *   - as an XML export: the bytes are written to a memfd and loaded as
 *     "xml:/proc/self/fd/N" (place_topo_load only takes a path; the memfd
 *     keeps the run in memory, with no temporary file per input).
 * So the seed corpus holds plain synthetic strings and plain XML files.
 *
 * On success the flattened arrays (src/topo.h) and every public accessor must
 * agree (the checks of tests/topocheck.h, without Check), a deep copy must be
 * equal, an instance must build on it and answer a wakeup with a registered
 * CPU, and everything must free without a leak (LeakSanitizer). On failure the
 * return must be one of the documented errnos with *out NULL.
 *
 * Harness limits (not libplace's): a synthetic string whose arities multiply
 * past MAX_PUS is skipped (hwloc would build millions of objects: a timeout,
 * not a finding); see RELIABILITY.md.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <pthread.h>
#include <hwloc.h>
#include <sanitizer/allocator_interface.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "place.h"

extern char **environ;
#include "topo.h"

#define MAX_PUS 4096
#define FUZZ_MAX_INPUT 65536

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_topo: %s:%d: check failed: %s (source %.200s)\n",     \
				__FILE__, __LINE__, #cond, cur_source ? cur_source : "?");          \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static const char *cur_source;

/* Dense ids lie in -1..nr-1 and every id 0..nr-1 is used. */
static void check_ids(const struct place_topo *t, size_t off, int nr, int allow_minus)
{
	int *used = calloc((size_t)nr + 1, sizeof(int));

	CHECK(used);
	for (int i = 0; i < t->nr_cpus; i++) {
		int v = *(const int *)((const char *)&t->cpu[i] + off);

		CHECK(v >= (allow_minus ? -1 : 0) && v < nr);
		if (v >= 0)
			used[v]++;
	}
	for (int id = 0; id < nr; id++)
		CHECK(used[id] > 0);
	free(used);
}

static void check_arrays(const struct place_topo *t)
{
	int seen = 0;

	CHECK(t->nr_cpus > 0 && t->nr_cores > 0 && t->nr_llcs > 0 && t->nr_nodes > 0);
	CHECK(t->nr_packages >= 0);
	CHECK(t->nr_cores <= t->nr_cpus && t->nr_llcs <= t->nr_cores && t->nr_nodes <= t->nr_cpus);
	CHECK(t->cpu_limit == t->os_of[t->nr_cpus - 1] + 1);
	for (int i = 0; i < t->nr_cpus; i++) {
		CHECK(i == 0 || t->os_of[i] > t->os_of[i - 1]);
		CHECK(t->os_of[i] >= 0 && t->dense_of[t->os_of[i]] == i);
	}
	for (int c = 0; c < t->cpu_limit; c++) {
		CHECK(t->dense_of[c] >= -1 && t->dense_of[c] < t->nr_cpus);
		seen += t->dense_of[c] >= 0;
	}
	CHECK(seen == t->nr_cpus);
	check_ids(t, offsetof(struct place_topo_cpu, core), t->nr_cores, 0);
	check_ids(t, offsetof(struct place_topo_cpu, llc), t->nr_llcs, 0);
	check_ids(t, offsetof(struct place_topo_cpu, node), t->nr_nodes, 0);
	check_ids(t, offsetof(struct place_topo_cpu, package), t->nr_packages, 1);
	if (t->nr_packages == 0)
		for (int i = 0; i < t->nr_cpus; i++)
			CHECK(t->cpu[i].package == -1);

	/* Core slices: ascending, core_pos right, the whole core in one LLC. */
	CHECK(t->core_start[0] == 0 && t->core_start[t->nr_cores] == t->nr_cpus);
	for (int c = 0; c < t->nr_cores; c++) {
		CHECK(place__core_weight(t, c) > 0);
		CHECK(t->core_llc[c] >= 0 && t->core_llc[c] < t->nr_llcs);
		for (int p = t->core_start[c]; p < t->core_start[c + 1]; p++) {
			const struct place_topo_cpu *cpu = &t->cpu[t->core_cpus[p]];

			CHECK(p == t->core_start[c] || t->core_cpus[p] > t->core_cpus[p - 1]);
			CHECK(cpu->core == c && cpu->core_pos == p - t->core_start[c]);
			CHECK(cpu->llc == t->core_llc[c]);
		}
	}
	/* LLC slices: grouped core by core, SMT siblings adjacent. */
	CHECK(t->llc_start[0] == 0 && t->llc_start[t->nr_llcs] == t->nr_cpus);
	for (int l = 0; l < t->nr_llcs; l++) {
		CHECK(place__llc_weight(t, l) > 0);
		for (int p = t->llc_start[l]; p < t->llc_start[l + 1]; p++) {
			const struct place_topo_cpu *cpu = &t->cpu[t->llc_cpus[p]];

			CHECK(t->llc_cpus[p] >= 0 && t->llc_cpus[p] < t->nr_cpus);
			CHECK(cpu->llc == l && cpu->llc_pos == p - t->llc_start[l]);
			if (p > t->llc_start[l]) {
				const struct place_topo_cpu *prev = &t->cpu[t->llc_cpus[p - 1]];

				CHECK(prev->core < cpu->core ||
				      (prev->core == cpu->core && prev->core_pos + 1 == cpu->core_pos));
			}
		}
	}
	for (int i = 0; i < t->nr_cpus; i++) {
		const struct place_topo_cpu *c = &t->cpu[i];

		CHECK(c->llc_kind >= PLACE_LLC_CACHE && c->llc_kind <= PLACE_LLC_MACHINE);
		CHECK(c->llc_kind == PLACE_LLC_CACHE ? c->llc_level >= 1 && c->llc_level <= 5
						     : c->llc_level == -1 && c->hw_llc == -1);
		CHECK(t->node_os[c->node] == c->hw_node_os);
		CHECK((c->package == -1) == (c->hw_package == -1));
	}
}

/* The public accessors tell the same story as the arrays. */
static void check_accessors(const struct place_topo *t, const char *source)
{
	int *buf = malloc(sizeof(int) * (size_t)t->nr_cpus);
	place_cpu_info info;

	CHECK(buf);
	CHECK(strcmp(place_topo_source(t), source) == 0);
	CHECK(place_topo_nr_cpus(t) == t->nr_cpus);
	CHECK(place_topo_nr_cores(t) == t->nr_cores);
	CHECK(place_topo_nr_llcs(t) == t->nr_llcs);
	CHECK(place_topo_nr_nodes(t) == t->nr_nodes);
	CHECK(place_topo_nr_packages(t) == t->nr_packages);
	CHECK(place_topo_cpu_limit(t) == t->cpu_limit);
	CHECK(place_topo_cpu(t, -1) == -ERANGE && place_topo_cpu(t, t->nr_cpus) == -ERANGE);
	CHECK(place_topo_cpu_info(t, -1, &info) == -ENODEV);
	CHECK(place_topo_cpu_info(t, t->cpu_limit, &info) == -ENODEV);
	for (int i = 0; i < t->nr_cpus; i++) {
		const struct place_topo_cpu *c = &t->cpu[i];
		int os = t->os_of[i], n;

		CHECK(place_topo_cpu(t, i) == os);
		CHECK(place_topo_cpu_info(t, os, &info) == 0);
		CHECK(info.cpu == os && info.core == c->core && info.llc == c->llc);
		CHECK(info.node == c->node && info.package == c->package);
		CHECK(info.llc_level == c->llc_level && info.llc_kind == c->llc_kind);
		CHECK(info.smt == place__core_weight(t, c->core));
		CHECK(info.hw_core == c->hw_core && info.hw_llc == c->hw_llc);
		CHECK(info.hw_node_os == c->hw_node_os && info.hw_package == c->hw_package);

		n = place_topo_siblings(t, os, buf, t->nr_cpus);
		CHECK(n == info.smt);
		for (int k = 0; k < n; k++)
			CHECK(buf[k] == t->os_of[t->core_cpus[t->core_start[c->core] + k]]);
		CHECK(place_topo_siblings(t, os, NULL, 0) == n);

		n = place_topo_llc_cpus(t, os, buf, t->nr_cpus);
		CHECK(n == place__llc_weight(t, c->llc));
		for (int k = 0; k < n; k++) {
			int d;

			CHECK(k == 0 || buf[k] > buf[k - 1]); /* ascending OS numbers */
			CHECK(buf[k] >= 0 && buf[k] < t->cpu_limit);
			d = t->dense_of[buf[k]];
			CHECK(d >= 0 && t->cpu[d].llc == c->llc);
		}
		if (n > 1) /* a short buffer: the total still comes back */
			CHECK(place_topo_llc_cpus(t, os, buf, 1) == n);
	}
	/* A hole in the numbering is not a CPU. */
	for (int os = 0; os < t->cpu_limit; os++)
		if (t->dense_of[os] < 0) {
			CHECK(place_topo_cpu_info(t, os, &info) == -ENODEV);
			CHECK(place_topo_siblings(t, os, buf, 1) == -ENODEV);
			break;
		}
	free(buf);
}

static int int_array_eq(const int *a, const int *b, int n)
{
	return n == 0 || memcmp(a, b, sizeof(int) * (size_t)n) == 0;
}

static void check_dup(const struct place_topo *t)
{
	struct place_topo *d = place__topo_dup(t);

	if (!d)
		return; /* ENOMEM */
	CHECK(strcmp(d->source, t->source) == 0);
	CHECK(d->nr_cpus == t->nr_cpus && d->cpu_limit == t->cpu_limit && d->nr_cores == t->nr_cores);
	CHECK(d->nr_llcs == t->nr_llcs && d->nr_nodes == t->nr_nodes &&
	      d->nr_packages == t->nr_packages);
	CHECK(int_array_eq(d->os_of, t->os_of, t->nr_cpus));
	CHECK(int_array_eq(d->dense_of, t->dense_of, t->cpu_limit));
	CHECK(memcmp(d->cpu, t->cpu, sizeof(*t->cpu) * (size_t)t->nr_cpus) == 0);
	CHECK(int_array_eq(d->core_start, t->core_start, t->nr_cores + 1));
	CHECK(int_array_eq(d->core_cpus, t->core_cpus, t->nr_cpus));
	CHECK(int_array_eq(d->core_llc, t->core_llc, t->nr_cores));
	CHECK(int_array_eq(d->llc_start, t->llc_start, t->nr_llcs + 1));
	CHECK(int_array_eq(d->llc_cpus, t->llc_cpus, t->nr_cpus));
	CHECK(int_array_eq(d->node_os, t->node_os, t->nr_nodes));
	place_topo_free(d);
}

/* A clock that advances 1 us per reading: the real clock would make the
 * engine's time-driven branches (SIS_UTIL recompute, run averages) differ
 * from run to run, and so the coverage feedback and the inputs that a
 * fixed-seed run tries (run.sh's deterministic mode). */
static uint64_t step_clock(void *arg)
{
	return *(uint64_t *)arg += 1000;
}

/* The engine on whatever shape hwloc produced: every CPU registered, a new
 * task lands on a registered CPU, runs there, and the stats add up. */
static void check_engine(const place_topo *t)
{
	place *p = NULL;
	place_config cfg;
	uint64_t now = 0;
	place_task task;
	place_stats st;
	int cpu, err;

	place_config_init(&cfg);
	cfg.clock = step_clock;
	cfg.clock_arg = &now;
	err = place_create(&p, t, &cfg);
	if (err == -ENOMEM)
		return;
	CHECK(err == 0 && p);
	for (int i = 0; i < place_topo_nr_cpus(t); i++)
		CHECK(place_worker_register(p, place_topo_cpu(t, i), 0) == 0);
	place_task_init(&task, 0, 0);
	cpu = place_wakeup(p, &task, PLACE_CPU_NONE, 0);
	CHECK(cpu >= 0 && cpu < place_topo_cpu_limit(t));
	CHECK(place_topo_cpu_info(t, cpu, &(place_cpu_info){ 0 }) == 0);
	CHECK(place_run_begin(p, cpu, &task) == 0);
	CHECK(place_idle_enter(p, cpu) == -EBUSY);
	CHECK(place_run_end(p, cpu, &task, PLACE_RUN_SLEEP) == 0);
	CHECK(place_idle_enter(p, cpu) == 0);
	cpu = place_wakeup(p, &task, place_topo_cpu(t, place_topo_nr_cpus(t) - 1), 0);
	CHECK(cpu >= 0);
	CHECK(place_claim_release(p, cpu) == 0 || place_claim_release(p, cpu) == -ENOENT);
	CHECK(place_stats_read(p, -1, &st) == 0);
	CHECK(st.wakeups == 2);
	CHECK(st.hit_target + st.hit_prev + st.hit_recent + st.hit_idle_core + st.hit_idle_cpu +
		      st.hit_sibling + st.hit_fallback + st.hit_prev_smt + st.hit_widened ==
	      st.wakeups);
	for (int l = 0; l < place_topo_nr_llcs(t); l++)
		CHECK(place_stats_read(p, l, &st) == 0);
	CHECK(place_stats_read(p, place_topo_nr_llcs(t), &st) == -ERANGE);
	place_destroy(p);
}

/* Finding F1 (fixed): an export whose PUs shared an os_index (hwloc reads
 * os_index="[72" as 0) loaded with a repeated OS number in os_of[]; topo.c
 * now refuses it (regression: tests/fixtures/dup-os-index.xml). */
static void check_unique_os(const struct place_topo *t)
{
	for (int i = 1; i < t->nr_cpus; i++)
		CHECK(t->os_of[i] > t->os_of[i - 1]);
}

static void try_load(const char *source)
{
	place_topo *t = (place_topo *)(uintptr_t)1;
	int err;

	cur_source = source;
	err = place_topo_load(&t, source);
	if (err) {
		CHECK(t == NULL);
		CHECK(err == -EINVAL || err == -ENOENT || err == -EACCES || err == -ENODEV ||
		      err == -ENOMEM);
		CHECK(place_last_error()[0] != '\0');
		return;
	}
	CHECK(t != NULL);
	CHECK(place_last_error()[0] == '\0');
	check_unique_os(t);
	check_arrays(t);
	check_accessors(t, source);
	check_dup(t);
	if (t->nr_cpus <= MAX_PUS)
		check_engine(t);
	place_topo_free(t);
	cur_source = NULL;
}

/* hwloc synthetic arities are the numbers right after a ':' ("core:4");
 * their product is the PU count. Numbers after ':' inside attributes only
 * make this bound more conservative. */
static int synthetic_too_big(const char *s)
{
	double pus = 1;

	for (const char *c = s; *c; c++) {
		if (*c != ':')
			continue;
		unsigned long long n = 0;
		const char *d = c + 1;

		while (*d == ' ')
			d++;
		if (*d < '0' || *d > '9')
			continue;
		while (*d >= '0' && *d <= '9' && n < 100000000ull)
			n = n * 10 + (unsigned long long)(*d++ - '0');
		pus *= n ? (double)n : 1;
		if (pus > MAX_PUS)
			return 1;
	}
	return 0;
}

/*
 * hwloc 2.9 itself crashes on some malformed exports (a NUMANode without
 * complete_nodeset: NULL dereference in hwloc_bitmap_or under
 * hwloc_topology_load, with libxml2; input
 * tests/fuzz/corpus/topo/xml-hwloc-crash-numanode-nodeset). That is not
 * libplace's code and no libplace check can stop it, so before libplace sees
 * an XML input, plain hwloc loads it in a child process (hwloc_probe.c,
 * built with LeakSanitizer); inputs that kill the child, or on which plain
 * hwloc leaks (a failed load of an export with a misspelled NUMANode
 * attribute leaks its objects: xml-hwloc-leak-failed-load), are skipped and
 * counted (printed at exit).
 */
static unsigned long hwloc_crashes, hwloc_hangs, hwloc_leaks, probe_failures, xml_inputs;
static int no_screen; /* PLACE_FUZZ_NO_SCREEN=1: hand every input straight to libplace */

static char probe_path[4096];

/* Spawn and reap the probe with SIGALRM blocked here: libFuzzer's -timeout
 * timer (SIGALRM, every timeout/2 + 1 s) interrupted waitpid, and the input
 * then went to libplace unscreened (a SEGV in hwloc_bitmap_or, issue 14.8);
 * blocked, it waits until the probe is reaped, so this code runs the same
 * whatever the timing (a deterministic run stays deterministic). The child
 * gets an empty mask and SIGALRM's default action back (its own alarm). */
static int spawn_wait(char **argv, int *st)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t alrm, old, none;
	pid_t pid;
	int err;

	sigemptyset(&none);
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &alrm);
	err = posix_spawn(&pid, probe_path, &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	while (!err && waitpid(pid, st, 0) != pid)
		if (errno != EINTR)
			err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* posix_spawn (vfork-like: no copy of the sanitized parent's page tables)
 * of hwloc_probe, built beside this binary (the memfd is inherited). 1 when
 * plain hwloc survives the input without a leak; 0 when it crashes, hangs
 * (its alarm), leaks (LeakSanitizer's exit code 23), or the probe cannot
 * tell (no spawn, another exit): such an input is skipped, never handed to
 * libplace unscreened. Each kind is counted apart (report()). */
static int probe(const char *mode, const char *arg)
{
	char *argv[] = { probe_path, (char *)mode, (char *)arg, NULL };
	int st;

	if (!probe_path[0])
		return 1;
	if (spawn_wait(argv, &st) != 0) {
		probe_failures++;
		return 0;
	}
	if (WIFSIGNALED(st)) {
		if (WTERMSIG(st) == SIGALRM)
			hwloc_hangs++;
		else
			hwloc_crashes++;
		return 0;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 23)
		hwloc_leaks++;
	else
		probe_failures++;
	return 0;
}

static int hwloc_survives(const char *path)
{
	return probe("-x", path);
}

/*
 * hwloc 2.9 also leaks on some synthetic strings: when it rejects them
 * ("pack:2 [numa]": 32 bytes; input
 * tests/fuzz/corpus/topo/syn-hwloc-leak-rejected-numa) and on some that it
 * accepts and then fails to load. So every string goes to hwloc_probe (-s)
 * first, like every XML input, and is skipped when plain hwloc leaks on it.
 */
static unsigned long hwloc_synthetic_leaks;

static int hwloc_synthetic_clean(const char *str)
{
	unsigned long leaks = hwloc_leaks;

	if (probe("-s", str))
		return 1;
	hwloc_synthetic_leaks += hwloc_leaks - leaks;
	return 0;
}

static void report(void)
{
	fprintf(stderr, "fuzz_topo: %lu inputs; skipped as hwloc's own bugs: %lu crashing plain hwloc, "
		"%lu hanging it, %lu leaking in it (%lu of them synthetic strings); %lu the probe could "
		"not judge\n",
		xml_inputs, hwloc_crashes, hwloc_hangs, hwloc_leaks, hwloc_synthetic_leaks, probe_failures);
}

static int memfd = -1;
static char xml_source[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	unsetenv("PLACE_TOPOLOGY");
	/* hwloc loads libxml2 through a plugin that it unloads again, so leaks
	 * inside libxml2 (it leaks on some malformed encodings) would show up as
	 * "<unknown module>" frames that no suppression can name. Keep libxml2
	 * mapped: its frames then symbolize, and tests/fuzz/lsan.supp names
	 * libxml2 (not libplace, not hwloc). */
	(void)dlopen("libxml2.so.2", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
	memfd = memfd_create("fuzz_topo.xml", 0);
	if (memfd < 0) {
		perror("fuzz_topo: memfd_create");
		abort();
	}
	snprintf(xml_source, sizeof(xml_source), "xml:/proc/self/fd/%d", memfd);
	atexit(report);
	{
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n > 0) {
			self[n] = '\0';
			snprintf(probe_path, sizeof(probe_path), "%s/hwloc_probe", dirname(self));
			if (access(probe_path, X_OK) != 0) {
				fprintf(stderr, "fuzz_topo: no %s: XML inputs are not screened\n", probe_path);
				probe_path[0] = '\0';
			}
		}
	}
	no_screen = getenv("PLACE_FUZZ_NO_SCREEN") && *getenv("PLACE_FUZZ_NO_SCREEN") == '1';
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[sizeof("synthetic:") + FUZZ_MAX_INPUT];
	size_t n;

	if (size > FUZZ_MAX_INPUT)
		return 0;

	/* synthetic:<bytes up to the first NUL> */
	n = strnlen((const char *)data, size);
	memcpy(buf, "synthetic:", 10);
	memcpy(buf + 10, data, n);
	buf[10 + n] = '\0';
	if (!synthetic_too_big(buf + 10) && hwloc_synthetic_clean(buf + 10))
		try_load(buf);

	/* xml:/proc/self/fd/N holding exactly the bytes. hwloc's XML reader
	 * builds one object per element, so size bounds the work. */
	if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size) {
		perror("fuzz_topo: memfd write");
		abort();
	}
	xml_inputs++;
	if (no_screen || hwloc_survives(xml_source + 4))
		try_load(xml_source);
	return 0;
}
