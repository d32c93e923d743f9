package storetest

import (
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// heartbeat sends a ClusterHeartbeat from a's agent at the clock's now.
func (e *env) heartbeat(a *registry.Agent) {
	e.t.Helper()
	ev := registry.Event{Kind: registry.EventClusterHeartbeat, ResourceRef: registry.ResourceRef{Name: a.Cluster.ID}}
	if _, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{ev}); err != nil {
		e.t.Fatalf("heartbeat: %v", err)
	}
}

func (e *env) health(ref string) *registry.QueueHealth {
	e.t.Helper()
	h, err := e.reg.QueueHealth(e.ctx, ref)
	if err != nil {
		e.t.Fatalf("QueueHealth(%s): %v", ref, err)
	}
	return h
}

// testQueueHealth: the figures of a cluster's queue (oldest queued job,
// median wait from submit to claim, failure rate of the last hour) and the
// not-draining flag, which rises only for a live, unpaused agent that leaves
// waiting jobs alone.
func testQueueHealth(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod")
	e.agent("quiet")
	t0 := e.clock.Now()

	h := e.health("prod")
	if h.Queued != 0 || !h.OldestQueuedAt.IsZero() || h.WaitSamples != 0 || h.Finished != 0 || h.NotDraining {
		t.Fatalf("empty queue: %+v", h)
	}
	if _, ok := h.FailureRate(); ok {
		t.Fatal("a failure rate with nothing finished")
	}

	j1 := e.submit(a.Cluster.ID, nil)
	j2 := e.submit(a.Cluster.ID, nil)
	j3 := e.submit(a.Cluster.ID, nil)
	e.clock.Advance(10 * second)
	c1, err := e.reg.AckJob(e.ctx, a, j1.ID) // waited 10s
	wantNoErr(t, err)
	e.clock.Advance(20 * second)
	c2, err := e.reg.AckJob(e.ctx, a, j2.ID) // waited 30s
	wantNoErr(t, err)
	e.clock.Advance(30 * second)
	_, err = e.reg.AckJob(e.ctx, a, j3.ID) // waited 60s
	wantNoErr(t, err)
	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j1.ID, c1.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "boom"})))
	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j2.ID, c2.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})))
	q := e.submit(a.Cluster.ID, nil)
	canceled := e.submit(a.Cluster.ID, nil)
	_, err = e.reg.CancelJob(e.ctx, canceled.ID, "not needed") // an admin's decision: no outcome
	wantNoErr(t, err)

	h = e.health("prod")
	if h.Queued != 1 || h.InFlight != 1 || !h.OldestQueuedAt.Equal(q.CreatedAt) || h.OldestQueuedAge() != 0 {
		t.Fatalf("counts and oldest: %+v", h)
	}
	if h.WaitSamples != 3 || h.WaitP50 != 30*second || !h.LastClaimAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("wait p50 %v over %d, last claim %v", h.WaitP50, h.WaitSamples, h.LastClaimAt)
	}
	if rate, ok := h.FailureRate(); !ok || h.Finished != 2 || h.Failed != 1 || rate != 0.5 {
		t.Fatalf("failure rate %v (%d of %d)", rate, h.Failed, h.Finished)
	}
	if h.NotDraining {
		t.Fatalf("a queue with a job in flight is not draining: %+v", h)
	}

	// The job in flight ends; the queued one waits with the agent alive.
	claim3 := e.job(j3.ID).ClaimID
	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j3.ID, claim3, registry.ResultReport{Outcome: registry.OutcomeSucceeded})))
	e.clock.Advance(registry.NotDrainingAfter - second)
	e.heartbeat(a)
	if h = e.health("prod"); h.NotDraining {
		t.Fatalf("flagged before NotDrainingAfter: %+v", h)
	}
	e.clock.Advance(second)
	h = e.health("prod")
	if !h.NotDraining || h.Reason == "" || h.OldestQueuedAge() != registry.NotDrainingAfter {
		t.Fatalf("a live agent leaving its queue alone is not flagged: %+v", h)
	}

	// A paused queue is not expected to drain.
	_, err = e.reg.SetClusterPaused(e.ctx, "prod", true, "")
	wantNoErr(t, err)
	if h = e.health("prod"); h.NotDraining {
		t.Fatal("a paused queue is flagged as not draining")
	}
	_, err = e.reg.SetClusterPaused(e.ctx, "prod", false, "")
	wantNoErr(t, err)

	// The fleet view has every cluster, in name order, the quiet one empty.
	fleet, err := e.reg.FleetQueueHealth(e.ctx)
	wantNoErr(t, err)
	if len(fleet) != 2 || fleet[0].ClusterID != a.Cluster.ID || !fleet[0].NotDraining || fleet[1].Queued != 0 || fleet[1].NotDraining {
		t.Fatalf("fleet %+v", fleet)
	}

	// A silent agent is its own alarm, not this one.
	e.clock.Advance(registry.SilentAfterHeartbeats*registry.HeartbeatInterval + second)
	if h = e.health("prod"); h.NotDraining {
		t.Fatal("a silent cluster is flagged as not draining")
	}

	// An hour on, the claims and results have left the window.
	e.clock.Set(t0.Add(registry.HealthWindow + 2*time.Minute))
	e.heartbeat(a)
	h = e.health("prod")
	if h.WaitSamples != 0 || h.Finished != 0 || h.Queued != 1 || !h.NotDraining {
		t.Fatalf("after the window: %+v", h)
	}

	// Expired jobs count as failed.
	exp := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.ExpiresIn = time.Second })
	e.clock.Advance(2 * second)
	_, err = registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
	wantNoErr(t, err)
	if e.job(exp.ID).State != registry.JobExpired {
		t.Fatal("the job did not expire")
	}
	if h = e.health("prod"); h.Finished != 1 || h.Failed != 1 {
		t.Fatalf("an expired job: %d failed of %d", h.Failed, h.Finished)
	}

	// Out of an org-scoped actor's sight it does not exist.
	other := registry.WithActor(e.ctx, registry.Actor{Kind: registry.ActorAdminToken, Name: "v", Role: registry.RoleViewer, Org: "elsewhere"})
	_, err = e.reg.QueueHealth(other, "prod")
	wantCode(t, err, registry.CodeNotFound)
	fleet, err = e.reg.FleetQueueHealth(other)
	wantNoErr(t, err)
	if len(fleet) != 0 {
		t.Fatalf("another org sees %d queues", len(fleet))
	}
	clusters, err := e.reg.ListClusters(e.ctx, registry.ClusterListParams{})
	wantNoErr(t, err)
	of, err := e.reg.QueueHealthOf(other, clusters)
	wantNoErr(t, err)
	if len(of) != 0 {
		t.Fatalf("another org is told of %d queues", len(of))
	}
	of, err = e.reg.QueueHealthOf(e.ctx, clusters)
	wantNoErr(t, err)
	if len(of) != 2 || of[0] != *e.health("prod") {
		t.Fatalf("QueueHealthOf %+v", of)
	}
}

