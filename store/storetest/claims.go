package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testClaims: a lease lives in the job's claim, apart from the job's row, so
// that a lease heartbeat (a fleet's most frequent write) rewrites neither the
// job, its indexes, its history nor the change feed, while every read of the
// job, the stuck queries and the reaper still see the lease as it stands.
func testClaims(t *testing.T, newStore NewStore) {
	// leased acks a new job of a lease-capable agent's cluster.
	leased := func(e *env) (*registry.Agent, *registry.Job, *registry.Claim) {
		t.Helper()
		a, _ := e.agent("prod", registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		claim, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		return a, j, claim
	}
	latest := func(e *env) int64 {
		t.Helper()
		n, _, err := e.store.ChangesLatest(e.ctx)
		wantNoErr(t, err)
		return n
	}

	t.Run("HeartbeatWritesOnlyTheClaim", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, j, claim := leased(e)
		before := e.job(j.ID)
		feed := latest(e)
		e.clock.Advance(40 * time.Second)
		until, err := e.reg.HeartbeatJob(e.ctx, a, j.ID, claim.ClaimID)
		wantNoErr(t, err)
		if want := e.clock.Now().Add(60 * time.Second); !until.Equal(want) {
			t.Fatalf("heartbeat lease end %s, want %s", until, want)
		}
		if n := latest(e); n != feed {
			t.Fatalf("a lease heartbeat wrote %d change-feed entries; it writes only the claim", n-feed)
		}
		got := e.job(j.ID)
		if !got.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("a lease heartbeat moved the job's updatedAt %s -> %s", before.UpdatedAt, got.UpdatedAt)
		}
		// Every read sees the renewed lease and when the agent was last heard.
		if !got.LeaseExpiresAt.Equal(until) || !got.LastActivityAt.Equal(e.clock.Now()) {
			t.Fatalf("after a heartbeat the job reads lease %s, last activity %s; want %s, %s",
				got.LeaseExpiresAt, got.LastActivityAt, until, e.clock.Now())
		}
		listed, err := e.reg.ListJobs(e.ctx, registry.JobListParams{ClusterIDs: []string{a.Cluster.ID}})
		wantNoErr(t, err)
		if len(listed) != 1 || !listed[0].LeaseExpiresAt.Equal(until) {
			t.Fatalf("listed jobs = %+v, want the renewed lease %s", listed, until)
		}
		h, _ := e.reg.JobHistory(e.ctx, j.ID)
		if len(h) != 2 {
			t.Fatalf("a heartbeat wrote to the timeline: %v", historyTypes(h))
		}
		// The reaper goes by the renewed lease: not at the first lease's end,
		// at the renewed one's.
		reaper := registry.NewReaper(e.reg, registry.ReaperConfig{})
		e.clock.Advance(59 * time.Second)
		rep, err := reaper.RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Total() != 0 {
			t.Fatalf("reaped %+v before the renewed lease ended", rep)
		}
		e.clock.Advance(2 * time.Second)
		rep, err = reaper.RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Requeued != 1 {
			t.Fatalf("after the renewed lease ended: report %+v, want 1 requeued", rep)
		}
		got = e.job(j.ID)
		if got.State != registry.JobQueued || got.Leased() || !got.LastActivityAt.IsZero() {
			t.Fatalf("reclaimed job: %s leased %v last activity %s", got.State, got.Leased(), got.LastActivityAt)
		}
		// Its old claim renews nothing.
		_, err = e.reg.HeartbeatJob(e.ctx, a, j.ID, claim.ClaimID)
		wantCode(t, err, registry.CodeStaleClaim)
	})

	t.Run("RefusedHeartbeats", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, j, claim := leased(e)
		other, _ := e.agent("staging", registry.CapabilityLease)
		feed := latest(e)
		_, err := e.reg.HeartbeatJob(e.ctx, a, j.ID, "not-the-claim")
		wantCode(t, err, registry.CodeStaleClaim)
		_, err = e.reg.HeartbeatJob(e.ctx, other, j.ID, "")
		wantCode(t, err, registry.CodeForbidden)
		_, err = e.reg.HeartbeatJob(e.ctx, a, "01JNOSUCHJOB0000000000000X", "")
		wantCode(t, err, registry.CodeJobNotFound)
		queued := e.submit(a.Cluster.ID, nil)
		_, err = e.reg.HeartbeatJob(e.ctx, a, queued.ID, "")
		wantCode(t, err, registry.CodeStaleClaim)
		_, err = e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
		wantNoErr(t, err)
		_, err = e.reg.HeartbeatJob(e.ctx, a, j.ID, claim.ClaimID)
		wantCode(t, err, registry.CodeJobClosed)
		got := e.job(j.ID)
		if got.Leased() {
			t.Fatalf("a finished job still has a lease ending %s", got.LeaseExpiresAt)
		}
		if n := latest(e); n <= feed {
			t.Fatal("the result wrote no change-feed entry")
		}
	})

	t.Run("UnleasedHeartbeatRecordsActivity", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod") // no lease capability: acks take no lease
		j := e.submit(a.Cluster.ID, nil)
		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		e.clock.Advance(5 * time.Minute)
		until, err := e.reg.HeartbeatJob(e.ctx, a, j.ID, "")
		wantNoErr(t, err)
		got := e.job(j.ID)
		if !until.IsZero() || got.Leased() || !got.LastActivityAt.Equal(e.clock.Now()) {
			t.Fatalf("unleased heartbeat: lease end %s, job leased %v, last activity %s", until, got.Leased(), got.LastActivityAt)
		}
		// It is not silent: the no-lease stuck rule reads that activity.
		e.clock.Advance(registry.NoLeaseStuckAfter - time.Second)
		silent, err := e.reg.ListJobs(e.ctx, registry.JobListParams{
			States: []registry.JobState{registry.JobInProgress}, NoLease: true, ActivityBefore: e.clock.Now().Add(-registry.NoLeaseStuckAfter)})
		wantNoErr(t, err)
		if len(silent) != 0 {
			t.Fatalf("a job heard %s ago is listed as silent", registry.NoLeaseStuckAfter-time.Second)
		}
	})

	t.Run("LeaseFilters", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, expiring, _ := leased(e)
		e.clock.Advance(30 * time.Second)
		renewed := e.submit(a.Cluster.ID, nil)
		rc, err := e.reg.AckJob(e.ctx, a, renewed.ID)
		wantNoErr(t, err)
		e.clock.Advance(31 * time.Second) // the first lease has ended, the second has not
		_, err = e.reg.HeartbeatJob(e.ctx, a, renewed.ID, rc.ClaimID)
		wantNoErr(t, err)
		ids := func(p registry.JobListParams) []string {
			t.Helper()
			p.ClusterIDs, p.States = []string{a.Cluster.ID}, []registry.JobState{registry.JobInProgress}
			jobs, err := e.reg.ListJobs(e.ctx, p)
			wantNoErr(t, err)
			return jobIDs(jobs)
		}
		now := e.clock.Now()
		if got := ids(registry.JobListParams{LeaseExpiredBefore: now}); len(got) != 1 || got[0] != expiring.ID {
			t.Fatalf("lease expired before now: %v, want [%s]", got, expiring.ID)
		}
		if got := ids(registry.JobListParams{LeaseLiveAt: now}); len(got) != 1 || got[0] != renewed.ID {
			t.Fatalf("lease live at now: %v, want [%s]", got, renewed.ID)
		}
		if got := ids(registry.JobListParams{NoLease: true}); len(got) != 0 {
			t.Fatalf("jobs without a lease: %v, want none", got)
		}
		// An admin's extension moves the claim's lease end and is fed.
		feed := latest(e)
		j, err := e.reg.ExtendLease(e.ctx, expiring.ID, 10*time.Minute)
		wantNoErr(t, err)
		if want := now.Add(10 * time.Minute); !j.LeaseExpiresAt.Equal(want) || !e.job(expiring.ID).LeaseExpiresAt.Equal(want) {
			t.Fatalf("extended lease ends %s, want %s", j.LeaseExpiresAt, want)
		}
		if latest(e) == feed {
			t.Fatal("an admin's lease extension wrote no change-feed entry")
		}
		if got := ids(registry.JobListParams{LeaseExpiredBefore: now}); len(got) != 0 {
			t.Fatalf("lease expired before now after the extension: %v", got)
		}
	})

	t.Run("ConcurrentHeartbeatsAndResult", func(t *testing.T) {
		// Heartbeats racing the result: each is applied before the result or
		// refused after it, and the finished job never keeps a lease.
		e := newEnv(t, newStore)
		a, j, claim := leased(e)
		var wg sync.WaitGroup
		errs := make(chan error, 41)
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.reg.HeartbeatJob(e.ctx, a, j.ID, claim.ClaimID)
				if err != nil && registry.ErrorCode(err) != registry.CodeJobClosed {
					errs <- err
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded}); err != nil {
				errs <- err
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("heartbeat or result: %v", err)
		}
		got := e.job(j.ID)
		if got.State != registry.JobSucceeded || got.Leased() {
			t.Fatalf("after the race: %s, leased %v", got.State, got.Leased())
		}
		expired, err := e.reg.ListJobs(e.ctx, registry.JobListParams{LeaseExpiredBefore: e.clock.Now().Add(time.Hour)})
		wantNoErr(t, err)
		if len(expired) != 0 {
			t.Fatalf("a finished job is listed with an expired lease: %v", jobIDs(expired))
		}
	})
}
