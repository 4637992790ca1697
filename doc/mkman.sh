#!/bin/sh
# Generate the section-3 man pages from include/place.h: the comment above
# each PLACE_EXTERN declaration is its documentation, so the header stays the
# one source and the pages cannot drift (tests/man-sync.sh regenerates and
# compares). Consecutive declarations under one comment share a page's text.
# Each page's NAME line is its entry in the summary table below. Besides the
# comment (DESCRIPTION, followed by the definitions of the block table below
# when the page has one), each page gets, derived from the comment:
#   RETURN VALUE  the comment's sentences about what the call returns (cut at
#                 the first error code), else what the return type implies
#   ERRORS        one entry per -EXXX the comment names, with the words that
#                 follow it there ("-ENOENT no worker registered on cpu")
#   SEE ALSO      place(7) and every other documented function it mentions
# The date is PLACE_RELEASE_DATE of configure.ac, so the pages are reproducible.
#   doc/mkman.sh [OUTDIR]     default: doc/man3 beside this script; also
#                             writes OUTDIR/../man3.am (the list for automake)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
header="$here/../include/place.h"
out=${1:-$here/man3}
version=$(sed -n 's/^AC_INIT(\[libplace\], \[\([^]]*\)\].*/\1/p' "$here/../configure.ac")
date=$(sed -n 's/^m4_define(\[place_release_date\], \[\([0-9-]*\)\])$/\1/p' "$here/../configure.ac")
[ -n "$date" ] || { echo "mkman.sh: no place_release_date in configure.ac" >&2; exit 1; }
# Every documented function: SEE ALSO names only those.
names=$(sed -n 's/^PLACE_EXTERN[^(]*[ *]\(place_[a-z0-9_]*\)(.*/\1/p' "$header" | tr '\n' ' ')

