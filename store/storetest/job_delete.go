package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testDeleteJob: a finished job can be deleted, with its timeline, audited
// with the actor and the reason, the counts kept right and watchers told; an
// open job cannot (job_not_finished: cancel it first).
func testDeleteJob(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod", registry.CapabilityLease)

	queued := e.submit(a.Cluster.ID, nil)
	_, err := e.reg.DeleteJob(e.ctx, queued.ID, "")
	wantCode(t, err, registry.CodeJobNotFinished)
	if err == nil || !strings.Contains(err.Error(), "cancel it first") {
		t.Fatalf("refusal %q does not say to cancel first", err)
	}
	running := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "running" })
	claim, err := e.reg.AckJob(e.ctx, a, running.ID)
	wantNoErr(t, err)
	_, err = e.reg.DeleteJob(e.ctx, running.ID, "")
	wantCode(t, err, registry.CodeJobNotFinished)
	viewer := registry.WithActor(e.ctx, registry.Actor{Kind: registry.ActorAdminToken, Name: "v", Role: registry.RoleViewer})

	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, running.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})))
	_, err = e.reg.DeleteJob(viewer, running.ID, "")
	wantCode(t, err, registry.CodeForbidden)

	seq, err := e.reg.LatestSeq(e.ctx)
	wantNoErr(t, err)
	ch, err := e.reg.Watch(e.ctx, registry.WatchParams{Since: seq, Kinds: []registry.EntityKind{registry.EntityJob}})
	wantNoErr(t, err)
	gone, err := e.reg.DeleteJob(e.ctx, running.ID, "  cleanup  ")
	wantNoErr(t, err)
	if gone.ID != running.ID || gone.State != registry.JobSucceeded {
		t.Fatalf("DeleteJob returned %s %s, want the job as it was", gone.ID, gone.State)
	}
	_, err = e.reg.GetJob(e.ctx, running.ID)
	wantCode(t, err, registry.CodeNotFound)
	h, err := e.reg.JobHistory(e.ctx, running.ID)
	wantNoErr(t, err)
	if len(h) != 0 {
		t.Fatalf("the deleted job's timeline kept %d entries", len(h))
	}
	entries := e.auditFor(registry.AuditJobDelete)
	if len(entries) != 1 || entries[0].Actor != "admin:tester" || entries[0].TargetID != running.ID ||
		entries[0].ClusterID != a.Cluster.ID || entries[0].Reason != "deleted succeeded job: cleanup" {
		t.Fatalf("audit %+v", entries)
	}
	if c := e.counts(a.Cluster.ID); c[registry.JobSucceeded] != 0 || c[registry.JobQueued] != 1 {
		t.Fatalf("counts after the delete: %v", c)
	}
	for {
		var ev registry.WatchEvent
		select {
		case ev = <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event for the delete within 10s")
		}
		if ev.Type == registry.WatchDelete {
			if ev.Kind != registry.EntityJob || ev.ID != running.ID || ev.ClusterID != a.Cluster.ID {
				t.Fatalf("watch delete %+v", ev)
			}
			break
		}
	}
	_, err = e.reg.DeleteJob(e.ctx, running.ID, "")
	wantCode(t, err, registry.CodeNotFound)

	// Every finished state can go: canceled here.
	_, err = e.reg.CancelJob(e.ctx, queued.ID, "")
	wantNoErr(t, err)
	_, err = e.reg.DeleteJob(e.ctx, queued.ID, "")
	wantNoErr(t, err)
	if c := e.counts(a.Cluster.ID); c[registry.JobCanceled] != 0 || c[registry.JobQueued] != 0 {
		t.Fatalf("counts after deleting the canceled job: %v", c)
	}
}

