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
// kind and cluster name (each word on its own: every word must match). A state
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
	// typed is the state words as typed, for the stuck tab (forStuck).
	typed []typedState
	// nothing: the filter excludes every job (failed !failed).
	nothing bool
	err     string
}

// typedState is a state word of the filter: its state, as typed, and
// whether ! left it out.
type typedState struct {
	state registry.JobState
	word  string
	neg   bool
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
	for _, w := range strings.Fields(s) {
		neg := false
		if rest, ok := strings.CutPrefix(w, "!"); ok && rest != "" {
			neg, w = true, rest
		}
		k, v, ok := strings.Cut(w, ":")
		if st, isState := stateWord(w); isState && !ok {
			out.typed = append(out.typed, typedState{state: st, word: w, neg: neg})
			continue
		}
		switch {
		case neg && ok && (k == "cluster" || k == "c"):
			out.err = "!" + w + ": leaving a cluster out would read most jobs; name the clusters to keep (cluster:NAME, a prefix takes several)"
		case ok && (k == "cluster" || k == "c"):
			out.names = append(out.names, v)
			found := f.resolve(v)
			switch {
			case strings.TrimSpace(v) == "":
				out.err = errClusterNameNeeded
			case len(found) == 0:
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
	out.states, out.nothing = statesOf(out.typed)
	return out
}

// statesOf is the states the state words keep (nil: every state), and
// whether they leave none (failed !failed).
func statesOf(typed []typedState) ([]registry.JobState, bool) {
	var include, exclude []registry.JobState
	for _, t := range typed {
		if t.neg {
			exclude = append(exclude, t.state)
		} else {
			include = append(include, t.state)
		}
	}
	if len(include) == 0 && len(exclude) == 0 {
		return nil, false
	}
	from := include
	if len(from) == 0 {
		from = registry.JobStates
	}
	states := []registry.JobState{}
	for _, st := range from {
		if !slices.Contains(exclude, st) && !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	return states, len(states) == 0
}

// forStuck is the filter as the stuck tab reads it: a state no stuck job
// can be in is a word there, matched against the reasons as every word is
// (/expired finds the jobs stuck on an expired lease rather than nothing).
func (f jobFilter) forStuck() jobFilter {
	var typed []typedState
	words := strings.Fields(f.search)
	for _, t := range f.typed {
		if !t.neg && !t.state.CanBeStuck() {
			words = append(words, t.word)
			continue
		}
		typed = append(typed, t)
	}
	if len(typed) == len(f.typed) {
		return f
	}
	f.typed, f.search = typed, strings.Join(words, " ")
	f.states, f.nothing = statesOf(typed)
	return f
}

// needsQueryCounts: the registry's counters are per cluster and state only.
func (f jobFilter) needsQueryCounts() bool {
	return f.kind != "" || f.search != "" || f.states != nil || f.errorCode != "" || f.nothing
}