// testQueueStats: the store's claims sample is the newest submitted across
// states, at most p.Claims; every cluster asked for has an entry.
func testQueueStats(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod")
	b, _ := e.agent("empty")
	var jobs []*registry.Job
	for range 4 {
		jobs = append(jobs, e.submit(a.Cluster.ID, nil))
		e.clock.Advance(second)
	}
	for i, j := range jobs {
		outcome := []registry.Outcome{registry.OutcomeSucceeded, registry.OutcomeFailed, registry.OutcomeNoop, ""}[i]
		if outcome == "" {
			_, err := e.reg.AckJob(e.ctx, a, j.ID) // stays in progress
			wantNoErr(t, err)
			continue
		}
		e.finish(a, j.ID, outcome)
	}
	stats, err := e.store.JobQueueStats(e.ctx, registry.JobQueueStatsParams{ClusterIDs: []string{b.Cluster.ID, a.Cluster.ID}, Claims: 2})
	wantNoErr(t, err)
	if len(stats) != 2 || stats[0].ClusterID != b.Cluster.ID || len(stats[0].Claims) != 0 || stats[1].ClusterID != a.Cluster.ID {
		t.Fatalf("stats %+v", stats)
	}
	got := stats[1]
	if len(got.Claims) != 2 || !got.Claims[0].CreatedAt.Equal(jobs[3].CreatedAt) || !got.Claims[1].CreatedAt.Equal(jobs[2].CreatedAt) {
		t.Fatalf("claims %+v", got.Claims)
	}
	if got.Ended[registry.JobSucceeded] != 1 || got.Ended[registry.JobFailed] != 1 || got.Ended[registry.JobNoop] != 1 || !got.OldestQueuedAt.IsZero() {
		t.Fatalf("ended %v, oldest %v", got.Ended, got.OldestQueuedAt)
	}
	// SubmittedAfter bounds the counts, not the claims.
	stats, err = e.store.JobQueueStats(e.ctx, registry.JobQueueStatsParams{ClusterIDs: []string{a.Cluster.ID}, SubmittedAfter: jobs[1].CreatedAt, Claims: 10})
	wantNoErr(t, err)
	if got := stats[0]; got.Ended[registry.JobSucceeded] != 0 || got.Ended[registry.JobFailed] != 1 || len(got.Claims) != 4 {
		t.Fatalf("bounded: ended %v, %d claims", got.Ended, len(got.Claims))
	}
	// Without ids, every cluster.
	stats, err = e.store.JobQueueStats(e.ctx, registry.JobQueueStatsParams{Claims: 1})
	wantNoErr(t, err)
	if len(stats) != 2 {
		t.Fatalf("every cluster: %d entries", len(stats))
	}
}
