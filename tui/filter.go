package tui

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
)

// The free text of a `/` filter, shared by every list. A filter is words
// separated by spaces and every word must hold:
//
//	word        the row's text contains it (any case)
//	re:PATTERN  the row's text matches the regular expression (RE2, any
//	            case; \s for a space, since a space ends the word); ^ and
//	            $ anchor at a column's edges, . also spans columns
//	!word       the row's text does not contain it; !re:PATTERN does not
//	            match
//
// A view's own fields (cluster:NAME, kind:...) are taken out before the
// rest comes here. "The row's text" is every column the row shows plus what
// it explains (error text, a stuck job's reason), so what is on screen can
// be found: its fields joined by newlines (filterText), so that ^ and $ mean
// a column's start and end.

// textTerm is one word of a filter.
type textTerm struct {
	neg bool
	sub string         // lower case; empty when re is set
	re  *regexp.Regexp // case-insensitive
}

// textQuery is the free text of a filter: every term must hold.
type textQuery struct {
	terms []textTerm
	// err says what was wrong with a word (an invalid regular expression);
	// the filter then matches nothing rather than something unexpected.
	err string
}

// feedFilter is what the filters of the events and the audit trail share:
// one cluster (cluster:NAME, c:NAME), the free text, and what was wrong.
type feedFilter struct {
	cluster string // id
	text    textQuery
	err     string
}

// parse reads s: cluster words (a name of no cluster taken as an id when
// unknownIsID), the key:value words keyword takes (it says so), and the
// rest as the free text.
func (ff *feedFilter) parse(f *fleet, s string, unknownIsID bool, keyword func(k, v string) bool) {
	var words []string
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, ":")
		switch {
		case ok && (k == "cluster" || k == "c"):
			if id, err := f.clusterWord(v, unknownIsID); err != "" {
				ff.err = err
			} else {
				ff.cluster = id
			}
		case !ok || !keyword(k, v):
			words = append(words, w)
		}
	}
	ff.text = parseTextQuery(words)
	if ff.text.err != "" && ff.err == "" {
		ff.err = ff.text.err
	}
}

// matchCluster says whether a record of clusterID passes the cluster word.
func (ff *feedFilter) matchCluster(clusterID string) bool {
	return ff.cluster == "" || clusterID == ff.cluster
}

// parseTextQuery parses free words of a filter.
func parseTextQuery(words []string) textQuery {
	var q textQuery
	for _, w := range words {
		t := textTerm{}
		if rest, ok := strings.CutPrefix(w, "!"); ok && rest != "" {
			t.neg, w = true, rest
		}
		if pat, ok := strings.CutPrefix(w, "re:"); ok {
			if pat == "" {
				q.err = "re: needs a pattern, e.g. /re:^api-[0-9]+$"
				continue
			}
			re, err := regexp.Compile("(?ims)" + pat)
			if err != nil {
				q.err = "invalid regex: " + regexpProblem(err) + " (RE2 syntax, \\s for a space)"
				continue
			}
			t.re = re
		} else {
			t.sub = strings.ToLower(w)
		}
		q.terms = append(q.terms, t)
	}
	return q
}

// regexpProblem is the part of a regexp error that says what is wrong (the
// package's message repeats the pattern).
func regexpProblem(err error) string {
	var e *syntax.Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return err.Error()
}

func (q textQuery) empty() bool { return len(q.terms) == 0 && q.err == "" }

// match reports whether every term holds for hay, the row's text.
func (q textQuery) match(hay string) bool {
	if q.err != "" {
		return false
	}
	lower := ""
	for _, t := range q.terms {
		var ok bool
		if t.re != nil {
			ok = t.re.MatchString(hay)
		} else {
			if lower == "" {
				lower = strings.ToLower(hay)
			}
			ok = strings.Contains(lower, t.sub)
		}
		if ok == t.neg {
			return false
		}
	}
	return true
}

// rowText is the plain text of a row's cells, what a filter matches: one
// field per cell.
func rowText(cells []cell) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte('\n')
		}
		for _, s := range c {
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// filterText joins what a row shows and explains into the text a filter
// matches, a field per line: a regular expression's ^ and $ anchor at a
// field's edges.
func filterText(fields ...string) string { return strings.Join(fields, "\n") }

// textFilterHelp is the syntax every filter shares, for the status line.
const textFilterHelp = "re:REGEX, !word excludes"
