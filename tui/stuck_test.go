package tui

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 5, 28, 10, 30, 0, 0, time.UTC)
	active := &registry.Cluster{ClusterSpec: registry.ClusterSpec{Name: "a", Policy: registry.Policy{MaxAttempts: 3}}, State: registry.ClusterActive}
	active.Status.LastHeartbeatAt = now.Add(-time.Minute)
	silent := &registry.Cluster{ClusterSpec: registry.ClusterSpec{Name: "s"}, State: registry.ClusterActive}
	silent.Status.LastHeartbeatAt = now.Add(-10 * time.Minute)
	disabled := &registry.Cluster{ClusterSpec: registry.ClusterSpec{Name: "d"}, State: registry.ClusterDisabled}
	pending := &registry.Cluster{ClusterSpec: registry.ClusterSpec{Name: "p"}, State: registry.ClusterPending}
	leased := func(end time.Time) registry.Job {
		return registry.Job{State: registry.JobInProgress, LeaseSeconds: 60, LeaseExpiresAt: end, ClaimedAt: now.Add(-time.Hour), LastActivityAt: now}
	}
	for _, tc := range []struct {
		name string
		job  registry.Job
		c    *registry.Cluster
		want registry.StuckReason
	}{
		{"queued on a healthy cluster", registry.Job{State: registry.JobQueued}, active, registry.NotStuck},
		{"queued on a pending cluster waits for an agent not yet registered", registry.Job{State: registry.JobQueued}, pending, registry.StuckQueuedOnPendingCluster},
		{"queued on a silent cluster", registry.Job{State: registry.JobQueued}, silent, registry.StuckQueuedOnSilentCluster},
		{"queued on a disabled cluster", registry.Job{State: registry.JobQueued}, disabled, registry.StuckClusterDisabled},
		{"lease running", leased(now.Add(time.Minute)), active, registry.NotStuck},
		{"lease expired", leased(now.Add(-time.Second)), active, registry.StuckLeaseExpired},
		{"lease expired on a silent cluster: the lease is the reason", leased(now.Add(-time.Second)), silent, registry.StuckLeaseExpired},
		{"held on a silent cluster", leased(now.Add(time.Minute)), silent, registry.StuckClusterSilent},
		{"held on a disabled cluster", leased(now.Add(time.Minute)), disabled, registry.StuckClusterDisabled},
		{"no lease, recent status", registry.Job{State: registry.JobInProgress, LastActivityAt: now.Add(-time.Minute)}, active, registry.NotStuck},
		{"no lease, silent", registry.Job{State: registry.JobInProgress, LastActivityAt: now.Add(-registry.NoLeaseStuckAfter - time.Second)}, active, registry.StuckNoLeaseSilent},
		{"attempts exhausted", registry.Job{State: registry.JobFailed, Error: registry.ErrorLeaseExpired, Attempt: 3}, active, registry.StuckAttemptsExhausted},
		{"failed for another reason", registry.Job{State: registry.JobFailed, Error: "ImagePullBackOff"}, active, registry.NotStuck},
		{"succeeded", registry.Job{State: registry.JobSucceeded}, silent, registry.NotStuck},
		{"unknown cluster", registry.Job{State: registry.JobQueued}, nil, registry.NotStuck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(&tc.job, tc.c, now)
			if got.Reason != tc.want {
				t.Errorf("got %v (%s), want %v", got.Reason, got.Explain, tc.want)
			}
			if (got.Reason == registry.NotStuck) != (got.Explain == "") {
				t.Errorf("a stuck job is explained, a healthy one is not: %q", got.Explain)
			}
		})
	}
	exhausted := Classify(&registry.Job{State: registry.JobFailed, Error: registry.ErrorLeaseExpired, Attempt: 3}, active, now)
	if want := "attempt 3 of 3"; !strings.Contains(exhausted.Explain, want) {
		t.Errorf("%q should say %q", exhausted.Explain, want)
	}
}

// TestStuckQueriesAgreeWithClassify: the registry queries behind the stuck
// tab and the overview find exactly the jobs Classify calls stuck.
func TestStuckQueriesAgreeWithClassify(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	ctx := context.Background()
	b := e.backend()
	now := e.clock.Now()
	f := newFleet()
	f.setClusters(must(b.ListClusters(ctx, registry.ClusterListParams{})))
	var want []string
	for _, j := range must(b.ListJobs(ctx, registry.JobListParams{Limit: 1000})) {
		if Classify(&j, f.cluster(j.ClusterID), now).Reason != registry.NotStuck {
			want = append(want, j.ID)
		}
	}
	if len(want) != 6 {
		t.Fatalf("the fixture has %d stuck jobs, want 6", len(want))
	}
	sets := registry.StuckJobQueries(registry.JobListParams{}, f.unreachable(now), now)
	n, err := countStuck(ctx, b, sets)
	if err != nil || n != len(want) {
		t.Errorf("countStuck = %d, %v; want %d", n, err, len(want))
	}
	byReason := must(countStuckByReason(ctx, b, sets))
	if byReason.Total != len(want) || byReason.Expired != 1 || byReason.Silent != 1 || byReason.Exhausted != 1 || byReason.Stranded != 3 {
		t.Errorf("by reason: %+v", byReason)
	}
	var got []string
	for offset := 0; ; offset += 4 { // pages of 4: the merge pages correctly
		page := must(listStuck(ctx, b, sets, offset, 4))
		for _, j := range page {
			got = append(got, j.ID)
		}
		if len(page) < 4 {
			break
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listStuck found %v, want %v", got, want)
	}
	// Narrowed to one cluster.
	us := f.resolve("prod-us-1")[0]
	one := registry.StuckJobQueries(registry.JobListParams{ClusterIDs: []string{us.ID}}, f.unreachable(now), now)
	if n := must(countStuck(ctx, b, one)); n != 4 {
		t.Errorf("stuck on prod-us-1: %d, want 4 (expired lease, two queued, attempts exhausted)", n)
	}
}
