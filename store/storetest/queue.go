package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testPause: a paused queue hands out nothing (the agent stays registered,
// submissions still queue), and resuming hands out what waited.
func testPause(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, cred := e.agent("prod")
	c, err := e.reg.SetClusterPaused(e.ctx, "prod", true, "maintenance window")
	wantNoErr(t, err)
	if !c.Paused() || c.PauseReason != "maintenance window" || c.Version != 2 {
		t.Fatalf("paused cluster %+v", c)
	}
	j := e.submit(a.Cluster.ID, nil) // submissions still queue
	jobs, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10)
	wantNoErr(t, err)
	if len(jobs) != 0 {
		t.Fatalf("a paused queue handed out %d jobs", len(jobs))
	}
	if _, err := e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny); err != nil {
		t.Fatalf("a paused cluster's agent is refused: %v", err)
	}
	_, err = e.reg.SetClusterPaused(e.ctx, "prod", true, "")
	wantCode(t, err, registry.CodeConflict)
	c, err = e.reg.SetClusterPaused(e.ctx, "prod", false, "")
	wantNoErr(t, err)
	if c.Paused() || c.PauseReason != "" {
		t.Fatalf("resumed cluster %+v", c)
	}
	jobs, err = e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10)
	wantNoErr(t, err)
	if len(jobs) != 1 || jobs[0].ID != j.ID {
		t.Fatalf("after resuming: %v", jobIDs(jobs))
	}
	for _, action := range []string{registry.AuditClusterPause, registry.AuditClusterResume} {
		if len(e.auditFor(action)) != 1 {
			t.Fatalf("%s not audited", action)
		}
	}
	viewer := registry.WithActor(e.ctx, registry.Actor{Kind: registry.ActorAdminToken, Name: "v", Role: registry.RoleViewer})
	_, err = e.reg.SetClusterPaused(viewer, "prod", true, "")
	wantCode(t, err, registry.CodeForbidden)
}

// testRetry: a job that ended without doing its work can be retried: a new
// job with its payload and idempotency key, linked to it, audited; others
// cannot.
func testRetry(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod")
	j := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "deploy-7" })
	claim, err := e.reg.AckJob(e.ctx, a, j.ID)
	wantNoErr(t, err)
	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "boom"})))

	next, err := e.reg.RetryJob(e.ctx, j.ID, "transient")
	wantNoErr(t, err)
	if next.ID == j.ID || next.RetryOf != j.ID || next.State != registry.JobQueued || next.IdempotencyKey != "deploy-7" || string(next.Payload) != string(j.Payload) {
		t.Fatalf("retry = %+v", next)
	}
	if got := e.job(next.ID); got.RetryOf != j.ID {
		t.Fatalf("stored retry names %q", got.RetryOf)
	}
	if orig := e.job(j.ID); orig.State != registry.JobFailed {
		t.Fatalf("the original became %s", orig.State)
	}
	_, err = e.reg.RetryJob(e.ctx, j.ID, "")
	wantCode(t, err, registry.CodeConflict) // its retry, with the same key, is open
	_, err = e.reg.RetryJob(e.ctx, next.ID, "")
	wantCode(t, err, registry.CodeConflict) // queued: nothing to retry
	if entries := e.auditFor(registry.AuditJobRetry); len(entries) != 1 || entries[0].TargetID != next.ID || entries[0].Reason != "retry of "+j.ID+": transient" {
		t.Fatalf("audit %+v", entries)
	}
}

// testRetriedBy: a job's read names the jobs retried from it, oldest first
// (the forward link of RetryOf), to whoever may see the job, and only them;
// the store's RetryOf filter finds those retries alone.
func testRetriedBy(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod")
	j := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "deploy-8" })
	other := e.submit(a.Cluster.ID, nil)
	if got := e.job(j.ID).RetriedBy; got != nil {
		t.Fatalf("a job never retried has RetriedBy %v", got)
	}
	_, err := e.reg.CancelJob(e.ctx, j.ID, "")
	wantNoErr(t, err)
	e.clock.Advance(time.Second)
	first, err := e.reg.RetryJob(e.ctx, j.ID, "")
	wantNoErr(t, err)
	if got := e.job(j.ID).RetriedBy; !slices.Equal(got, []string{first.ID}) {
		t.Fatalf("after one retry RetriedBy = %v, want [%s]", got, first.ID)
	}
	_, err = e.reg.CancelJob(e.ctx, first.ID, "")
	wantNoErr(t, err)
	e.clock.Advance(time.Second)
	second, err := e.reg.RetryJob(e.ctx, j.ID, "")
	wantNoErr(t, err)
	want := []string{first.ID, second.ID}
	if got := e.job(j.ID).RetriedBy; !slices.Equal(got, want) {
		t.Fatalf("after two retries RetriedBy = %v, want %v (oldest first)", got, want)
	}
	if got := e.job(first.ID).RetriedBy; got != nil {
		t.Fatalf("the first retry, never retried itself, has RetriedBy %v", got)
	}
	if got := e.job(other.ID).RetriedBy; got != nil {
		t.Fatalf("an unrelated job has RetriedBy %v", got)
	}

	// The store's filter: the retries alone, in either order.
	listed, err := e.store.JobList(e.ctx, registry.JobListParams{RetryOf: j.ID, OldestFirst: true, Limit: 10})
	wantNoErr(t, err)
	if got := jobIDs(listed); !slices.Equal(got, want) {
		t.Fatalf("JobList RetryOf oldest first = %v, want %v", got, want)
	}
	listed, err = e.store.JobList(e.ctx, registry.JobListParams{RetryOf: j.ID, Limit: 10})
	wantNoErr(t, err)
	if got := jobIDs(listed); !slices.Equal(got, []string{second.ID, first.ID}) {
		t.Fatalf("JobList RetryOf newest first = %v", got)
	}
	n, err := e.store.JobCount(e.ctx, registry.JobListParams{RetryOf: j.ID})
	wantNoErr(t, err)
	if n != 2 {
		t.Fatalf("JobCount RetryOf = %d, want 2", n)
	}
	listed, err = e.reg.ListJobs(e.ctx, registry.JobListParams{RetryOf: other.ID})
	wantNoErr(t, err)
	if len(listed) != 0 {
		t.Fatalf("the retries of a job never retried: %v", jobIDs(listed))
	}

	// Organization scopes, as every job read: the job's organization sees
	// its retries, another organization not even the job.
	as := func(org string) context.Context {
		return registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "viewer-" + org, Role: registry.RoleViewer, Org: org})
	}
	mine, err := e.reg.GetJob(as("org"), j.ID)
	wantNoErr(t, err)
	if !slices.Equal(mine.RetriedBy, want) {
		t.Fatalf("the job's organization sees RetriedBy %v, want %v", mine.RetriedBy, want)
	}
	_, err = e.reg.GetJob(as("elsewhere"), j.ID)
	wantCode(t, err, registry.CodeNotFound)
}
