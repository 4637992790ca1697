/*
 * The topology corpus test: for every loadable XML of the shared corpus
 * (real machines and modelled big ones, see its README.md), libplace's
 * mapping equals NAME.truth.tsv, computed by hwloc's own tools; the exports
 * INDEX.tsv marks "no" (hwloc 3 XML) fail with a clear error; the synthetic
 * strings of synthetic/SYNTHETIC.tsv, loaded as "synthetic:STRING", give the
 * same truth as their exports.
 *
 * The corpus lives outside the repository: PLACE_CORPUS_DIR, else
 * $PLACE_TEST_SRCDIR/../../shared/testdata/topologies. Missing, the test says
 * so loudly and is skipped (exit 77), except under CI=true, where it fails.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "place.h"
#include "testlib.h"
#include "topocheck.h"

#define TRUTH_HEADER \
	"#pu_os_index\tcore_logical_index\tllc_logical_index\tnuma_os_index\t" \
	"package_logical_index\tllc_level"
#define MAX_FILES 1024

struct entry {
	char xml[PATH_MAX];   /* absolute path of the export */
	char truth[PATH_MAX]; /* its .truth.tsv */
	char name[256];       /* relative to the corpus, for messages */
	char source[PATH_MAX + 64]; /* what to load: xml:... or synthetic:... */
	int loads;            /* INDEX.tsv: 1 yes, 0 no, -1 absent */
};

/* Filled once by main() before the runner forks the tests; read-only after. */
static struct corpus {
	char dir[PATH_MAX];
	struct entry files[MAX_FILES];
	int nr_files;
	struct entry synth[64];
	int nr_synth;
} C;

/* ------------------------------------------------------------------------ */
/* Reading the corpus                                                        */

/* snprintf that refuses to truncate a path silently. */
static void fmt(char *buf, size_t size, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

static void fmt(char *buf, size_t size, const char *format, ...)
{
	va_list ap;
	int n;

	va_start(ap, format);
	n = vsnprintf(buf, size, format, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "test_corpus: path too long: %s\n", buf);
		exit(EXIT_FAILURE);
	}
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "loads" column of sub/INDEX.tsv for file name, -1 when no row. */
static int index_loads(const char *sub, const char *name)
{
	char path[PATH_MAX], line[4096];
	int loads = -1;
	FILE *f;

	fmt(path, sizeof(path), "%s/%sINDEX.tsv", C.dir, sub);
	f = fopen(path, "r");
	while (f && loads < 0 && fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');

		if (tab && (size_t)(tab - line) == strlen(name) && strncmp(line, name, strlen(name)) == 0)
			loads = strncmp(tab + 1, "yes", 3) == 0;
	}
	if (f)
		fclose(f);
	return loads;
}

static void add_file(const char *sub, const char *name)
{
	struct entry *e = &C.files[C.nr_files++];
	size_t n = strlen(name) - strlen(".xml");

	fmt(e->name, sizeof(e->name), "%s%s", sub, name);
	fmt(e->xml, sizeof(e->xml), "%s/%s", C.dir, e->name);
	fmt(e->truth, sizeof(e->truth), "%s/%s%.*s.truth.tsv", C.dir, sub, (int)n, name);
	fmt(e->source, sizeof(e->source), "xml:%s", e->xml);
	e->loads = index_loads(sub, name);
}

static int scan_dir(const char *sub)
{
	char path[PATH_MAX];
	struct dirent **list;
	int n;

	fmt(path, sizeof(path), "%s/%s", C.dir, sub);
	n = scandir(path, &list, NULL, alphasort);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (has_suffix(list[i]->d_name, ".xml") && C.nr_files < MAX_FILES)
			add_file(sub, list[i]->d_name);
		free(list[i]);
	}
	free(list);
	return 0;
}

/* synthetic/SYNTHETIC.tsv: name, 6 counts, then the string (last column). */
static void read_synthetic(void)
{
	char path[PATH_MAX], line[4096];
	FILE *f;

	fmt(path, sizeof(path), "%s/synthetic/SYNTHETIC.tsv", C.dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && C.nr_synth < 64) {
		char *name = line, *str = strrchr(line, '\t'), *tab = strchr(line, '\t');
		struct entry *e = &C.synth[C.nr_synth];

		if (!str || !tab || strncmp(line, "name\t", 5) == 0)
			continue;
		*tab = '\0';
		str[strcspn(str, "\r\n")] = '\0';
		fmt(e->name, sizeof(e->name), "SYNTHETIC.tsv:%s", name);
		fmt(e->truth, sizeof(e->truth), "%s/synthetic/syn_%s.truth.tsv", C.dir, name);
		fmt(e->source, sizeof(e->source), "synthetic:%s", str + 1);
		e->loads = 1;
		C.nr_synth++;
	}
	if (f)
		fclose(f);
}

/* ------------------------------------------------------------------------ */
/* Comparing with the truth                                                  */