// testDeleteJobRaces: a delete racing a requeue of the same failed job: one
// of them wins, the other is refused, and the job is gone or queued, never
// both and never a half (history without its job, counts off). A delete
// racing a retry always deletes, and the retry either made its new job before
// or finds the original gone.
func testDeleteJobRaces(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	_, tok := e.cluster("prod", func(s *registry.ClusterSpec) { s.Policy.MaxAttempts, s.Policy.LeaseSeconds = 1, 60 })
	a, _ := e.register(tok, registry.CapabilityLease)
	const n = 8
	var requeued, retried []*registry.Job
	for i := range 2 * n {
		j := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "k" + string(rune('a'+i)) })
		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		if i < n {
			requeued = append(requeued, j)
		} else {
			retried = append(retried, j)
		}
	}
	e.clock.Advance(61 * time.Second)
	_, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
	wantNoErr(t, err)
	for _, j := range append(requeued, retried...) {
		if got := e.job(j.ID); got.State != registry.JobFailed || got.Error != registry.ErrorLeaseExpired {
			t.Fatalf("job %s is %s %q, want failed lease_expired", j.ID, got.State, got.Error)
		}
	}

	type outcome struct{ deleteErr, otherErr error }
	race := func(jobs []*registry.Job, other func(id string) error) []outcome {
		out := make([]outcome, len(jobs))
		var wg sync.WaitGroup
		for i, j := range jobs {
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				_, out[i].deleteErr = e.reg.DeleteJob(e.ctx, j.ID, "race")
			}()
			go func() {
				defer wg.Done()
				<-start
				out[i].otherErr = other(j.ID)
			}()
			close(start)
		}
		wg.Wait()
		return out
	}

	queuedNow := 0
	for i, o := range race(requeued, func(id string) error { _, err := e.reg.RequeueJob(e.ctx, id, "race"); return err }) {
		id := requeued[i].ID
		j, getErr := e.reg.GetJob(e.ctx, id)
		switch {
		case o.deleteErr == nil && o.otherErr == nil:
			t.Fatalf("job %s was both deleted and requeued", id)
		case o.deleteErr == nil:
			wantCode(t, o.otherErr, registry.CodeNotFound)
			wantCode(t, getErr, registry.CodeNotFound)
			if h, _ := e.reg.JobHistory(e.ctx, id); len(h) != 0 {
				t.Fatalf("deleted job %s kept %d history entries", id, len(h))
			}
		case o.otherErr == nil:
			wantCode(t, o.deleteErr, registry.CodeJobNotFinished)
			wantNoErr(t, getErr)
			if j.State != registry.JobQueued {
				t.Fatalf("requeued job %s is %s", id, j.State)
			}
			queuedNow++
		default:
			t.Fatalf("job %s: both refused: delete %v, requeue %v", id, o.deleteErr, o.otherErr)
		}
	}

	retries := 0
	for i, o := range race(retried, func(id string) error { _, err := e.reg.RetryJob(e.ctx, id, "race"); return err }) {
		id := retried[i].ID
		if o.deleteErr != nil {
			t.Fatalf("delete of %s racing a retry: %v", id, o.deleteErr)
		}
		if _, err := e.reg.GetJob(e.ctx, id); registry.ErrorCode(err) != registry.CodeNotFound {
			t.Fatalf("job %s still there after its delete: %v", id, err)
		}
		if o.otherErr == nil {
			retries++
		} else {
			wantCode(t, o.otherErr, registry.CodeNotFound)
		}
	}
	open, err := e.reg.ListJobs(e.ctx, registry.JobListParams{ClusterIDs: []string{a.Cluster.ID}, States: []registry.JobState{registry.JobQueued}, Limit: 100})
	wantNoErr(t, err)
	if len(open) != queuedNow+retries {
		t.Fatalf("%d queued jobs, want %d requeued + %d retries", len(open), queuedNow, retries)
	}
	c := e.counts(a.Cluster.ID)
	if c[registry.JobFailed] != 0 || c[registry.JobQueued] != int64(queuedNow+retries) {
		t.Fatalf("counts %v, want no failed and %d queued", c, queuedNow+retries)
	}
	if got := len(e.auditFor(registry.AuditJobDelete)); got != 2*n-queuedNow {
		t.Fatalf("%d delete audit entries, want %d", got, 2*n-queuedNow)
	}
}
