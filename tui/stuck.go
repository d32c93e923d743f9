package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tetherhq/tether/registry"
)

// This file is the one place that decides whether a job is stuck and says
// why, both for one job (Classify) and as registry queries (the stuck tab and
// the overview's counts).

// NoLeaseStuckAfter is how long an in_progress job without a lease may go
// without an ack, status or heartbeat before it counts as stuck
// (registry.NoLeaseStuckAfter).
const NoLeaseStuckAfter = registry.NoLeaseStuckAfter

// StuckReason is why a job is not making progress: the registry decides
// (registry.Job.Diagnose); the console explains.
type StuckReason = registry.StuckReason

const (
	NotStuck              = registry.NotStuck
	AttemptsExhausted     = registry.StuckAttemptsExhausted
	LeaseExpired          = registry.StuckLeaseExpired
	NoLeaseSilent         = registry.StuckNoLeaseSilent
	ClusterSilent         = registry.StuckClusterSilent
	QueuedOnSilentCluster = registry.StuckQueuedOnSilentCluster
	ClusterDisabled       = registry.StuckClusterDisabled
)

// Stuck is a job's diagnosis as the console shows it.
type Stuck struct {
	Reason StuckReason
	// Explain says what happened and what to do (with the console's keys),
	// in a sentence or two.
	Explain string
}

// Classify explains the registry's diagnosis of a job. c is the job's
// cluster (nil if unknown).
func Classify(j *registry.Job, c *registry.Cluster, now time.Time) Stuck {
	r := j.Diagnose(c, now)
	switch r {
	case AttemptsExhausted:
		max := ""
		if c != nil {
			max = fmt.Sprintf(" of %d", c.Policy.MaxAttempts)
		}
		return Stuck{r, fmt.Sprintf(
			"Attempts exhausted: the lease expired on attempt %d%s, so the job failed with error lease_expired. Requeue it (R) to try again.",
			j.Attempt, max)}
	case LeaseExpired:
		return Stuck{r, fmt.Sprintf(
			"Lease expired %s ago: its holder stopped renewing it. The reaper of tether serve puts it back in the queue as attempt %d; if no server is running, requeue it (R).",
			humanDuration(now.Sub(j.LeaseExpiresAt)), j.Attempt+1)}
	case ClusterDisabled:
		if j.State == registry.JobQueued {
			return Stuck{r, "Queued on a disabled cluster: its agent is refused and will not take it. Enable the cluster or cancel (C) the job."}
		}
		return Stuck{r, "Its cluster is disabled: the agent is refused every call and cannot report. Enable the cluster, or cancel (C) or requeue (R) the job."}
	case ClusterSilent:
		return Stuck{r, fmt.Sprintf(
			"Cluster %s is silent: no heartbeat for %s. Its agent may be down with this job in hand.",
			c.Name, humanDuration(now.Sub(c.LastSeen())))}
	case NoLeaseSilent:
		return Stuck{r, fmt.Sprintf(
			"No lease (its agent does not use leases) and no status for %s. It is never reclaimed automatically: if the agent is gone, requeue it (R); the old holder is fenced off.",
			humanDuration(now.Sub(j.LastHeard())))}
	case QueuedOnSilentCluster:
		return Stuck{r, fmt.Sprintf(
			"Queued on a silent cluster: %s sent no heartbeat for %s, so no agent is polling for it.",
			c.Name, humanDuration(now.Sub(c.LastSeen())))}
	}
	return Stuck{}
}

func lastSeen(c *registry.Cluster) time.Time { return c.LastSeen() }

// stuckSets are the registry queries whose union is the stuck set, each
// narrowed by base's filters (cluster, kind, search):
//
//	exhausted: failed with error lease_expired
//	expired:   in_progress with a lease that ended
//	silent:    in_progress, no lease, no activity for NoLeaseStuckAfter
//	stranded:  queued or in_progress on an unreachable (silent or disabled) cluster
//
// Only stranded overlaps the others (expired and silent jobs on an
// unreachable cluster); overlaps holds those intersections, so that
// |union| = sum(sets) - sum(overlaps).
type stuckSets struct {
	sets     []registry.JobListParams
	overlaps []registry.JobListParams
}

func stuckQueries(base registry.JobListParams, unreachable []string, now time.Time) stuckSets {
	s := stuckQueriesAll(base, unreachable, now)
	if base.States != nil {
		// A filter's states narrow every set; a set left with none drops
		// out, with its overlaps. (The overview, which counts the sets by
		// position, never filters by state.)
		s.sets = narrowSets(s.sets, base.States)
		s.overlaps = narrowSets(s.overlaps, base.States)
	}
	return s
}

