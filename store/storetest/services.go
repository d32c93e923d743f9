package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func testReaper(t *testing.T, newStore NewStore) {
	t.Run("ReclaimThenFail", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, tok := e.cluster("prod", func(s *registry.ClusterSpec) { s.Policy.MaxAttempts = 2 })
		a, _ := e.register(tok, registry.CapabilityLease)
		j := e.submit(a.Cluster.ID, nil)
		reaper := registry.NewReaper(e.reg, registry.ReaperConfig{})

		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		e.clock.Advance(59 * time.Second)
		rep, err := reaper.RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Total() != 0 {
			t.Fatalf("reaped %+v before the lease ended", rep)
		}
		e.clock.Advance(2 * time.Second)
		rep, err = reaper.RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Requeued != 1 {
			t.Fatalf("report %+v, want 1 requeued", rep)
		}
		got := e.job(j.ID)
		if got.State != registry.JobQueued || got.Attempt != 2 || got.ClaimID != "" || got.Leased() {
			t.Fatalf("after reclaim: %s attempt %d claim %q", got.State, got.Attempt, got.ClaimID)
		}
		// Last attempt: the lease runs out again and the job fails.
		_, err = e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		e.clock.Advance(61 * time.Second)
		rep, err = reaper.RunOnce(e.ctx)
		wantNoErr(t, err)
		got = e.job(j.ID)
		if rep.Failed != 1 || got.State != registry.JobFailed || got.Error != registry.ErrorLeaseExpired || got.FinishedAt.IsZero() {
			t.Fatalf("report %+v, job %s %q", rep, got.State, got.Error)
		}
		h, _ := e.reg.JobHistory(e.ctx, j.ID)
		types := fmt.Sprint(historyTypes(h))
		if types != "[submitted claimed reclaimed claimed failed]" {
			t.Fatalf("timeline %s", types)
		}
		// The reaper is the system: one audit entry per batch says what it
		// did, and one per job which job it took back and what became of it.
		var batches, perJob []registry.AuditEntry
		for _, a := range e.auditFor(registry.AuditJobReclaim) {
			if a.TargetKind == "job" {
				perJob = append(perJob, a)
			} else {
				batches = append(batches, a)
			}
		}
		if len(batches) != 2 || batches[0].Actor != "system:reaper" ||
			!strings.Contains(batches[0].Reason, "1 failed") || !strings.Contains(batches[1].Reason, "1 jobs back in the queue") {
			t.Fatalf("reaper batch audit entries = %+v", batches)
		}
		if len(perJob) != 2 || perJob[0].TargetID != j.ID || perJob[0].ClusterID != a.Cluster.ID || perJob[0].Actor != "system:reaper" ||
			!strings.Contains(perJob[0].Reason, "failed (lease_expired)") ||
			perJob[1].TargetID != j.ID || !strings.Contains(perJob[1].Reason, "back in the queue as attempt 2") {
			t.Fatalf("reaper per-job audit entries = %+v", perJob)
		}
		if c := e.counts(a.Cluster.ID); c[registry.JobFailed] != 1 || c[registry.JobInProgress] != 0 || c[registry.JobQueued] != 0 {
			t.Fatalf("counts %v", c)
		}
		// On-call can give an exhausted job one more try.
		again, err := e.reg.RequeueJob(e.ctx, j.ID, "chart fixed")
		wantNoErr(t, err)
		if again.State != registry.JobQueued || again.Error != "" || !again.FinishedAt.IsZero() || again.Attempt != 3 {
			t.Fatalf("requeued exhausted job: %s %q attempt %d", again.State, again.Error, again.Attempt)
		}
	})

	t.Run("RequeueWhenTheKeyIsTaken", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, tok := e.cluster("prod", func(s *registry.ClusterSpec) { s.Policy.MaxAttempts = 1 })
		a, _ := e.register(tok, registry.CapabilityLease)
		key := func(s *registry.JobSubmission) { s.IdempotencyKey = "app/team-a/nc@3" }
		j := e.submit(a.Cluster.ID, key)
		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		e.clock.Advance(2 * time.Minute)
		_, err = registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
		wantNoErr(t, err)
		// The producer tried again once the key expired (the failed job
		// answers it until then).
		e.clock.Advance(registry.DefaultIdempotencyRetention)
		e.submit(a.Cluster.ID, key)
		_, err = e.reg.RequeueJob(e.ctx, j.ID, "")
		wantCode(t, err, registry.CodeConflict)
	})

	t.Run("UnleasedJobsAreNeverReclaimed", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		j := e.submit(a.Cluster.ID, nil)
		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		e.clock.Advance(30 * 24 * time.Hour)
		rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Total() != 0 || e.job(j.ID).State != registry.JobInProgress {
			t.Fatalf("reaper touched an unleased job: %+v", rep)
		}
	})

	t.Run("ExpireQueued", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		exp := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.ExpiresIn = time.Minute })
		keep := e.submit(a.Cluster.ID, nil)
		e.clock.Advance(time.Minute)
		rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Expired != 1 || e.job(exp.ID).State != registry.JobExpired || e.job(keep.ID).State != registry.JobQueued {
			t.Fatalf("report %+v", rep)
		}
		// One audit entry names the expired job, one sums the batch.
		var perJob, batches []registry.AuditEntry
		for _, en := range e.auditFor(registry.AuditJobExpire) {
			if en.TargetKind == "job" {
				perJob = append(perJob, en)
			} else {
				batches = append(batches, en)
			}
		}
		if len(perJob) != 1 || perJob[0].TargetID != exp.ID || perJob[0].ClusterID != a.Cluster.ID ||
			perJob[0].Actor != "system:reaper" || !strings.Contains(perJob[0].Reason, "expired before any agent acked it") {
			t.Fatalf("per-job expire audit entries = %+v", perJob)
		}
		if len(batches) != 1 || !strings.Contains(batches[0].Reason, "1 queued jobs expired") {
			t.Fatalf("batch expire audit entries = %+v", batches)
		}
		// The public operator may still report noop for it: already recorded.
		_, err = e.reg.ReportResult(e.ctx, a, exp.ID, "", registry.ResultReport{Outcome: registry.OutcomeNoop, Error: "expired"})
		wantCode(t, err, registry.CodeJobClosed)
	})

	t.Run("Batches", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, tok := e.cluster("prod", func(s *registry.ClusterSpec) { s.Policy.MaxAttempts = 1 })
		a, _ := e.register(tok, registry.CapabilityLease)
		const n = 25
		for i := range n {
			j := e.submit(a.Cluster.ID, nil)
			if i%5 != 0 {
				_, err := e.reg.AckJob(e.ctx, a, j.ID)
				wantNoErr(t, err)
			}
		}
		e.clock.Advance(2 * time.Minute)
		rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{BatchSize: 3}).RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Failed != 20 {
			t.Fatalf("report %+v, want 20 failed across batches of 3", rep)
		}
		if c := e.counts(a.Cluster.ID); c[registry.JobFailed] != 20 || c[registry.JobQueued] != 5 {
			t.Fatalf("counts %v", c)
		}
	})
}

