package registry

import (
	"testing"
	"time"
)

// TestDiagnose: the one rule of a stuck job, by state, lease, activity and
// the cluster's state and heartbeat.
func TestDiagnose(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	active := &Cluster{State: ClusterActive, Status: ClusterStatus{LastHeartbeatAt: now.Add(-10 * time.Second)}}
	silent := &Cluster{State: ClusterActive, Status: ClusterStatus{LastHeartbeatAt: now.Add(-time.Hour)}}
	disabled := &Cluster{State: ClusterDisabled}
	pending := &Cluster{State: ClusterPending}
	for _, tc := range []struct {
		name string
		job  Job
		c    *Cluster
		want StuckReason
	}{
		{"queued, healthy", Job{State: JobQueued}, active, NotStuck},
		{"queued, silent cluster", Job{State: JobQueued}, silent, StuckQueuedOnSilentCluster},
		{"queued, disabled cluster", Job{State: JobQueued}, disabled, StuckClusterDisabled},
		{"queued, pending cluster", Job{State: JobQueued}, pending, StuckQueuedOnPendingCluster},
		{"lease running", Job{State: JobInProgress, LeaseExpiresAt: now.Add(time.Minute)}, active, NotStuck},
		{"lease expired", Job{State: JobInProgress, LeaseExpiresAt: now.Add(-time.Minute)}, active, StuckLeaseExpired},
		{"no lease, quiet", Job{State: JobInProgress, ClaimedAt: now.Add(-NoLeaseStuckAfter - time.Second)}, active, StuckNoLeaseSilent},
		{"no lease, heard from", Job{State: JobInProgress, ClaimedAt: now.Add(-time.Hour), LastActivityAt: now.Add(-time.Minute)}, active, NotStuck},
		{"in progress, silent cluster", Job{State: JobInProgress, LeaseExpiresAt: now.Add(time.Minute)}, silent, StuckClusterSilent},
		{"out of attempts", Job{State: JobFailed, Error: ErrorLeaseExpired}, nil, StuckAttemptsExhausted},
		{"failed otherwise", Job{State: JobFailed, Error: "boom"}, nil, NotStuck},
	} {
		if got := tc.job.Diagnose(tc.c, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