func stuckQueriesAll(base registry.JobListParams, unreachable []string, now time.Time) stuckSets {
	with := func(f func(p *registry.JobListParams)) registry.JobListParams {
		p := base
		p.States, p.Limit, p.Offset = nil, 0, 0
		f(&p)
		return p
	}
	exhausted := with(func(p *registry.JobListParams) {
		p.States, p.Error = []registry.JobState{registry.JobFailed}, registry.ErrorLeaseExpired
	})
	expired := with(func(p *registry.JobListParams) {
		p.States, p.LeaseExpiredBefore = []registry.JobState{registry.JobInProgress}, now
	})
	silent := with(func(p *registry.JobListParams) {
		p.States, p.NoLease, p.ActivityBefore = []registry.JobState{registry.JobInProgress}, true, now.Add(-NoLeaseStuckAfter)
	})
	s := stuckSets{sets: []registry.JobListParams{exhausted, expired, silent}}
	ids := unreachable
	if len(base.ClusterIDs) > 0 {
		ids = nil
		for _, id := range unreachable {
			if slices.Contains(base.ClusterIDs, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return s
	}
	stranded := with(func(p *registry.JobListParams) {
		p.ClusterIDs, p.States = ids, []registry.JobState{registry.JobQueued, registry.JobInProgress}
	})
	s.sets = append(s.sets, stranded)
	for _, p := range []registry.JobListParams{expired, silent} {
		p.ClusterIDs = ids
		s.overlaps = append(s.overlaps, p)
	}
	return s
}

// narrowSets narrows each query's states to states, leaving out the
// queries with none left.
func narrowSets(sets []registry.JobListParams, states []registry.JobState) []registry.JobListParams {
	var out []registry.JobListParams
	for _, p := range sets {
		if st, ok := narrowStates(p.States, states); ok {
			p.States = st
			out = append(out, p)
		}
	}
	return out
}

// countStuck counts the stuck set.
func countStuck(ctx context.Context, b Backend, s stuckSets) (int, error) {
	total := 0
	for _, p := range s.sets {
		n, err := b.CountJobs(ctx, p)
		if err != nil {
			return 0, err
		}
		total += n
	}
	for _, p := range s.overlaps {
		n, err := b.CountJobs(ctx, p)
		if err != nil {
			return 0, err
		}
		total -= n
	}
	return total, nil
}

// stuckByReason counts each set apart, for the overview (overlapping jobs
// count under their own reason, not under their cluster's).
type stuckCounts struct {
	Total, Exhausted, Expired, Silent, Stranded int
}

func countStuckByReason(ctx context.Context, b Backend, s stuckSets) (stuckCounts, error) {
	var out stuckCounts
	ns := make([]int, len(s.sets))
	for i, p := range s.sets {
		n, err := b.CountJobs(ctx, p)
		if err != nil {
			return out, err
		}
		ns[i] = n
	}
	out.Exhausted, out.Expired, out.Silent = ns[0], ns[1], ns[2]
	if len(ns) > 3 {
		out.Stranded = ns[3]
		for _, p := range s.overlaps {
			n, err := b.CountJobs(ctx, p)
			if err != nil {
				return out, err
			}
			out.Stranded -= n
		}
	}
	out.Total = out.Exhausted + out.Expired + out.Silent + out.Stranded
	return out, nil
}

// listStuck returns one page of the stuck set, newest first (or oldest
// first when its queries say so: the order of the other tabs): each set's first offset+limit jobs, merged and
// de-duplicated.
func listStuck(ctx context.Context, b Backend, s stuckSets, offset, limit int) ([]registry.Job, error) {
	var all []registry.Job
	seen := map[string]bool{}
	for _, p := range s.sets {
		p.Limit, p.Offset = offset+limit, 0
		list, err := b.ListJobs(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, j := range list {
			if !seen[j.ID] {
				seen[j.ID] = true
				all = append(all, j)
			}
		}
	}
	slices.SortFunc(all, func(a, b registry.Job) int {
		if len(s.sets) > 0 && s.sets[0].OldestFirst {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		}
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	if offset >= len(all) {
		return []registry.Job{}, nil
	}
	return all[offset:min(len(all), offset+limit)], nil
}