# NAME lines: one per documented function, "function<TAB>summary" (a short
# description in lower case, as man-pages(7) has them). A function without an
# entry, or an entry without a function, stops mkman.sh: add or remove the
# line with the declaration.
MKMAN_SUMMARIES=$(cat <<'EOF'
place_version	the version of the linked library, as a number
place_version_string	the version of the linked library, as a string
place_strerror	a short message for a libplace error code
place_last_error	the detail of the last libplace failure on the calling thread
place_topo_load	load a topology: this machine, an hwloc XML export or a synthetic description
place_topo_free	free a topology
place_topo_source	the source a topology was loaded from
place_topo_nr_cpus	the number of usable CPUs of a topology
place_topo_nr_cores	the number of cores of a topology
place_topo_nr_llcs	the number of last-level cache domains of a topology
place_topo_nr_nodes	the number of NUMA nodes (with usable CPUs) of a topology
place_topo_nr_packages	the number of packages of a topology
place_topo_cpu_limit	the largest usable OS CPU number plus one
place_topo_cpu	the i-th usable OS CPU number of a topology
place_topo_cpu_info	where a CPU sits: its core, LLC domain, NUMA node and package
place_topo_siblings	the usable CPUs of a CPU's core (its SMT siblings)
place_topo_llc_cpus	the usable CPUs sharing a CPU's last-level cache domain
place_topo_node_distance	the NUMA latency from one node to another
place_config_init	fill a place_config with the defaults
place_create	create a libplace instance over a topology
place_destroy	destroy a libplace instance
place_get_topo	the topology an instance was created over
place_set_topology	swap an instance to a restricted topology (CPU hotplug, cpusets)
place_topo_current	a copy of an instance's current topology
place_worker_register	register a worker thread on a CPU
place_worker_unregister	unregister a worker thread from a CPU
place_task_init	initialise a task record
place_task_set_cpus	restrict a task to a set of CPUs
place_task_set_cookie	set a task's core-scheduling cookie
place_task_set_group	set a task's NUMA group
place_task_size	the size of place_task, for FFI binders
place_wakeup	choose the CPU whose worker runs a task that became runnable
place_wakeup_ex	place_wakeup, also telling whether it claimed the CPU
place_idle_enter	mark a CPU idle: its worker found nothing to run and parks
place_run_begin	a worker starts running a task
place_run_end	a task stops running on its worker's CPU
place_run_end_retry	place_run_end, also naming the SMT siblings that may retry
place_run_switch	stop one task and start another on a CPU, in one call
place_run_handoff	hand a CPU from the running task to the task it woke, in one call
place_run_refused	place again a task that place_run_begin refused
place_claim_release	release the claim of an undelivered wakeup on a CPU
place_task_claimed	the CPU that a task's last wakeup claimed for it
place_task_forget	give up what a task's last wakeup left behind
place_steal_order	the CPUs an idle worker should steal from, nearest first
place_idle_near	claim an idle CPU near a CPU, to wake a thief there
place_steal_check	whether a worker may steal a task now
place_stats_read	read an instance's placement statistics
EOF
)
# Definitions a page shows after its comment: the lines of place.h from the
# first that starts with START to the first after it that starts with END,
# both included, as "page<TAB>START<TAB>END". A START or END that no longer
# matches stops mkman.sh, so a renamed definition cannot drop off its page.
MKMAN_BLOCKS=$(cat <<'EOF'
place_config_init	/* Placement policies.	#define PLACE_RUNTIME_ALL
place_stats_read	typedef struct place_stats {	} place_stats;
EOF
)
export MKMAN_SUMMARIES MKMAN_BLOCKS
mkdir -p "$out"
rm -f "$out"/*.3
awk -v out="$out" -v version="$version" -v date="$date" -v names="$names" -v header="$header" '
BEGIN {
	n = split(ENVIRON["MKMAN_SUMMARIES"], tab, "\n")
	for (i = 1; i <= n; i++)
		if (split(tab[i], f, "\t") == 2)
			summ[f[1]] = f[2]
	while ((getline l < header) > 0)
		hl[++nh] = l
	close(header)
	n = split(ENVIRON["MKMAN_BLOCKS"], tab, "\n")
	for (i = 1; i <= n; i++)
		if (split(tab[i], f, "\t") == 3)
			block(f[1], f[2], f[3])
}
# Append to blocktext[page] the header lines from START to END, tabs expanded
# (the aligned comments assume 8 columns).
function block(page, start, end,   i, j) {
	for (i = 1; i <= nh && index(hl[i], start) != 1; i++)
		;
	for (j = i; j <= nh && index(hl[j], end) != 1; j++)
		;
	if (j > nh) {
		printf "mkman.sh: %s: no place.h lines from \"%s\" to \"%s\"\n", page, start, end > "/dev/stderr"
		failed = 1
		return
	}
	for (; i <= j; i++)
		blocktext[page] = blocktext[page] roff(detab(hl[i])) "\n"
}
function detab(s,   r, c, i) {
	r = ""
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c != "\t")
			r = r c
		else
			do r = r " "; while (length(r) % 8)
	}
	return r
}
function flush_text(   i) {
	text = ""
	for (i = 1; i <= ncomment; i++)
		text = text roff(comment[i]) "\n"
}
function roff(s) {
	gsub(/\\/, "\\e", s)
	sub(/^[.'\'']/, "\\\\\\&&", s)
	return s
}
# The NAME line: the entry of the summary table for name.
function summary(name) {
	used[name] = 1
	if (name in summ)
		return roff(summ[name])
	printf "mkman.sh: %s has no line in MKMAN_SUMMARIES\n", name > "/dev/stderr"
	failed = 1
	return ""
}
# The comment as one line, for the sections derived from it.
function joined(   s, i) {
	s = ""
	for (i = 1; i <= ncomment; i++)
		if (comment[i] != "")
			s = s (s == "" ? "" : " ") comment[i]
	gsub(/  +/, " ", s)
	return s
}
# Sentences that say what the call returns, cut at the first error code.
function returns(all,   s, n, i, sent, r, cut) {
	s = all
	gsub(/\. /, ".\001", s)
	n = split(s, sent, "\001")
	r = ""
	for (i = 1; i <= n; i++) {
		if (sent[i] !~ /(^|: )[Rr]eturns|[Rr]eturns (0|1|-1|NULL|the|a|an|how|what|its|which|whether|true|false)|(is|are) returned/)
			continue
		cut = match(sent[i], /-E[A-Z]+/)
		if (cut) {
			sent[i] = substr(sent[i], 1, cut - 1)
			sub(/[ ,;]*$/, "", sent[i])
			if (sent[i] ~ /:$/)
				sent[i] = sent[i] " a negative errno value (see ERRORS)."
			else if (sent[i] ~ /(^| )or( \([^)]*\))?$/)
				sent[i] = sent[i] " a negative errno value (see ERRORS)."
			else
				sent[i] = sent[i] ", or a negative errno value (see ERRORS)."
		}
		r = r (r == "" ? "" : "\n.PP\n") roff(sent[i])
	}
	return r
}
function default_return(d) {
	if (d ~ /^void /) return "None."
	if (d ~ /^int / && nerr) return "0 on success (or the value DESCRIPTION names), a negative errno value on failure (see ERRORS)."
	return "See DESCRIPTION."
}
# The length of the clause s opens: up to the next error code, "; " or the
# end of a sentence, outside parentheses.
function clause(s,   i, c, depth, n) {
	n = length(s)
	depth = 0
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (c == "(") depth++
		else if (c == ")" && depth) depth--
		else if (depth) continue
		else if (c == ";" || (c == "." && substr(s, i + 1, 1) == " ")) return i - 1
		else if (c == "-" && substr(s, i - 1, 1) == " " && substr(s, i + 1, 2) ~ /^E[A-Z]/) return i - 1
	}
	return n
}
# ERRORS: code -> the words after it in the comment.
function errors(all,   s, code, rest, i, aside) {
	nerr = 0
	s = all
	while (match(s, /-E[A-Z]+/)) {
		code = substr(s, RSTART + 1, RLENGTH - 1)
		aside = substr(s, RSTART - 1, 1) == "(" && substr(s, RSTART + RLENGTH, 1) == ")"
		s = substr(s, RSTART + RLENGTH)
		if (aside) continue     # "(-ENODEV)": what another call returns
		rest = substr(s, 1, clause(s))
		sub(/^[ :]*/, "", rest); sub(/[ ,;:.]*((or|and)[ ,;:.]*)?$/, "", rest)
		sub(/^(when|if) /, "", rest)
		if (rest !~ /[a-z]/) rest = ""
		for (i = 1; i <= nerr; i++)
			if (ecode[i] == code) break
		if (i > nerr) { nerr++; ecode[i] = code; etext[i] = "" }
		if (rest != "" && index(etext[i], rest) == 0)
			etext[i] = etext[i] (etext[i] == "" ? "" : "; ") rest
	}
}
function see_also(all, self,   n, i, w, r, seen) {
	r = ".BR place (7)"
	n = split(names, w, " ")
	for (i = 1; i <= n; i++) {
		if (w[i] == self || seen[w[i]] || all !~ ("(^|[^a-z0-9_])" w[i] "([^a-z0-9_]|$)")) continue
		seen[w[i]] = 1
		r = r ",\n.BR " w[i] " (3)"
	}
	return r
}
function emit(   i, f, name, page, all, rv, e) {
	flush_text()
	all = joined()
	errors(all)
	rv = returns(all)
	for (i = 1; i <= ndecl; i++) {
		name = fname[i]
		page = out "/" name ".3"
		printf ".TH %s 3 %s \"libplace %s\" \"libplace\"\n", toupper(name), date, version > page
		printf ".SH NAME\n%s \\- %s\n", name, summary(name) > page
		printf ".SH SYNOPSIS\n.nf\n.B #include <place.h>\n.PP\n" > page
		for (f = 1; f <= ndecl; f++)
			printf ".B %s\n", roff(decl[f]) > page
		printf ".fi\n.PP\nLink with \\fI$(pkg-config \\-\\-libs libplace)\\fP.\n" > page
		printf ".SH DESCRIPTION\n.nf\n%s.fi\n", text > page
		if (name in blocktext)
			printf ".PP\nThe definitions it refers to, from\n.IR <place.h> :\n.PP\n.nf\n%s.fi\n", blocktext[name] > page
		printf ".SH RETURN VALUE\n%s\n", rv != "" ? rv : default_return(decl[i]) > page
		if (nerr) {
			printf ".SH ERRORS\n" > page
			for (e = 1; e <= nerr; e++)
				printf ".TP\n.B %s\n%s\n", ecode[e], etext[e] != "" ? roff(etext[e]) : ecode[e] == "ENOMEM" ? "Out of memory." : "See DESCRIPTION." > page
		}
		printf ".SH SEE ALSO\n%s\n", see_also(all, name) > page
		close(page)
		print name
	}
	ndecl = 0
}
/^\/\* -+ \*\/$/ { insection = 1; next }
insection && /^\/\* [A-Z]/ {
	section = $0; sub(/^\/\* */, "", section); sub(/ *\*\/$/, "", section)
	section = tolower(section); insection = 0; next
}
/^\/\*/ && !/^\/\* -/ {
	if (ndecl) emit()
	ncomment = 0; incomment = 1
}
incomment {
	line = $0
	sub(/^\/\* ?/, "", line); sub(/^ \* ?/, "", line); sub(/^ \*\/$/, "", line); sub(/ *\*\/$/, "", line)
	if (!($0 ~ /^ \*\/$/)) comment[++ncomment] = line
	if ($0 ~ /\*\//) incomment = 0
	next
}
/^PLACE_EXTERN/ {
	d = $0; sub(/^PLACE_EXTERN /, "", d)
	name = d; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
	decl[++ndecl] = d; fname[ndecl] = name
	next
}
{ if (ndecl) emit() }
END {
	if (ndecl) emit()
	for (name in summ)
		if (!(name in used)) {
			printf "mkman.sh: MKMAN_SUMMARIES names %s, which place.h does not document\n", name > "/dev/stderr"
			failed = 1
		}
	for (name in blocktext)
		if (!(name in used)) {
			printf "mkman.sh: MKMAN_BLOCKS names %s, which place.h does not document\n", name > "/dev/stderr"
			failed = 1
		}
	if (failed) exit 1
}
' "$header" >"$out/.list"
sort -o "$out/.list" "$out/.list"
{
	echo "# Generated by doc/mkman.sh from include/place.h: do not edit."
	printf 'dist_man_MANS +='
	sed 's#^# doc/man3/#; s#$#.3#' "$out/.list" | tr -d '\n'
	echo
} >"$out/../man3.am"
rm -f "$out/.list"
