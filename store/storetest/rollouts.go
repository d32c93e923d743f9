package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/registry"
)

func testLabels(t *testing.T, newStore NewStore) {
	t.Run("StoredValidatedAndSelected", func(t *testing.T) {
		e := newEnv(t, newStore)
		prod, _ := e.cluster("prod-eu", func(s *registry.ClusterSpec) {
			s.Labels = registry.Labels{"env": "prod", "region": "eu"}
		})
		if prod.Labels["env"] != "prod" || prod.Version != 1 {
			t.Fatalf("created cluster labels %v version %d", prod.Labels, prod.Version)
		}
		e.cluster("prod-us", func(s *registry.ClusterSpec) { s.Labels = registry.Labels{"env": "prod", "region": "us"} })
		e.cluster("canary", func(s *registry.ClusterSpec) { s.Labels = registry.Labels{"env": "prod", "canary": "true"} })
		e.cluster("dev", nil)

		got, err := e.reg.GetCluster(e.ctx, "prod-eu")
		wantNoErr(t, err)
		if got.Labels.String() != "env=prod,region=eu" {
			t.Fatalf("stored labels = %q", got.Labels.String())
		}
		edited, err := e.reg.ModifyCluster(e.ctx, "prod-eu", func(s *registry.ClusterSpec) error {
			delete(s.Labels, "region")
			s.Labels["tier"] = "gold"
			return nil
		})
		wantNoErr(t, err)
		if edited.Labels.String() != "env=prod,tier=gold" || edited.Version != 2 {
			t.Fatalf("edited labels %q version %d: a label edit is part of the record's version", edited.Labels.String(), edited.Version)
		}

		for sel, want := range map[string]string{
			"":                                "canary,dev,prod-eu,prod-us",
			"env=prod":                        "canary,prod-eu,prod-us",
			"env=prod,!canary":                "prod-eu,prod-us",
			"region in (eu,us)":               "prod-us",
			"env=prod,tier notin (gold)":      "canary,prod-us",
			"env!=prod":                       "dev",
			"env=prod,region in (us),!canary": "prod-us",
		} {
			cs, err := e.reg.ListClusters(e.ctx, registry.ClusterListParams{Selector: sel})
			wantNoErr(t, err)
			if got := strings.Join(names(cs), ","); got != want {
				t.Errorf("selector %q = %s, want %s", sel, got, want)
			}
		}
		_, err = e.reg.ListClusters(e.ctx, registry.ClusterListParams{Selector: "env in (prod"})
		wantCode(t, err, registry.CodeInvalid)

		for _, bad := range []registry.Labels{{"-bad": "x"}, {"env": "has space"}, {"env": strings.Repeat("v", 64)}} {
			_, err := e.reg.ModifyCluster(e.ctx, "dev", func(s *registry.ClusterSpec) error { s.Labels = bad; return nil })
			wantCode(t, err, registry.CodeInvalid)
		}
		if c, _ := e.reg.GetCluster(e.ctx, "dev"); len(c.Labels) != 0 || c.Version != 1 {
			t.Fatalf("a refused label edit changed the cluster: %v version %d", c.Labels, c.Version)
		}
	})
}

// fleet creates n registered clusters labelled env=prod, named c01..cNN,
// and returns their agents by cluster name.
func (e *env) fleet(n int, tweak func(i int, s *registry.ClusterSpec)) map[string]*registry.Agent {
	e.t.Helper()
	agents := map[string]*registry.Agent{}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("c%02d", i)
		_, tok := e.cluster(name, func(s *registry.ClusterSpec) {
			s.Labels = registry.Labels{"env": "prod"}
			if tweak != nil {
				tweak(i, s)
			}
		})
		a, _ := e.register(tok)
		agents[name] = a
	}
	return agents
}

func (e *env) rollout(spec registry.RolloutSpec) *registry.Rollout {
	e.t.Helper()
	if spec.Kind == "" {
		spec.Kind, spec.Payload = registry.KindApply, json.RawMessage(applyPayload)
	}
	if spec.Selector == "" {
		spec.Selector = "env=prod"
	}
	ro, err := e.reg.CreateRollout(e.ctx, spec)
	if err != nil {
		e.t.Fatalf("CreateRollout: %v", err)
	}
	return ro
}

