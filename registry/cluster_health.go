package registry

import "time"

// ClusterHealth is a cluster's health in one word: the verdict every surface
// (cluster list, the console's clusters view, overview and cluster detail)
// shows, decided here once.
type ClusterHealth string

// The verdicts, most urgent first: Health gives the first that holds.
const (
	// HealthDisabled: an admin disabled the cluster; its agent is refused.
	HealthDisabled ClusterHealth = "disabled"
	// HealthPending: no agent has registered yet.
	HealthPending ClusterHealth = "pending"
	// HealthSilent: active, but its agent stopped heartbeating (Silent).
	HealthSilent ClusterHealth = "silent"
	// HealthPaused: an admin paused its queue; the agent is healthy and
	// its polls get no job.
	HealthPaused ClusterHealth = "paused"
	// HealthNotDraining: the agent heartbeats but takes no work
	// (QueueHealth.NotDraining).
	HealthNotDraining ClusterHealth = "not draining"
	// HealthActive: none of the above.
	HealthActive ClusterHealth = "active"
)

// Health is the cluster's verdict at now; q is its queue's health, nil when
// not known (then it cannot be HealthNotDraining).
//
// The lifecycle states come first: a disabled or pending cluster has no
// agent talking, so nothing else about it means anything. Silent comes
// before paused: the queue's pause is an admin's own decision and undone
// with a key, a silent agent is the news, and it will not take the jobs
// after a resume either (the docs name a silent cluster before a paused
// one wherever they list why jobs wait). Not draining holds only of an
// active, heartbeating, unpaused cluster (QueueHealth.NotDraining's rule).
func (c *Cluster) Health(now time.Time, q *QueueHealth) ClusterHealth {
	switch {
	case c.State == ClusterDisabled:
		return HealthDisabled
	case c.State == ClusterPending:
		return HealthPending
	case c.Silent(now):
		return HealthSilent
	case c.Paused():
		return HealthPaused
	case q != nil && q.NotDraining:
		return HealthNotDraining
	}
	return HealthActive
}

// Stranded says whether jobs queued on a cluster with this verdict wait
// for an agent that is not there to take them: the cluster is disabled,
// pending (no agent registered) or silent. A paused queue is not stranded
// (its agent is there and takes the jobs on resume), nor is a not-draining
// one (its agent is there and is the problem).
func (h ClusterHealth) Stranded() bool {
	return h == HealthDisabled || h == HealthPending || h == HealthSilent
}