func testAudit(t *testing.T, newStore NewStore) {
	t.Run("NoSecrets", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("prod", nil)
		a, cred := e.register(tok, registry.CapabilityHMAC)
		next, err := e.reg.RotateCredential(e.ctx, a)
		wantNoErr(t, err)
		tok2, err := e.reg.IssueToken(e.ctx, c.ID, 0)
		wantNoErr(t, err)
		_, err = e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal()})
		wantCode(t, err, registry.CodeRegistrationTokenInvalid)
		secrets := []string{tok.Secret.Reveal(), tok2.Secret.Reveal(), cred.Token.Reveal(), cred.HMACKey.Reveal(), next.Token.Reveal(), next.HMACKey.Reveal()}
		all, err := e.reg.ListAudit(e.ctx, registry.AuditListParams{Limit: 1000})
		wantNoErr(t, err)
		if len(all) < 5 {
			t.Fatalf("only %d audit entries", len(all))
		}
		for _, entry := range all {
			b, _ := json.Marshal(entry)
			for _, s := range secrets {
				if strings.Contains(string(b), s) {
					t.Fatalf("audit entry %s holds a secret", b)
				}
			}
		}
	})

	t.Run("Filters", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		e.agent("other")
		j := e.submit(a.Cluster.ID, nil)
		_, err := e.reg.CancelJob(e.ctx, j.ID, "")
		wantNoErr(t, err)
		jobs, _ := e.reg.ListAudit(e.ctx, registry.AuditListParams{Action: "job."})
		if len(jobs) != 2 || jobs[0].Action != registry.AuditJobCancel || jobs[1].Action != registry.AuditJobSubmit {
			t.Fatalf("job.* entries = %+v", jobs)
		}
		mine, _ := e.reg.ListAudit(e.ctx, registry.AuditListParams{ClusterID: a.Cluster.ID, Limit: 100})
		for _, m := range mine {
			if m.ClusterID != a.Cluster.ID {
				t.Fatalf("cluster filter leaked %+v", m)
			}
		}
		older, _ := e.reg.ListAudit(e.ctx, registry.AuditListParams{BeforeID: jobs[0].ID, Limit: 1})
		if len(older) != 1 || older[0].ID >= jobs[0].ID {
			t.Fatalf("BeforeID paging = %+v", older)
		}
	})
}