// finish acks and completes a target's job with the outcome.
func (e *env) finish(a *registry.Agent, jobID string, outcome registry.Outcome) {
	e.t.Helper()
	claim, err := e.reg.AckJob(e.ctx, a, jobID)
	if err != nil {
		e.t.Fatalf("AckJob(%s): %v", jobID, err)
	}
	res := registry.ResultReport{Outcome: outcome}
	if outcome == registry.OutcomeFailed {
		res.Error = "boom"
	}
	if _, err := e.reg.ReportResult(e.ctx, a, jobID, claim.ClaimID, res); err != nil {
		e.t.Fatalf("ReportResult(%s): %v", jobID, err)
	}
}

func (e *env) advance(id string) *registry.Rollout {
	e.t.Helper()
	ro, err := e.reg.AdvanceRollout(e.ctx, id)
	if err != nil {
		e.t.Fatalf("AdvanceRollout: %v", err)
	}
	return ro
}

// targetStates renders targets as "name:state" in order.
func targetStates(ro *registry.Rollout) string {
	parts := make([]string, len(ro.Targets))
	for i, t := range ro.Targets {
		parts[i] = t.ClusterName + ":" + string(t.State)
	}
	return strings.Join(parts, " ")
}

func wantTargets(t *testing.T, ro *registry.Rollout, want string) {
	t.Helper()
	if got := targetStates(ro); got != want {
		t.Fatalf("targets:\n got %s\nwant %s", got, want)
	}
}

