package tui

import (
	"context"
	"fmt"
	"time"

	"github.com/tetherhq/tether/registry"
)

// This file explains the registry's stuck rule (Job.Diagnose for one job,
// StuckJobQueries in bulk) and counts and pages its queries for the stuck
// tab and the overview.

// Stuck is a job's diagnosis as the console shows it.
type Stuck struct {
	Reason registry.StuckReason
	// Explain says what happened and what to do (with the console's keys),
	// in a sentence or two.
	Explain string
}

// Classify explains the registry's diagnosis of a job. c is the job's
// cluster (nil if unknown).
func Classify(j *registry.Job, c *registry.Cluster, now time.Time) Stuck {
	r := j.Diagnose(c, now)
	switch r {
	case registry.StuckAttemptsExhausted:
		max := ""
		if c != nil {
			max = fmt.Sprintf(" of %d", c.Policy.MaxAttempts)
		}
		return Stuck{r, fmt.Sprintf(
			"Attempts exhausted: the lease expired on attempt %d%s, so the job failed with error lease_expired. Requeue it (R) to try again.",
			j.Attempt, max)}
	case registry.StuckLeaseExpired:
		return Stuck{r, fmt.Sprintf(
			"Lease expired %s ago: its holder stopped renewing it. The reaper of tether serve puts it back in the queue as attempt %d; if no server is running, requeue it (R).",
			humanDuration(now.Sub(j.LeaseExpiresAt)), j.Attempt+1)}
	case registry.StuckClusterDisabled:
		if j.State == registry.JobQueued {
			return Stuck{r, "Queued on a disabled cluster: its agent is refused and will not take it. Enable the cluster or cancel (C) the job."}
		}
		return Stuck{r, "Its cluster is disabled: the agent is refused every call and cannot report. Enable the cluster, or cancel (C) or requeue (R) the job."}
	case registry.StuckClusterSilent:
		return Stuck{r, fmt.Sprintf(
			"Cluster %s is silent: no heartbeat for %s. Its agent may be down with this job in hand.",
			c.Name, humanDuration(now.Sub(c.LastSeen())))}
	case registry.StuckNoLeaseSilent:
		return Stuck{r, fmt.Sprintf(
			"No lease (its agent does not use leases) and no status for %s. It is never reclaimed automatically: if the agent is gone, requeue it (R); the old holder is fenced off.",
			humanDuration(now.Sub(j.LastHeard())))}
	case registry.StuckQueuedOnSilentCluster:
		return Stuck{r, fmt.Sprintf(
			"Queued on a silent cluster: %s sent no heartbeat for %s, so no agent is polling for it.",
			c.Name, humanDuration(now.Sub(c.LastSeen())))}
	case registry.StuckQueuedOnPendingCluster:
		return Stuck{r, fmt.Sprintf(
			"Queued on a pending cluster: no agent has registered for %s yet, so none is polling for it. Register its agent (t in the clusters view issues a token), or cancel (C) the job.",
			c.Name)}
	}
	return Stuck{}
}

// countStuck counts the stuck set (its queries are disjoint).
func countStuck(ctx context.Context, b Backend, s registry.StuckQueries) (int, error) {
	c, err := countStuckByReason(ctx, b, s)
	return c.Total, err
}

// stuckCounts are the stuck jobs by reason, for the overview: each job
// under the reason Diagnose gives it (a job whose lease ran out on a
// silent cluster counts as expired; the jobs of a silent, disabled or
// pending cluster as stranded).
type stuckCounts struct {
	Total, Exhausted, Expired, Silent, Stranded int
}

func countStuckByReason(ctx context.Context, b Backend, s registry.StuckQueries) (stuckCounts, error) {
	var out stuckCounts
	for i, p := range s.Sets {
		n, err := b.CountJobs(ctx, p)
		if err != nil {
			return out, err
		}
		switch s.Reasons[i] {
		case registry.StuckAttemptsExhausted:
			out.Exhausted += n
		case registry.StuckLeaseExpired:
			out.Expired += n
		case registry.StuckNoLeaseSilent:
			out.Silent += n
		default:
			out.Stranded += n
		}
		out.Total += n
	}
	return out, nil
}

// listStuck returns one page of the stuck set, newest first (or oldest
// first when its queries say so: the order of the other tabs): each set's
// first offset+limit jobs, merged.
func listStuck(ctx context.Context, b Backend, s registry.StuckQueries, offset, limit int) ([]registry.Job, error) {
	var all []registry.Job
	seen := map[string]bool{}
	for _, p := range s.Sets {
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
	registry.SortJobs(all, len(s.Sets) > 0 && s.Sets[0].OldestFirst)
	if offset >= len(all) {
		return []registry.Job{}, nil
	}
	return all[offset:min(len(all), offset+limit)], nil
}