/* Every line of the truth file against place_topo_cpu_info(); the count too. */
static void compare_truth(const place_topo *t, const struct entry *e)
{
	char line[512];
	int lineno = 1, rows = 0;
	FILE *f = fopen(e->truth, "r");

	ck_assert_msg(f != NULL, "%s: no truth file %s", e->name, e->truth);
	ck_assert_msg(fgets(line, sizeof(line), f) && strncmp(line, TRUTH_HEADER,
							       strlen(TRUTH_HEADER)) == 0,
		      "%s: unexpected truth header", e->name);
	while (fgets(line, sizeof(line), f)) {
		int v[6];
		place_cpu_info i;

		lineno++;
		ck_assert_msg(sscanf(line, "%d %d %d %d %d %d", &v[0], &v[1], &v[2], &v[3], &v[4],
				     &v[5]) == 6, "%s:%d: bad truth line", e->name, lineno);
		ck_assert_msg(place_topo_cpu_info(t, v[0], &i) == 0, "%s:%d: CPU %d not usable: %s",
			      e->name, lineno, v[0], place_last_error());
		ck_assert_msg(i.hw_core == v[1] && i.hw_llc == v[2] && i.hw_node_os == v[3] &&
			      i.hw_package == v[4] && i.llc_level == v[5],
			      "%s:%d: expected %d %d %d %d %d %d, libplace says %d %d %d %d %d %d",
			      e->name, lineno, v[0], v[1], v[2], v[3], v[4], v[5], i.cpu, i.hw_core,
			      i.hw_llc, i.hw_node_os, i.hw_package, i.llc_level);
		rows++;
	}
	fclose(f);
	ck_assert_msg(rows == place_topo_nr_cpus(t), "%s: truth has %d CPUs, libplace %d",
		      e->name, rows, place_topo_nr_cpus(t));
}

static void check_loadable(const struct entry *e)
{
	place_topo *t = NULL;
	int err = place_topo_load(&t, e->source);

	ck_assert_msg(err == 0, "%s: %s", e->name, place_last_error());
	compare_truth(t, e);
	place_check_topo(t);
	place_topo_free(t);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

START_TEST(t_xml_file)
{
	const struct entry *e = &C.files[_i];
	place_topo *t = NULL;
	int err;

	if (e->loads != 0) {
		ck_assert_msg(e->loads == 1, "%s: no INDEX.tsv row", e->name);
		check_loadable(e);
		return;
	}
	/* INDEX "no": an hwloc 3 export; the message must say so and name it */
	err = place_topo_load(&t, e->source);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_ptr_null(t);
	ck_assert_msg(strstr(place_last_error(), "cannot import XML version 3.0 > 2") &&
		      strstr(place_last_error(), e->name), "%s: unclear error '%s'", e->name,
		      place_last_error());
}
END_TEST

START_TEST(t_synthetic_string)
{
	check_loadable(&C.synth[_i]);
}
END_TEST

/* The corpus itself is whole: every loadable export has its truth. */
START_TEST(t_corpus_complete)
{
	struct stat st;
	int yes = 0, no = 0;

	for (int i = 0; i < C.nr_files; i++) {
		const struct entry *e = &C.files[i];

		yes += e->loads == 1;
		no += e->loads == 0;
		ck_assert_msg(e->loads != 1 || stat(e->truth, &st) == 0, "%s: no truth file",
			      e->name);
	}
	printf("corpus %s: %d exports, %d loadable, %d refused, %d synthetic strings\n", C.dir,
	       C.nr_files, yes, no, C.nr_synth);
	ck_assert_int_gt(yes, 0);
	ck_assert_int_gt(C.nr_synth, 0);
}
END_TEST

static Suite *corpus_suite(void)
{
	Suite *s = suite_create("corpus");
	TCase *whole = tcase_create("complete"), *xml = tcase_create("xml");
	TCase *syn = tcase_create("synthetic");

	tcase_add_test(whole, t_corpus_complete);
	tcase_add_loop_test(xml, t_xml_file, 0, C.nr_files);
	tcase_add_loop_test(syn, t_synthetic_string, 0, C.nr_synth);
	suite_add_tcase(s, whole);
	suite_add_tcase(s, xml);
	suite_add_tcase(s, syn);
	return s;
}

static void corpus_dir(char *buf, size_t size)
{
	const char *env = getenv("PLACE_CORPUS_DIR"), *src = getenv("PLACE_TEST_SRCDIR");

	if (env && *env)
		fmt(buf, size, "%s", env);
	else
		fmt(buf, size, "%s/../../shared/testdata/topologies", src ? src : "tests");
}

int main(void)
{
	const char *ci = getenv("CI");
	struct stat st;

	corpus_dir(C.dir, sizeof(C.dir));
	if (stat(C.dir, &st) != 0 || !S_ISDIR(st.st_mode) || scan_dir("") < 0 ||
	    scan_dir("synthetic/") < 0) {
		int fail = ci && strcmp(ci, "true") == 0;

		fprintf(stderr, "\n*** TOPOLOGY CORPUS NOT FOUND: %s ***\n"
			"*** set PLACE_CORPUS_DIR to ../shared/testdata/topologies; %s ***\n\n", C.dir,
			fail ? "CI=true, so this is a FAILURE" : "corpus test SKIPPED");
		printf("corpus missing: %s (%s)\n", C.dir, fail ? "FAIL under CI=true" : "SKIP");
		return fail ? EXIT_FAILURE : 77;
	}
	read_synthetic();
	return place_test_run(corpus_suite());
}