func testRollouts(t *testing.T, newStore NewStore) {
	t.Run("OneStuckRolloutDoesNotStallTheOthers", func(t *testing.T) {
		e := newEnv(t, newStore)
		agents := e.fleet(4, func(i int, s *registry.ClusterSpec) {
			if i >= 3 {
				s.Labels = registry.Labels{"env": "sec"}
			}
		})
		plain := e.rollout(registry.RolloutSpec{Name: "plain", Selector: "env=prod"})
		wantTargets(t, plain, "c01:running c02:pending")
		sealed := e.rollout(registry.RolloutSpec{Name: "sealed", Selector: "env=sec"})
		wantTargets(t, sealed, "c03:running c04:pending")
		key, err := jwe.GenerateX25519()
		wantNoErr(t, err)
		_, err = e.reg.ModifyCluster(e.ctx, "c04", func(s *registry.ClusterSpec) error {
			s.PublicKey = registry.AgentPublicKey(key.Public().JWK())
			s.Policy.RequireEncryptedPayloads = true
			return nil
		})
		wantNoErr(t, err)
		e.finish(agents["c01"], plain.Targets[0].JobID, registry.OutcomeSucceeded)
		e.finish(agents["c03"], sealed.Targets[0].JobID, registry.OutcomeSucceeded)

		// A replica without the key file cannot start sealed's next wave;
		// it must still advance plain.
		noKey := registry.New(e.store, registry.Config{Clock: e.clock})
		t.Cleanup(func() { noKey.Close() })
		_, err = registry.NewRolloutService(noKey, 0).RunOnce(e.ctx)
		wantCode(t, err, registry.CodeUnavailable)
		got, err := e.reg.GetRollout(e.ctx, "plain")
		wantNoErr(t, err)
		wantTargets(t, got, "c01:succeeded c02:running")
	})

	t.Run("CreateRefusedWhenATargetCannotBeSealed", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.fleet(2, nil)
		key, err := jwe.GenerateX25519()
		wantNoErr(t, err)
		_, err = e.reg.ModifyCluster(e.ctx, "c02", func(s *registry.ClusterSpec) error {
			s.PublicKey = registry.AgentPublicKey(key.Public().JWK())
			s.Policy.RequireEncryptedPayloads = true
			return nil
		})
		wantNoErr(t, err)
		noKey := registry.New(e.store, registry.Config{Clock: e.clock})
		t.Cleanup(func() { noKey.Close() })
		_, err = noKey.CreateRollout(e.ctx, registry.RolloutSpec{Name: "web", Selector: "env=prod", Kind: registry.KindApply, Payload: json.RawMessage(applyPayload)})
		wantCode(t, err, registry.CodeUnavailable)
		if !strings.Contains(registry.ErrorMessage(err), "c02") {
			t.Errorf("the refusal does not name the cluster: %v", err)
		}
		if list, _ := e.reg.ListRollouts(e.ctx, registry.RolloutListParams{}); len(list) != 0 {
			t.Fatalf("a refused rollout was stored: %d rollouts (its create would stall at c02's wave)", len(list))
		}
	})

	t.Run("FrozenTargetsRefusalsAndDryRun", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.fleet(3, func(i int, s *registry.ClusterSpec) {
			if i == 2 {
				s.AllowedNamespaces = []string{"team-b"}
			}
		})
		e.cluster("staging", func(s *registry.ClusterSpec) { s.Labels = registry.Labels{"env": "staging"} })

		dry, err := e.reg.CreateRollout(e.ctx, registry.RolloutSpec{Selector: "env=prod", Kind: registry.KindApply, Payload: json.RawMessage(applyPayload), DryRun: true})
		wantNoErr(t, err)
		wantTargets(t, dry, "c01:pending c02:refused c03:pending")
		if !strings.Contains(dry.Targets[1].Reason, "team-a") {
			t.Fatalf("refusal reason %q does not name the rule", dry.Targets[1].Reason)
		}
		if list, _ := e.reg.ListRollouts(e.ctx, registry.RolloutListParams{}); len(list) != 0 {
			t.Fatalf("a dry run stored %d rollouts", len(list))
		}
		if jobs, _ := e.reg.ListJobs(e.ctx, registry.JobListParams{}); len(jobs) != 0 {
			t.Fatalf("a dry run queued %d jobs", len(jobs))
		}

		ro := e.rollout(registry.RolloutSpec{Name: "web", MaxParallel: 5})
		wantTargets(t, ro, "c01:running c02:refused c03:running")
		e.cluster("c99", func(s *registry.ClusterSpec) { s.Labels = registry.Labels{"env": "prod"} })
		again, err := e.reg.GetRollout(e.ctx, "WEB")
		wantNoErr(t, err)
		if len(again.Targets) != 3 {
			t.Fatalf("targets = %d: the set is frozen at creation, a cluster labelled later joins no rollout", len(again.Targets))
		}
		_, err = e.reg.CreateRollout(e.ctx, registry.RolloutSpec{Name: "web", Selector: "env=prod", Kind: registry.KindApply, Payload: json.RawMessage(applyPayload)})
		wantCode(t, err, registry.CodeConflict)
		_, err = e.reg.CreateRollout(e.ctx, registry.RolloutSpec{Selector: "env=nowhere", Kind: registry.KindApply, Payload: json.RawMessage(applyPayload)})
		wantCode(t, err, registry.CodeInvalid)
		_, err = e.reg.CreateRollout(e.ctx, registry.RolloutSpec{Selector: "env=prod", Kind: registry.KindApply, Payload: json.RawMessage(`{"kind":`)})
		wantCode(t, err, registry.CodeInvalid)
		if got := len(e.auditFor(registry.AuditRolloutCreate)); got != 1 {
			t.Fatalf("rollout.create audit entries = %d, want 1", got)
		}
	})

	t.Run("WavesNeverExceedMaxParallel", func(t *testing.T) {
		e := newEnv(t, newStore)
		agents := e.fleet(5, nil)
		ro := e.rollout(registry.RolloutSpec{MaxParallel: 2, PauseBetween: time.Minute})
		wantTargets(t, ro, "c01:running c02:running c03:pending c04:pending c05:pending")
		// Jobs are created wave by wave: nothing is queued on later targets.
		for _, name := range []string{"c03", "c04", "c05"} {
			if n := e.counts(agents[name].Cluster.ID)[registry.JobQueued]; n != 0 {
				t.Fatalf("%s has %d queued jobs before its wave", name, n)
			}
		}
		e.finish(agents["c01"], ro.Targets[0].JobID, registry.OutcomeSucceeded)
		ro = e.advance(ro.ID)
		wantTargets(t, ro, "c01:succeeded c02:running c03:pending c04:pending c05:pending")
		e.finish(agents["c02"], ro.Targets[1].JobID, registry.OutcomeNoop)
		ro = e.advance(ro.ID)
		wantTargets(t, ro, "c01:succeeded c02:succeeded c03:pending c04:pending c05:pending")
		if ro.NextWaveAt.IsZero() {
			t.Fatal("the wave ended with pause-between set, but no next wave time")
		}
		e.clock.Advance(59 * time.Second)
		wantTargets(t, e.advance(ro.ID), "c01:succeeded c02:succeeded c03:pending c04:pending c05:pending")
		e.clock.Advance(time.Second)
		ro = e.advance(ro.ID)
		wantTargets(t, ro, "c01:succeeded c02:succeeded c03:running c04:running c05:pending")
		e.finish(agents["c03"], ro.Targets[2].JobID, registry.OutcomeSucceeded)
		e.finish(agents["c04"], ro.Targets[3].JobID, registry.OutcomeSucceeded)
		ro = e.advance(ro.ID)
		e.clock.Advance(time.Minute)
		ro = e.advance(ro.ID)
		wantTargets(t, ro, "c01:succeeded c02:succeeded c03:succeeded c04:succeeded c05:running")
		e.finish(agents["c05"], ro.Targets[4].JobID, registry.OutcomeSucceeded)
		ro = e.advance(ro.ID)
		if ro.State != registry.RolloutCompleted || ro.FinishedAt.IsZero() {
			t.Fatalf("state %s finished %v, want completed", ro.State, ro.FinishedAt)
		}
		j := e.job(ro.Targets[0].JobID)
		if !strings.HasPrefix(j.IdempotencyKey, "rollout:"+ro.ID+":") || j.SubmittedBy != "rollout:"+ro.Name {
			t.Fatalf("job key %q submitted by %q", j.IdempotencyKey, j.SubmittedBy)
		}
		if got := len(e.auditFor(registry.AuditRolloutComplete)); got != 1 {
			t.Fatalf("rollout.complete audit entries = %d", got)
		}
	})

	t.Run("HaltResumeRetryAbort", func(t *testing.T) {
		e := newEnv(t, newStore)
		agents := e.fleet(5, nil)
		_, err := e.reg.SetClusterEnabled(e.ctx, "c02", false, "maintenance")
		wantNoErr(t, err)
		ro := e.rollout(registry.RolloutSpec{MaxParallel: 2, MaxFailures: 1})
		// c02 is disabled: it fails at once (one failure is allowed), and
		// its slot goes to no one until the wave ends.
		wantTargets(t, ro, "c01:running c02:failed c03:pending c04:pending c05:pending")
		if !strings.Contains(ro.Targets[1].Reason, "disabled") {
			t.Fatalf("reason = %q", ro.Targets[1].Reason)
		}
		e.finish(agents["c01"], ro.Targets[0].JobID, registry.OutcomeFailed)
		ro = e.advance(ro.ID)
		if ro.State != registry.RolloutHalted {
			t.Fatalf("state = %s after 2 failures with max 1, want halted", ro.State)
		}
		wantTargets(t, ro, "c01:failed c02:failed c03:pending c04:pending c05:pending")
		if !strings.Contains(ro.Targets[0].Reason, "failed: boom") {
			t.Fatalf("failure reason = %q", ro.Targets[0].Reason)
		}
		if got := len(e.auditFor(registry.AuditRolloutHalt)); got != 1 {
			t.Fatalf("rollout.halt audit entries = %d", got)
		}
		wantTargets(t, e.advance(ro.ID), "c01:failed c02:failed c03:pending c04:pending c05:pending")

		_, err = e.reg.PauseRollout(e.ctx, ro.ID, "")
		wantCode(t, err, registry.CodeConflict)
		ro, err = e.reg.ResumeRollout(e.ctx, ro.Name, "looked at it")
		wantNoErr(t, err)
		wantTargets(t, ro, "c01:failed c02:failed c03:running c04:running c05:pending")

		ro, err = e.reg.PauseRollout(e.ctx, ro.ID, "lunch")
		wantNoErr(t, err)
		e.finish(agents["c03"], ro.Targets[2].JobID, registry.OutcomeSucceeded)
		e.finish(agents["c04"], ro.Targets[3].JobID, registry.OutcomeSucceeded)
		ro = e.advance(ro.ID)
		// Paused: outcomes are recorded, no new wave starts.
		wantTargets(t, ro, "c01:failed c02:failed c03:succeeded c04:succeeded c05:pending")

		_, err = e.reg.SetClusterEnabled(e.ctx, "c02", true, "")
		wantNoErr(t, err)
		ro, err = e.reg.RetryFailedRollout(e.ctx, ro.ID, "")
		wantNoErr(t, err)
		if ro.State != registry.RolloutPaused {
			t.Fatalf("retry-failed changed a paused rollout to %s", ro.State)
		}
		wantTargets(t, ro, "c01:pending c02:pending c03:succeeded c04:succeeded c05:pending")
		ro, err = e.reg.ResumeRollout(e.ctx, ro.ID, "")
		wantNoErr(t, err)
		wantTargets(t, ro, "c01:running c02:running c03:succeeded c04:succeeded c05:pending")
		if ro.Targets[0].Attempts != 2 || ro.Targets[0].JobID == "" {
			t.Fatalf("retried target: attempts %d job %q", ro.Targets[0].Attempts, ro.Targets[0].JobID)
		}
		c01Job := ro.Targets[0].JobID
		e.finish(agents["c02"], ro.Targets[1].JobID, registry.OutcomeSucceeded)

		ro, err = e.reg.AbortRollout(e.ctx, ro.ID, "enough")
		wantNoErr(t, err)
		// c01's queued job is canceled by the abort; c05 is skipped.
		wantTargets(t, ro, "c01:skipped c02:succeeded c03:succeeded c04:succeeded c05:skipped")
		if j := e.job(c01Job); j.State != registry.JobCanceled {
			t.Fatalf("the aborted rollout's queued job is %s, want canceled", j.State)
		}
		if ro.State != registry.RolloutAborted || ro.FinishedAt.IsZero() {
			t.Fatalf("state %s finished %v", ro.State, ro.FinishedAt)
		}
		_, err = e.reg.AbortRollout(e.ctx, ro.ID, "")
		wantCode(t, err, registry.CodeConflict)
		_, err = e.reg.RetryFailedRollout(e.ctx, ro.ID, "")
		wantCode(t, err, registry.CodeConflict)
		for _, action := range []string{registry.AuditRolloutPause, registry.AuditRolloutResume, registry.AuditRolloutRetry, registry.AuditRolloutAbort} {
			entries := e.auditFor(action)
			if len(entries) == 0 || entries[0].Actor != "admin:tester" || entries[0].TargetID != ro.ID {
				t.Fatalf("audit of %s = %+v", action, entries)
			}
		}
	})

	t.Run("AbortKeepsRunningJobsAndRecordsThem", func(t *testing.T) {
		e := newEnv(t, newStore)
		agents := e.fleet(2, nil)
		ro := e.rollout(registry.RolloutSpec{MaxParallel: 2})
		claim, err := e.reg.AckJob(e.ctx, agents["c01"], ro.Targets[0].JobID)
		wantNoErr(t, err)
		ro, err = e.reg.AbortRollout(e.ctx, ro.ID, "")
		wantNoErr(t, err)
		wantTargets(t, ro, "c01:running c02:skipped")
		if !ro.FinishedAt.IsZero() {
			t.Fatal("an aborted rollout with a running job has finished")
		}
		active, err := e.reg.ListRollouts(e.ctx, registry.RolloutListParams{Active: true})
		wantNoErr(t, err)
		if len(active) != 1 {
			t.Fatalf("active rollouts = %d: an aborted one whose job still runs is active until it ends", len(active))
		}
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, agents["c01"], ro.Targets[0].JobID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})))
		n, err := registry.NewRolloutService(e.reg, 0).RunOnce(e.ctx)
		wantNoErr(t, err)
		ro, _ = e.reg.GetRollout(e.ctx, ro.ID)
		if n != 1 || ro.FinishedAt.IsZero() {
			t.Fatalf("service advanced %d rollouts; finished %v", n, ro.FinishedAt)
		}
		wantTargets(t, ro, "c01:succeeded c02:skipped")
		if active, _ := e.reg.ListRollouts(e.ctx, registry.RolloutListParams{Active: true}); len(active) != 0 {
			t.Fatalf("active rollouts after the end = %d", len(active))
		}
		list, _ := e.reg.ListRollouts(e.ctx, registry.RolloutListParams{})
		if len(list) != 1 || list[0].Counts[registry.TargetSucceeded] != 1 || list[0].Counts[registry.TargetSkipped] != 1 || list[0].Targets != nil {
			t.Fatalf("list = %+v", list)
		}
	})

	t.Run("DeletedClusterAndOrderByLabel", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.fleet(3, func(i int, s *registry.ClusterSpec) {
			s.Labels["wave"] = fmt.Sprint(4 - i) // c03 first
		})
		ro := e.rollout(registry.RolloutSpec{Order: "label=wave", MaxParallel: 1})
		wantTargets(t, ro, "c03:running c02:pending c01:pending")
		_, err := e.reg.DeleteCluster(e.ctx, "c03", "")
		wantNoErr(t, err)
		ro = e.advance(ro.ID)
		if ro.State != registry.RolloutHalted || ro.Targets[0].State != registry.TargetFailed {
			t.Fatalf("state %s, targets %s: a deleted cluster's job counts as a failure", ro.State, targetStates(ro))
		}
		_, err = e.reg.CreateRollout(e.ctx, registry.RolloutSpec{Selector: "env=prod", Order: "size", Kind: registry.KindApply, Payload: json.RawMessage(applyPayload)})
		wantCode(t, err, registry.CodeInvalid)
	})

	t.Run("ConcurrentAdvancesStartEachWaveOnce", func(t *testing.T) {
		e := newEnv(t, newStore)
		agents := e.fleet(6, nil)
		ro := e.rollout(registry.RolloutSpec{MaxParallel: 2})
		for wave := 0; wave < 3; wave++ {
			for _, tg := range ro.Targets {
				if tg.State == registry.TargetRunning {
					e.finish(agents[tg.ClusterName], tg.JobID, registry.OutcomeSucceeded)
				}
			}
			// Several replicas' services advance the same rollout at once.
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := registry.NewRolloutService(e.reg, 0).RunOnce(e.ctx); err != nil && registry.ErrorCode(err) != registry.CodeConflict {
						t.Errorf("RunOnce: %v", err)
					}
				}()
			}
			wg.Wait()
			ro, _ = e.reg.GetRollout(e.ctx, ro.ID)
			if n := ro.Counts[registry.TargetRunning]; n > 2 {
				t.Fatalf("%d targets running with max-parallel 2", n)
			}
		}
		for _, a := range agents {
			jobs, err := e.reg.ListJobs(e.ctx, registry.JobListParams{ClusterIDs: []string{a.Cluster.ID}})
			wantNoErr(t, err)
			if len(jobs) > 1 {
				t.Fatalf("cluster %s got %d jobs from one rollout: a wave was started twice", a.Cluster.Name, len(jobs))
			}
		}
		if got := ro.Counts[registry.TargetSucceeded] + ro.Counts[registry.TargetRunning]; got != 6 {
			t.Fatalf("targets = %s", targetStates(ro))
		}
	})

	t.Run("OrgScopeAndRoles", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.fleet(2, nil)
		e.cluster("other-org", func(s *registry.ClusterSpec) {
			s.Organization, s.Labels = "acme", registry.Labels{"env": "prod"}
		})
		acme := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "acme-ops", Role: registry.RoleOperator, Org: "acme"})
		ro, err := e.reg.CreateRollout(acme, registry.RolloutSpec{Selector: "env=prod", Kind: registry.KindApply, Payload: json.RawMessage(applyPayload)})
		wantNoErr(t, err)
		wantTargets(t, ro, "other-org:running")
		global := e.rollout(registry.RolloutSpec{Name: "global"})
		_, err = e.reg.GetRollout(acme, global.ID)
		wantCode(t, err, registry.CodeNotFound)
		list, err := e.reg.ListRollouts(acme, registry.RolloutListParams{})
		wantNoErr(t, err)
		if len(list) != 1 || list[0].ID != ro.ID {
			t.Fatalf("acme sees %d rollouts", len(list))
		}
		viewer := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "v", Role: registry.RoleViewer})
		_, err = e.reg.PauseRollout(viewer, global.ID, "")
		wantCode(t, err, registry.CodeForbidden)
		_, err = e.reg.GetRollout(viewer, global.ID)
		wantNoErr(t, err)
	})
}
