package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testRequeueAttempt: a requeue that names the attempt it means
// (RequeueOptions.Attempt) acts only on that attempt. One confirmed on
// attempt 1, after the reaper requeued the job and a healthy agent claimed
// it as attempt 2, is refused and changes nothing: it must not fence off the
// holder its caller never saw.
func testRequeueAttempt(t *testing.T, newStore NewStore) {
	requeues := func(e *env, id string) (n int) {
		e.t.Helper()
		h, err := e.reg.JobHistory(e.ctx, id)
		wantNoErr(e.t, err)
		for _, x := range h {
			if x.Type == registry.HistoryRequeued {
				n++
			}
		}
		return n
	}

	t.Run("InProgress", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod", registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		_, err = e.reg.RequeueJobWith(e.ctx, j.ID, registry.RequeueOptions{Attempt: -1})
		wantCode(t, err, registry.CodeInvalid)
		// The lease ran out, the job went back to the queue, its agent took
		// it again: attempt 2, another claim.
		_, err = e.reg.RequeueJob(e.ctx, j.ID, "lease expired")
		wantNoErr(t, err)
		second, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		before, hist, audit := e.job(j.ID), requeues(e, j.ID), len(e.auditFor(registry.AuditJobRequeue))

		_, err = e.reg.RequeueJobWith(e.ctx, j.ID, registry.RequeueOptions{Reason: "stale", Attempt: 1})
		wantCode(t, err, registry.CodeConflict)
		for _, want := range []string{"attempt 2 now", second.ClaimID, "not attempt 1", "look at it again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		after := e.job(j.ID)
		if after.State != registry.JobInProgress || after.Attempt != 2 || after.ClaimID != second.ClaimID || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("a refused requeue changed the job: %s attempt %d claim %q, was attempt 2 claim %q", after.State, after.Attempt, after.ClaimID, second.ClaimID)
		}
		if requeues(e, j.ID) != hist || len(e.auditFor(registry.AuditJobRequeue)) != audit {
			t.Fatal("a refused requeue wrote history or audit")
		}
		wantNoErr(t, errOf(e.reg.HeartbeatJob(e.ctx, a, j.ID, second.ClaimID)))

		done, err := e.reg.RequeueJobWith(e.ctx, j.ID, registry.RequeueOptions{Reason: "wedged", Attempt: 2})
		wantNoErr(t, err)
		if done.State != registry.JobQueued || done.Attempt != 3 {
			t.Fatalf("requeue of the current attempt = %s attempt %d, want queued attempt 3", done.State, done.Attempt)
		}
	})

	// A job out of attempts is failed at every attempt it ran out on: the
	// attempt tells one failure from the next.
	t.Run("OutOfAttempts", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, tok := e.cluster("prod", func(s *registry.ClusterSpec) { s.Policy.MaxAttempts, s.Policy.LeaseSeconds = 1, 60 })
		a, _ := e.register(tok, registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		fail := func() {
			t.Helper()
			_, err := e.reg.AckJob(e.ctx, a, j.ID)
			wantNoErr(t, err)
			e.clock.Advance(61 * time.Second)
			_, err = registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
			wantNoErr(t, err)
			if got := e.job(j.ID); got.State != registry.JobFailed || got.Error != registry.ErrorLeaseExpired {
				t.Fatalf("job is %s %q, want failed lease_expired", got.State, got.Error)
			}
		}
		fail()
		_, err := e.reg.RequeueJob(e.ctx, j.ID, "")
		wantNoErr(t, err)
		fail() // attempt 2 ran out too
		before := e.job(j.ID)
		audit := len(e.auditFor(registry.AuditJobRequeue))

		_, err = e.reg.RequeueJobWith(e.ctx, j.ID, registry.RequeueOptions{Attempt: 1})
		wantCode(t, err, registry.CodeConflict)
		if !strings.Contains(err.Error(), "attempt 2 now") {
			t.Errorf("refusal %q does not name the attempt the job is at", err)
		}
		if after := e.job(j.ID); after.State != registry.JobFailed || after.Attempt != 2 || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("a refused requeue changed the job: %s attempt %d", after.State, after.Attempt)
		}
		if len(e.auditFor(registry.AuditJobRequeue)) != audit {
			t.Fatal("a refused requeue was audited")
		}
		// The store's own condition: an update of attempt 1 that reaches a
		// job failed again at attempt 2 does not apply.
		now := e.clock.Now()
		got, applied, err := e.store.JobUpdate(e.ctx, registry.JobUpdateParams{
			ID: j.ID, FromStates: []registry.JobState{registry.JobFailed}, Error: registry.ErrorLeaseExpired, Attempt: 1,
			Set: registry.JobSet{Now: now, State: registry.JobQueued, AttemptIncrement: true, Reopen: true},
		})
		wantNoErr(t, err)
		if applied || got == nil || got.Attempt != 2 || got.State != registry.JobFailed {
			t.Fatalf("an update conditioned on attempt 1 applied to attempt 2 (applied %v, job %+v)", applied, got)
		}
		done, err := e.reg.RequeueJobWith(e.ctx, j.ID, registry.RequeueOptions{Attempt: 2})
		wantNoErr(t, err)
		if done.State != registry.JobQueued || done.Attempt != 3 {
			t.Fatalf("requeue of the current attempt = %s attempt %d, want queued attempt 3", done.State, done.Attempt)
		}
	})

	// Two requeues of attempt 1 at once (two people, or a person and a
	// script): exactly one requeues it, the other is told the job is at
	// attempt 2 now, and the job moved on once.
	t.Run("Concurrent", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod", registry.CapabilityLease)
		const n = 6
		var jobs []*registry.Job
		for range n {
			j := e.submit(a.Cluster.ID, nil)
			_, err := e.reg.AckJob(e.ctx, a, j.ID)
			wantNoErr(t, err)
			jobs = append(jobs, j)
		}
		for _, j := range jobs {
			var errs [2]error
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[i] = e.reg.RequeueJobWith(e.ctx, j.ID, registry.RequeueOptions{Reason: "race", Attempt: 1})
				}()
			}
			close(start)
			wg.Wait()
			won := 0
			for _, err := range errs {
				if err == nil {
					won++
					continue
				}
				wantCode(t, err, registry.CodeConflict)
				if !strings.Contains(err.Error(), "attempt 2 now") {
					t.Errorf("the loser's refusal %q does not say the job is at attempt 2 now", err)
				}
			}
			if won != 1 {
				t.Fatalf("job %s: %d of two requeues of attempt 1 won (%v)", j.ID, won, errs)
			}
			if got := e.job(j.ID); got.State != registry.JobQueued || got.Attempt != 2 || requeues(e, j.ID) != 1 {
				t.Fatalf("job %s after the race: %s attempt %d, %d requeues in its history", j.ID, got.State, got.Attempt, requeues(e, j.ID))
			}
		}
		if rq := e.auditFor(registry.AuditJobRequeue); len(rq) != n {
			t.Fatalf("%d requeues audited, want %d", len(rq), n)
		}
	})
}
