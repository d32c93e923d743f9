package registry

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// NoLeaseStuckAfter is how long an in_progress job without a lease may go
// without a word from its holder before it counts as stuck: nothing will
// reclaim it, so a person must look.
const NoLeaseStuckAfter = 10 * time.Minute

// StuckQueries are the job queries whose union is every stuck job: the
// bulk form of Job.Diagnose, which the CLI (job list --stuck), the admin
// API and the console's stuck tab and overview all select with.
//
//	Sets[0] exhausted: failed with error lease_expired
//	Sets[1] expired:   in_progress with a lease that ended
//	Sets[2] silent:    in_progress, no lease, no activity for NoLeaseStuckAfter
//	Sets[3] stranded:  queued or in_progress on an unreachable cluster
//	                   (only when some cluster is unreachable)
//
// Only stranded overlaps the others (expired and silent jobs on an
// unreachable cluster); Overlaps holds those intersections, so that
// |union| = sum(Sets) - sum(Overlaps).
type StuckQueries struct {
	Sets     []JobListParams
	Overlaps []JobListParams
}

// Indexes of the sets in StuckQueries.Sets, before a state filter narrows
// them.
const (
	StuckSetExhausted = iota
	StuckSetExpired
	StuckSetSilent
	StuckSetStranded
)

// Unreachable says whether the cluster's agent cannot be taking jobs at
// now: the cluster is disabled or silent.
func (c *Cluster) Unreachable(now time.Time) bool {
	return c.State == ClusterDisabled || c.Silent(now)
}

// UnreachableClusters lists the ids of the clusters that are Unreachable.
func UnreachableClusters(clusters []Cluster, now time.Time) []string {
	var out []string
	for i := range clusters {
		if clusters[i].Unreachable(now) {
			out = append(out, clusters[i].ID)
		}
	}
	return out
}

// StuckJobQueries returns the stuck queries at now, each narrowed by
// base's filters (clusters, kind, search, order); base's states narrow
// every set, and a set left with no state drops out with its overlaps.
// unreachable is UnreachableClusters of the fleet.
func StuckJobQueries(base JobListParams, unreachable []string, now time.Time) StuckQueries {
	with := func(f func(p *JobListParams)) JobListParams {
		p := base
		p.States, p.Limit, p.Offset, p.After = nil, 0, 0, nil
		f(&p)
		return p
	}
	exhausted := with(func(p *JobListParams) { p.States, p.Error = []JobState{JobFailed}, ErrorLeaseExpired })
	expired := with(func(p *JobListParams) { p.States, p.LeaseExpiredBefore = []JobState{JobInProgress}, now })
	silent := with(func(p *JobListParams) {
		p.States, p.NoLease, p.ActivityBefore = []JobState{JobInProgress}, true, now.Add(-NoLeaseStuckAfter)
	})
	q := StuckQueries{Sets: []JobListParams{exhausted, expired, silent}}
	ids := unreachable
	if len(base.ClusterIDs) > 0 {
		ids = nil
		for _, id := range unreachable {
			if slices.Contains(base.ClusterIDs, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > 0 {
		q.Sets = append(q.Sets, with(func(p *JobListParams) {
			p.ClusterIDs, p.States = ids, []JobState{JobQueued, JobInProgress}
		}))
		for _, p := range []JobListParams{expired, silent} {
			p.ClusterIDs = ids
			q.Overlaps = append(q.Overlaps, p)
		}
	}
	if base.States != nil {
		q.Sets = narrowSets(q.Sets, base.States)
		q.Overlaps = narrowSets(q.Overlaps, base.States)
	}
	return q
}

// narrowSets narrows each query's states to states, leaving out the
// queries with none left.
func narrowSets(sets []JobListParams, states []JobState) []JobListParams {
	var out []JobListParams
	for _, p := range sets {
		if st, ok := IntersectStates(p.States, states); ok {
			p.States = st
			out = append(out, p)
		}
	}
	return out
}

// IntersectStates is the states in both lists, nil meaning every state;
// ok is false when nothing is left.
func IntersectStates(a, b []JobState) (out []JobState, ok bool) {
	switch {
	case a == nil:
		return b, b == nil || len(b) > 0
	case b == nil:
		return a, len(a) > 0
	}
	for _, s := range a {
		if slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out, len(out) > 0
}

// ListStuckJobs returns the jobs that are stuck now (StuckJobQueries over
// the clusters the caller may see), newest first (oldest first with
// p.OldestFirst), narrowed by p's clusters, states, kind and search;
// p.Offset and p.Limit page them.
func (r *Registry) ListStuckJobs(ctx context.Context, p JobListParams) ([]Job, error) {
	clusters, err := r.ListClusters(ctx, ClusterListParams{})
	if err != nil {
		return nil, err
	}
	now := r.Now()
	q := StuckJobQueries(p, UnreachableClusters(clusters, now), now)
	seen := map[string]bool{}
	jobs := []Job{}
	for _, f := range q.Sets {
		if p.Limit > 0 {
			f.Limit = p.Offset + p.Limit
		}
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
	SortJobs(jobs, p.OldestFirst)
	if p.Offset >= len(jobs) {
		return []Job{}, nil
	}
	jobs = jobs[p.Offset:]
	if p.Limit > 0 && len(jobs) > p.Limit {
		jobs = jobs[:p.Limit]
	}
	return jobs, nil
}

// SortJobs orders jobs as every job list does: newest first by creation
// (then id), or oldest first.
func SortJobs(jobs []Job, oldestFirst bool) {
	slices.SortFunc(jobs, func(a, b Job) int {
		if oldestFirst {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		}
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
}
