package registry

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// NoLeaseStuckAfter is how long an in_progress job without a lease may go
// without a word from its holder before it counts as stuck: nothing will
// reclaim it, so a person must look.
const NoLeaseStuckAfter = 10 * time.Minute

// StuckQueries are the job queries whose union is every stuck job: the
// bulk form of Job.Diagnose, which the CLI (job list --stuck), the admin
// API and the console's stuck tab and overview all select with. The sets
// are disjoint, each holding the jobs Diagnose gives one reason
// (Reasons[i]), so |union| = sum(Sets) and a search word that the reason's
// text holds (the stuck tab's WHY column) is satisfied by the reason:
//
//	attempts exhausted:     failed with error lease_expired
//	lease expired:          in_progress with a lease that ended
//	no lease, silent:       in_progress, no lease, no activity for
//	                        NoLeaseStuckAfter, on a reachable cluster
//	cluster disabled:       queued, or in_progress with a live lease or
//	                        none, on a disabled cluster
//	cluster silent:         the same in_progress jobs on a silent cluster
//	queued, cluster silent: queued on a silent cluster
//	queued, cluster pending: queued on a cluster no agent registered for
//
// (the last four only when some cluster is disabled, silent or pending:
// the clusters whose queue is stranded, ClusterHealth.Stranded).
type StuckQueries struct {
	Sets    []JobListParams
	Reasons []StuckReason
}

// Unreachable is the clusters whose agent cannot be taking jobs, by
// why: disabled, pending (no agent registered) and silent, the clusters
// whose queue is stranded (ClusterHealth.Stranded), each in one list.
type Unreachable struct {
	Disabled, Pending, Silent []string
}

// Add counts c in if no agent can be taking its jobs at now, under the
// reason Diagnose gives its queued jobs.
func (u *Unreachable) Add(c *Cluster, now time.Time) {
	switch {
	case c.State == ClusterDisabled:
		u.Disabled = append(u.Disabled, c.ID)
	case c.State == ClusterPending:
		u.Pending = append(u.Pending, c.ID)
	case c.Silent(now):
		u.Silent = append(u.Silent, c.ID)
	}
}

// UnreachableClusters sorts out the clusters no agent can be taking jobs
// for.
func UnreachableClusters(clusters []Cluster, now time.Time) Unreachable {
	var out Unreachable
	for i := range clusters {
		out.Add(&clusters[i], now)
	}
	return out
}

// StuckJobQueries returns the stuck queries at now, each narrowed by
// base's filters (clusters, kind, search, order); base's states narrow
// every set, and a set left with no state drops out. Each set's search
// keeps only the words its reason's text does not hold: /silent finds the
// jobs stuck as "no lease, silent", "cluster silent" and "queued, cluster
// silent", /silent notebook those of them that also match notebook.
// unreachable is UnreachableClusters of the fleet.
func StuckJobQueries(base JobListParams, unreachable Unreachable, now time.Time) StuckQueries {
	var q StuckQueries
	add := func(r StuckReason, f func(p *JobListParams)) {
		p := base
		p.States, p.Limit, p.Offset, p.After = nil, 0, 0, nil
		p.Search = searchBesides(base.Search, r.String())
		f(&p)
		if base.States != nil {
			st, ok := IntersectStates(p.States, base.States)
			if !ok {
				return
			}
			p.States = st
		}
		q.Sets = append(q.Sets, p)
		q.Reasons = append(q.Reasons, r)
	}
	narrow := func(ids []string) []string {
		if len(base.ClusterIDs) == 0 {
			return ids
		}
		var out []string
		for _, id := range ids {
			if slices.Contains(base.ClusterIDs, id) {
				out = append(out, id)
			}
		}
		return out
	}
	disabled, pending, silent := narrow(unreachable.Disabled), narrow(unreachable.Pending), narrow(unreachable.Silent)
	add(StuckAttemptsExhausted, func(p *JobListParams) { p.States, p.Error = []JobState{JobFailed}, ErrorLeaseExpired })
	add(StuckLeaseExpired, func(p *JobListParams) { p.States, p.LeaseExpiredBefore = []JobState{JobInProgress}, now })
	add(StuckNoLeaseSilent, func(p *JobListParams) {
		p.States, p.NoLease, p.ActivityBefore = []JobState{JobInProgress}, true, now.Add(-NoLeaseStuckAfter)
		p.ExceptClusterIDs = slices.Concat(disabled, silent)
	})
	if len(disabled) > 0 {
		add(StuckClusterDisabled, func(p *JobListParams) {
			p.ClusterIDs, p.States, p.LeaseLiveAt = disabled, []JobState{JobQueued, JobInProgress}, now
		})
	}
	if len(silent) > 0 {
		add(StuckClusterSilent, func(p *JobListParams) {
			p.ClusterIDs, p.States, p.LeaseLiveAt = silent, []JobState{JobInProgress}, now
		})
		add(StuckQueuedOnSilentCluster, func(p *JobListParams) {
			p.ClusterIDs, p.States = silent, []JobState{JobQueued}
		})
	}
	if len(pending) > 0 {
		// A pending cluster has no agent, so none of its jobs is in progress.
		add(StuckQueuedOnPendingCluster, func(p *JobListParams) {
			p.ClusterIDs, p.States = pending, []JobState{JobQueued}
		})
	}
	return q
}

// searchBesides is search without the words that text holds (in any
// ASCII case, as the stores match).
func searchBesides(search, text string) string {
	if search == "" {
		return ""
	}
	text = asciiLower(text)
	var keep []string
	for _, w := range strings.Fields(search) {
		if !strings.Contains(text, asciiLower(w)) {
			keep = append(keep, w)
		}
	}
	return strings.Join(keep, " ")
}

// asciiLower lowers ASCII letters only, as the stores' searches ignore
// case (SQLite's LIKE, PostgreSQL's ILIKE on ASCII).
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
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
