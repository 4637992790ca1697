#!/bin/sh
# Generate the section-3 man pages from include/place.h: the comment above
# each PLACE_EXTERN declaration is its documentation, so the header stays the
# one source and the pages cannot drift (tests/man-sync.sh regenerates and
# compares). Consecutive declarations under one comment share a page's text.
# Besides the comment (DESCRIPTION) each page gets, derived from it:
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
mkdir -p "$out"
rm -f "$out"/*.3
awk -v out="$out" -v version="$version" -v date="$date" -v names="$names" '
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
# The first sentence of the comment, for the NAME line.
function summary(   s, i) {
	s = ""
	for (i = 1; i <= ncomment && comment[i] != ""; i++)
		s = s (s == "" ? "" : " ") comment[i]
	sub(/\. .*/, "", s); sub(/\.$/, "", s)
	return roff(s)
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
		printf ".SH NAME\n%s \\- %s\n", name, summary() > page
		printf ".SH SYNOPSIS\n.nf\n.B #include <place.h>\n.PP\n" > page
		for (f = 1; f <= ndecl; f++)
			printf ".B %s\n", roff(decl[f]) > page
		printf ".fi\n.PP\nLink with \\fI$(pkg-config \\-\\-libs libplace)\\fP.\n" > page
		printf ".SH DESCRIPTION\n.nf\n%s.fi\n", text > page
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
END { if (ndecl) emit() }
' "$header" | sort >"$out/.list"
{
	echo "# Generated by doc/mkman.sh from include/place.h: do not edit."
	printf 'dist_man_MANS +='
	sed 's#^# doc/man3/#; s#$#.3#' "$out/.list" | tr -d '\n'
	echo
} >"$out/../man3.am"
rm -f "$out/.list"
