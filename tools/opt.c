/*
 * Option parsing shared by the command-line tools: see opt.h.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opt.h"
#include "place.h"

const char *opt_long_name(const struct option *lo, int val)
{
	for (; lo->name; lo++)
		if (lo->val == val)
			return lo->name;
	return "?";
}

/* The option getopt_long stopped at, as the user typed it. */
static const char *bad_word(char **argv)
{
	return optind > 0 ? argv[optind - 1] : "";
}

int opt_next(const char *prog, int argc, char **argv, const struct option *lo, const char *usage,
	     int allow_args)
{
	int c;

	opterr = 0; /* our messages: one line each, naming the option */
	c = getopt_long(argc, argv, ":hV", lo, NULL);
	switch (c) {
	case OPT_HELP:
		fputs(usage, stdout);
		exit(0);
	case OPT_VERSION:
		printf("%s (libplace) %s, library %s\n", prog, PACKAGE_VERSION, place_version_string());
		exit(0);
	case ':':
		fprintf(stderr, "%s: option '%s' needs a value (see --help)\n", prog, bad_word(argv));
		return OPT_ERROR;
	case '?':
		if (optopt && optopt < 256 && strncmp(bad_word(argv), "--", 2))
			fprintf(stderr, "%s: unknown option '-%c' (see --help)\n", prog, optopt);
		else
			fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, bad_word(argv));
		return OPT_ERROR;
	case -1:
		if (!allow_args && optind < argc) {
			fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[optind]);
			return OPT_ERROR;
		}
		return -1;
	default:
		return c;
	}
}

int opt_u64(const char *prog, const char *name, const char *arg, uint64_t min, uint64_t max,
	    uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || arg[0] == '+' || v < min || v > max) {
		fprintf(stderr, "%s: bad value '%s' for --%s: want a whole number from %" PRIu64 " to %" PRIu64
			"\n", prog, arg, name, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int opt_int(const char *prog, const char *name, const char *arg, int min, int max, int *out)
{
	uint64_t v;

	if (opt_u64(prog, name, arg, (uint64_t)min, (uint64_t)max, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

int opt_real(const char *prog, const char *name, const char *arg, double min, double max,
	     double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "%s: bad value '%s' for --%s: want a number from %g to %g\n", prog, arg,
			name, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int opt_word_is(const char *word, size_t len, const char *name)
{
	return strlen(name) == len && !strncasecmp(word, name, len);
}

int opt_choice(const char *prog, const char *name, const char *arg, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcasecmp(arg, names[i]))
			return i;
	fprintf(stderr, "%s: bad value '%s' for --%s: want one of", prog, arg, name);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %s", names[i]);
	fputc('\n', stderr);
	return -1;
}
