package registry

import "time"

// StuckReason is why a job is not making progress: the one rule of
// "stuck" for one job, which the console explains and the stuck queries
// (StuckJobQueries: job list --stuck, the admin API, the console) select in bulk.
type StuckReason int

const (
	NotStuck StuckReason = iota
	// StuckAttemptsExhausted: the lease expired on the last attempt; the job
	// failed with error lease_expired and waits for a person to requeue it.
	StuckAttemptsExhausted
	// StuckLeaseExpired: the holder stopped renewing its lease; the reaper puts
	// it back in the queue (if a server is running to reap it).
	StuckLeaseExpired
	// StuckNoLeaseSilent: claimed by an agent that does not use leases, and
	// silent for NoLeaseStuckAfter.
	StuckNoLeaseSilent
	// StuckClusterSilent: claimed by an agent whose cluster stopped sending
	// heartbeats.
	StuckClusterSilent
	// StuckQueuedOnSilentCluster: waiting for an agent that stopped polling.
	StuckQueuedOnSilentCluster
	// StuckClusterDisabled: its cluster is disabled; its agent is refused.
	StuckClusterDisabled
	// StuckQueuedOnPendingCluster: waiting for an agent that never
	// registered (the cluster is pending).
	StuckQueuedOnPendingCluster
)

// String is the reason in a few words.
func (r StuckReason) String() string {
	switch r {
	case StuckAttemptsExhausted:
		return "attempts exhausted"
	case StuckLeaseExpired:
		return "lease expired"
	case StuckNoLeaseSilent:
		return "no lease, silent"
	case StuckClusterSilent:
		return "cluster silent"
	case StuckQueuedOnSilentCluster:
		return "queued, cluster silent"
	case StuckClusterDisabled:
		return "cluster disabled"
	case StuckQueuedOnPendingCluster:
		return "queued, cluster pending"
	}
	return ""
}

// CanBeStuck reports whether a job in state s may be stuck: queued on an
// unreachable cluster, in progress, or failed with its last lease expired
// (the states of StuckJobQueries' sets).
func (s JobState) CanBeStuck() bool {
	return s == JobQueued || s == JobInProgress || s == JobFailed
}

// Diagnose says whether the job is stuck at now and why; c is its cluster
// (nil when unknown: only the job's own state is judged).
func (j *Job) Diagnose(c *Cluster, now time.Time) StuckReason {
	switch j.State {
	case JobFailed:
		if j.Error == ErrorLeaseExpired {
			return StuckAttemptsExhausted
		}
	case JobInProgress:
		switch {
		case j.Leased() && now.After(j.LeaseExpiresAt):
			return StuckLeaseExpired
		case c != nil && c.State == ClusterDisabled:
			return StuckClusterDisabled
		case c != nil && c.Silent(now):
			return StuckClusterSilent
		case !j.Leased():
			if last := j.LastHeard(); !last.IsZero() && now.Sub(last) > NoLeaseStuckAfter {
				return StuckNoLeaseSilent
			}
		}
	case JobQueued:
		// The queue's verdict (ClusterHealth.Stranded), job by job.
		switch {
		case c != nil && c.State == ClusterDisabled:
			return StuckClusterDisabled
		case c != nil && c.State == ClusterPending:
			return StuckQueuedOnPendingCluster
		case c != nil && c.Silent(now):
			return StuckQueuedOnSilentCluster
		}
	}
	return NotStuck
}

// LastHeard is when the job's holder was last heard of: its last status or
// heartbeat, else its claim (zero for a job never claimed).
func (j *Job) LastHeard() time.Time {
	if !j.LastActivityAt.IsZero() {
		return j.LastActivityAt
	}
	return j.ClaimedAt
}

// LastSeen is when the cluster's agent was last heard of: its last
// heartbeat, else its registration.
func (c *Cluster) LastSeen() time.Time {
	if !c.Status.LastHeartbeatAt.IsZero() {
		return c.Status.LastHeartbeatAt
	}
	return c.RegisteredAt
}