func testWatch(t *testing.T, newStore NewStore) {
	next := func(t *testing.T, ch <-chan registry.WatchEvent) registry.WatchEvent {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch closed")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event within 10s")
		}
		return registry.WatchEvent{}
	}

	t.Run("SnapshotThenChanges", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		open := e.submit(a.Cluster.ID, nil)
		done := e.submit(a.Cluster.ID, nil)
		_, err := e.reg.CancelJob(e.ctx, done.ID, "")
		wantNoErr(t, err)
		ch, err := e.reg.Watch(e.ctx, registry.WatchParams{Kinds: []registry.EntityKind{registry.EntityCluster, registry.EntityJob}})
		wantNoErr(t, err)
		first, second := next(t, ch), next(t, ch)
		if first.Type != registry.WatchUpsert || first.Cluster == nil || first.Cluster.ID != a.Cluster.ID {
			t.Fatalf("first snapshot event = %+v", first)
		}
		if second.Type != registry.WatchUpsert || second.Job == nil || second.Job.ID != open.ID {
			t.Fatalf("second snapshot event = %+v (only open jobs are in the snapshot)", second)
		}
		eos := next(t, ch)
		if eos.Type != registry.WatchEndOfSnapshot || eos.Seq == 0 {
			t.Fatalf("want end of snapshot, got %+v", eos)
		}
		j := e.submit(a.Cluster.ID, nil)
		ev := next(t, ch)
		if ev.Type != registry.WatchUpsert || ev.Job == nil || ev.Job.ID != j.ID || ev.Seq <= eos.Seq {
			t.Fatalf("change after snapshot = %+v", ev)
		}
		_, err = e.reg.DeleteCluster(e.ctx, a.Cluster.ID, "")
		wantNoErr(t, err)
		ev = next(t, ch)
		if ev.Type != registry.WatchDelete || ev.Kind != registry.EntityCluster || ev.ID != a.Cluster.ID {
			t.Fatalf("delete = %+v", ev)
		}
	})

	t.Run("ResumeFromSeq", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		seq, err := e.reg.LatestSeq(e.ctx)
		wantNoErr(t, err)
		_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventBufferOverflow, Message: "dropped 12"}})
		wantNoErr(t, err)
		ch, err := e.reg.Watch(e.ctx, registry.WatchParams{Since: seq, Kinds: []registry.EntityKind{registry.EntityEvent, registry.EntityAudit}})
		wantNoErr(t, err)
		if ev := next(t, ch); ev.Type != registry.WatchEndOfSnapshot || ev.Seq != seq {
			t.Fatalf("want end of snapshot at %d, got %+v", seq, ev)
		}
		ev := next(t, ch)
		if ev.Event == nil || ev.Event.Kind != registry.EventBufferOverflow || ev.Event.Message != "dropped 12" {
			t.Fatalf("resumed event = %+v", ev)
		}
		_, err = e.reg.IssueToken(e.ctx, a.Cluster.ID, 0)
		wantNoErr(t, err)
		ev = next(t, ch)
		if ev.Audit == nil || ev.Audit.Action != registry.AuditTokenIssue {
			t.Fatalf("audit change = %+v", ev)
		}
	})

	t.Run("CredentialChangesNameTheirCluster", func(t *testing.T) {
		// The hub wakes a cluster's held polls on its credential's changes
		// (a revoked credential's poll is answered 401 at once): the feed
		// must say whose cluster a credential change is.
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		e.agent("other")
		seq, err := e.reg.LatestSeq(e.ctx)
		wantNoErr(t, err)
		_, err = e.reg.RevokeCredentials(e.ctx, a.Cluster.ID, "test")
		wantNoErr(t, err)
		changes, err := e.store.ChangesSince(e.ctx, seq, 100)
		wantNoErr(t, err)
		found := false
		for _, c := range changes {
			if c.Kind != registry.EntityCredential {
				continue
			}
			if c.ID != a.Credential.ID || c.ClusterID != a.Cluster.ID {
				t.Fatalf("credential change %+v, want credential %s of cluster %s", c, a.Credential.ID, a.Cluster.ID)
			}
			found = true
		}
		if !found {
			t.Fatalf("no credential change after revoking: %+v", changes)
		}
	})

	t.Run("PruneOnlyAPrefix", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		e.clock.Advance(2 * time.Hour)
		e.submit(a.Cluster.ID, nil)
		// A forced rotation's feed entry carries the credential's (old) time:
		// pruning by age must not cut it out of the middle of the feed.
		_, err := e.reg.ForceRotation(e.ctx, a.Cluster.ID, "test")
		wantNoErr(t, err)
		e.submit(a.Cluster.ID, nil)
		_, err = registry.NewPruner(e.reg, registry.PrunerConfig{ChangesKept: 1}).RunOnce(e.ctx)
		wantNoErr(t, err)
		changes, err := e.store.ChangesSince(e.ctx, 0, 100)
		wantNoErr(t, err)
		found := false
		for _, c := range changes {
			found = found || (c.Kind == registry.EntityCredential && c.ID == a.Credential.ID)
		}
		if !found {
			t.Fatalf("the forced rotation's entry was pruned from the middle of the feed: %+v", changes)
		}
	})

	t.Run("ScopedFollowsClustersMovingOrganization", func(t *testing.T) {
		// An organization-scoped watcher of jobs alone stops seeing a
		// cluster's jobs once the cluster moves to another organization, and
		// sees them once it moves in: it watches no clusters, yet what it
		// may see changes with them.
		e := newEnv(t, newStore)
		moving, _ := e.cluster("moving", func(s *registry.ClusterSpec) { s.Organization = "acme" })
		marker, _ := e.cluster("marker", func(s *registry.ClusterSpec) { s.Organization = "acme" })
		acme := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "acme-viewer", Role: registry.RoleViewer, Org: "acme"})
		ch, err := e.reg.Watch(acme, registry.WatchParams{Kinds: []registry.EntityKind{registry.EntityJob}})
		wantNoErr(t, err)
		// jobsUntil returns the jobs seen up to the marker job, which it
		// submits.
		jobsUntil := func() []string {
			t.Helper()
			m := e.submit(marker.ID, nil)
			var seen []string
			for {
				ev := next(t, ch)
				if ev.Kind == registry.EntityCluster {
					t.Fatalf("a watcher of jobs got %+v", ev)
				}
				if ev.Job == nil {
					continue
				}
				if ev.Job.ID == m.ID {
					return seen
				}
				seen = append(seen, ev.Job.ID)
			}
		}
		if ev := next(t, ch); ev.Type != registry.WatchEndOfSnapshot {
			t.Fatalf("snapshot of no job: %+v", ev)
		}
		before := e.submit(moving.ID, nil)
		if got := jobsUntil(); len(got) != 1 || got[0] != before.ID {
			t.Fatalf("acme saw %v, want its own job %s", got, before.ID)
		}
		move := func(org string) {
			t.Helper()
			_, err := e.reg.ModifyCluster(e.ctx, moving.ID, func(s *registry.ClusterSpec) error { s.Organization = org; return nil })
			wantNoErr(t, err)
		}
		move("globex")
		e.submit(moving.ID, nil)
		if got := jobsUntil(); len(got) != 0 {
			t.Fatalf("acme saw jobs %v of a cluster that moved to globex", got)
		}
		move("acme")
		back := e.submit(moving.ID, nil)
		if got := jobsUntil(); len(got) != 1 || got[0] != back.ID {
			t.Fatalf("acme saw %v, want the job %s of a cluster that moved back in", got, back.ID)
		}
	})

	t.Run("ResetAfterPrune", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		seq, _ := e.reg.LatestSeq(e.ctx)
		for range 5 {
			e.submit(a.Cluster.ID, nil)
		}
		e.clock.Advance(2 * time.Hour)
		e.submit(a.Cluster.ID, nil)
		rep, err := registry.NewPruner(e.reg, registry.PrunerConfig{ChangesKept: 1}).RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.Changes == 0 {
			t.Fatal("nothing pruned from the change feed")
		}
		ch, err := e.reg.Watch(e.ctx, registry.WatchParams{Since: seq, Kinds: []registry.EntityKind{registry.EntityJob}})
		wantNoErr(t, err)
		next(t, ch) // end of snapshot at seq
		if ev := next(t, ch); ev.Type != registry.WatchReset {
			t.Fatalf("watching from a pruned position: %+v, want reset", ev)
		}
		jobs := 0
		for {
			ev := next(t, ch)
			if ev.Type == registry.WatchEndOfSnapshot {
				break
			}
			jobs++
		}
		if jobs != 6 {
			t.Fatalf("resnapshot held %d jobs, want 6", jobs)
		}
	})
}
