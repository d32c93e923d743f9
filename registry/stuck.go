package registry

import (
	"context"
	"slices"
	"time"
)

// NoLeaseStuckAfter is how long an in_progress job without a lease may go
// without a word from its holder before it counts as stuck: nothing will
// reclaim it, so a person must look.
const NoLeaseStuckAfter = 10 * time.Minute

// StuckFilters returns job filters whose union is every stuck job at now:
// leased jobs whose lease has run out (the reaper will reclaim them), and
// unleased ones silent for NoLeaseStuckAfter.
func StuckFilters(now time.Time) []JobListParams {
	return []JobListParams{
		{States: []JobState{JobInProgress}, LeaseExpiredBefore: now},
		{States: []JobState{JobInProgress}, NoLease: true, ActivityBefore: now.Add(-NoLeaseStuckAfter)},
	}
}

// ListStuckJobs returns the jobs that are stuck now (StuckFilters), newest
// first, narrowed by p's clusters, kind and search; p.Limit bounds them.
func (r *Registry) ListStuckJobs(ctx context.Context, p JobListParams) ([]Job, error) {
	if len(p.States) > 0 && !slices.Contains(p.States, JobInProgress) {
		return []Job{}, nil // stuck jobs are in progress
	}
	seen := map[string]bool{}
	jobs := []Job{}
	for _, f := range StuckFilters(r.Now()) {
		f.ClusterIDs, f.Kind, f.Search, f.Limit = p.ClusterIDs, p.Kind, p.Search, p.Limit
		found, err := r.ListJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, j := range found {
			if !seen[j.ID] {
				seen[j.ID] = true
				jobs = append(jobs, j)
			}
		}
	}
	slices.SortFunc(jobs, func(a, b Job) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if p.Limit > 0 && len(jobs) > p.Limit {
		jobs = jobs[:p.Limit]
	}
	return jobs, nil
}
