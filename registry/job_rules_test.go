package registry

import (
	"slices"
	"testing"
	"time"
)

// TestJobActionRules: which jobs each admin operation applies to, by the
// job (Applies) and as store filters (Filters) that select exactly those.
func TestJobActionRules(t *testing.T) {
	jobs := []Job{}
	for _, s := range JobStates {
		jobs = append(jobs, Job{ID: string(s), State: s})
	}
	jobs = append(jobs, Job{ID: "failed-lease", State: JobFailed, Error: ErrorLeaseExpired})
	want := map[JobAction][]string{
		ActionRequeue: {"in_progress", "failed-lease"},
		ActionCancel:  {"queued", "in_progress"},
		ActionRetry:   {"failed", "conflict", "canceled", "expired", "failed-lease"},
		ActionDelete:  {"succeeded", "failed", "noop", "conflict", "canceled", "expired", "failed-lease"},
	}
	// matches is what a store does with a filter.
	matches := func(p JobListParams, j *Job) bool {
		return (len(p.States) == 0 || slices.Contains(p.States, j.State)) && (p.Error == "" || p.Error == j.Error)
	}
	for action, ids := range want {
		for _, base := range []JobListParams{{}, {States: []JobState{JobFailed, JobQueued}}} {
			filters := action.Filters(base)
			for i := range jobs {
				j := &jobs[i]
				applies := slices.Contains(ids, j.ID)
				if got := action.Applies(j); got != applies {
					t.Errorf("%s applies to %s: %v, want %v", action, j.ID, got, applies)
				}
				inBase := matches(base, j)
				selected := slices.ContainsFunc(filters, func(p JobListParams) bool { return matches(p, j) })
				if selected != (applies && inBase) {
					t.Errorf("%s over %v selects %s: %v, want %v", action, base.States, j.ID, selected, applies && inBase)
				}
			}
		}
		if action.Rule() == "" {
			t.Errorf("%s has no rule to say", action)
		}
	}
	if f := ActionCancel.Filters(JobListParams{States: []JobState{JobFailed}}); len(f) != 0 {
		t.Errorf("cancel over failed jobs: %v, want no query", f)
	}
}

func TestLeaseLapsedSince(t *testing.T) {
	read := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	now := read.Add(time.Minute)
	for _, c := range []struct {
		name  string
		state JobState
		end   time.Time
		want  bool
	}{
		{"ended between the read and now", JobInProgress, read.Add(30 * time.Second), true},
		{"ended exactly now", JobInProgress, now, true},
		{"ended before the read: read as expired", JobInProgress, read.Add(-time.Second), false},
		{"ends later", JobInProgress, now.Add(time.Second), false},
		{"no lease", JobInProgress, time.Time{}, false},
		{"finished", JobSucceeded, read.Add(30 * time.Second), false},
	} {
		j := Job{State: c.state, LeaseExpiresAt: c.end}
		if got := j.LeaseLapsedSince(read, now); got != c.want {
			t.Errorf("%s: LeaseLapsedSince = %v, want %v", c.name, got, c.want)
		}
	}
}
