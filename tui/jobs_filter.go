package tui

import (
	"slices"
	"strings"

	"github.com/tetherhq/tether/registry"
)

// The jobs view's `/` filter. The jobs are filtered by the store, over any
// number of them, so the filter is what the store can answer from its
// indexes and columns: clusters, kind, states, an error code, and words
// matched against the id, idempotency key, namespace, name, error text,
// kind and cluster name (each word on its own: every word must match;
// the registry resolves a word to the clusters whose name holds it). A state
// word (failed, in-progress) keeps jobs in that state and `!` before a
// state leaves those out (the state index answers both). A regular
// expression, a negated word or a negated cluster would have the store read
// most of the jobs (a million clusters-but-one took 1.2 s for a page), so
// they are refused with a message saying what works instead.

// jobFilter is the parsed `/` filter of the jobs view.
type jobFilter struct {
	clusters []string // ids; nil: every cluster
	names    []string // what was typed, for messages
	kind     registry.JobKind
	// states narrows the tabs (nil: any state); errorCode matches the
	// job's error exactly.
	states    []registry.JobState
	errorCode string
	search    string
	// nothing: the filter excludes every job (failed !failed).
	nothing bool
	err     string
}

// stateWord reads a job state as people type it: failed, in-progress,
// in_progress, "in progress" without the space.
func stateWord(w string) (registry.JobState, bool) {
	w = strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(w))
	if w == "inprogress" {
		w = "in_progress"
	}
	st := registry.JobState(w)
	return st, st.Valid()
}

func parseJobFilter(f *fleet, s string) jobFilter {
	var out jobFilter
	var words []string
	var include, exclude []registry.JobState
	for _, w := range strings.Fields(s) {
		neg := false
		if rest, ok := strings.CutPrefix(w, "!"); ok && rest != "" {
			neg, w = true, rest
		}
		k, v, ok := strings.Cut(w, ":")
		if st, isState := stateWord(w); isState && !ok {
			if neg {
				exclude = append(exclude, st)
			} else {
				include = append(include, st)
			}
			continue
		}
		switch {
		case neg && ok && (k == "cluster" || k == "c"):
			out.err = "!" + w + ": leaving a cluster out would read most jobs; name the clusters to keep (cluster:NAME, a prefix takes several)"
		case ok && (k == "cluster" || k == "c"):
			out.names = append(out.names, v)
			found := f.resolve(v)
			if len(found) == 0 {
				out.err = "no cluster matches " + v
			}
			for _, c := range found {
				out.clusters = append(out.clusters, c.ID)
			}
		case neg:
			out.err = "!" + w + ": over the jobs store ! leaves out a state (!failed), not a word (that would read every job)"
		case ok && k == "re":
			out.err = "re:" + v + ": the jobs store cannot match a regular expression over every job; words match the id, idempotency key, namespace, name, error text, kind or cluster name"
		case ok && (k == "kind" || k == "k"):
			out.kind = registry.JobKind(v)
			if !slices.Contains([]registry.JobKind{registry.KindApply, registry.KindDelete, registry.KindIntent}, out.kind) {
				out.err = "kind " + v + " is not one of apply, delete, intent"
			}
		case ok && (k == "error" || k == "e"):
			out.errorCode = v
		default:
			words = append(words, w)
		}
	}
	out.search = strings.Join(words, " ")
	if len(include) > 0 || len(exclude) > 0 {
		from := include
		if len(from) == 0 {
			from = registry.JobStates
		}
		out.states = []registry.JobState{}
		for _, st := range from {
			if !slices.Contains(exclude, st) && !slices.Contains(out.states, st) {
				out.states = append(out.states, st)
			}
		}
		out.nothing = len(out.states) == 0
	}
	return out
}

// needsQueryCounts: the registry's counters are per cluster and state only.
func (f jobFilter) needsQueryCounts() bool {
	return f.kind != "" || f.search != "" || f.states != nil || f.errorCode != "" || f.nothing
}
