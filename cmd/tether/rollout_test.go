package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func TestClusterLabelsAndSelectors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "eu-1", "--label", "env=prod", "--label", "region=eu")
	createCluster(t, db, "us-1", "-l", "env=prod", "-l", "region=us")
	createCluster(t, db, "dev-1", "--label", "env=dev")

	out := ok(t, db, "cluster", "list", "-l", "env=prod,region in (eu)", "--show-labels").stdout
	if !strings.Contains(out, "LABELS") || !strings.Contains(out, "env=prod,region=eu") || strings.Contains(out, "us-1") || strings.Contains(out, "dev-1") {
		t.Fatalf("cluster list -l:\n%s", out)
	}
	edited := okJSON[registry.Cluster](t, db, "cluster", "edit", "eu-1", "--label", "tier=gold", "--remove-label", "region")
	if edited.Labels.String() != "env=prod,tier=gold" || edited.Version != 2 {
		t.Fatalf("edited labels %q version %d", edited.Labels.String(), edited.Version)
	}
	if got := okJSON[[]registry.Cluster](t, db, "cluster", "list", "-l", "!region"); len(got) != 2 {
		t.Fatalf("clusters without a region label = %d, want eu-1 and dev-1", len(got))
	}
	if out := ok(t, db, "cluster", "get", "eu-1").stdout; !strings.Contains(out, "env=prod,tier=gold") {
		t.Fatalf("cluster get does not show the labels:\n%s", out)
	}

	wantError(t, cli(t, db, "cluster", "list", "-l", "env in (prod"), exitError, "label selector", "not valid")
	wantError(t, cli(t, db, "cluster", "create", "--name", "x", "--label", "env"), exitUsage, "not KEY=VALUE")
	wantError(t, cli(t, db, "cluster", "edit", "dev-1", "--label", "Bad Key=1"), exitUsage, "label key")
	wantError(t, cli(t, db, "cluster", "edit", "dev-1", "--remove-label", "region"), exitUsage, "no label \"region\"")
}

func TestRolloutLifecycle(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var tokens []string
	for _, c := range []struct{ name, ns string }{{"eu-1", "apps"}, {"eu-2", "apps"}, {"locked", "other"}} {
		tokens = append(tokens, createCluster(t, db, c.name, "--label", "env=prod", "--namespaces", c.ns).RegistrationToken)
	}
	createCluster(t, db, "staging", "--label", "env=staging", "--namespaces", "apps")
	payload := configMap("apps", "rolled")

	dry := ok(t, db, "rollout", "create", "--selector", "env=prod", "--kind", "apply", "--payload", payload, "--dry-run").stdout
	for _, want := range []string{"Dry run", "nothing was created", "eu-1", "eu-2", "locked", "refused", "apps", "pending"} {
		if !strings.Contains(dry, want) {
			t.Fatalf("dry run does not show %q:\n%s", want, dry)
		}
	}
	if strings.Contains(dry, "staging") {
		t.Fatalf("dry run reaches a cluster the selector does not match:\n%s", dry)
	}
	if got := okJSON[[]registry.Rollout](t, db, "rollout", "list"); len(got) != 0 {
		t.Fatalf("a dry run stored %d rollouts", len(got))
	}

	// Agents on the two clusters that allow the payload finish whatever they
	// are handed, as the rollout waits.
	reg := openRegistry(t, db)
	var agents []*registry.Agent
	for _, tok := range tokens[:2] {
		a, _ := registerAgent(t, reg, tok)
		agents = append(agents, a)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for ctx.Err() == nil {
			for _, a := range agents {
				jobs, _ := reg.PollJobs(ctx, a, a.Cluster.ID, 10)
				for _, j := range jobs {
					if claim, err := reg.AckJob(ctx, a, j.ID); err == nil {
						_, _ = reg.ReportResult(ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	res := cli(t, db, "rollout", "create", "--name", "web", "--selector", "env=prod", "--kind", "apply", "--payload", payload,
		"--max-parallel", "1", "--wait", "--timeout", "90s")
	// Every reachable target succeeded, but one was refused: not a clean
	// success, so exit code 3.
	if res.code != exitRolloutUnsuccessful || !strings.Contains(res.stdout, "Rollout web is completed: 3/3 done: 2 succeeded, 1 refused.") ||
		!strings.Contains(res.stderr, "tether: rollout web did not succeed everywhere") {
		t.Fatalf("rollout create --wait: want exit 3 with the outcome\n%s", res)
	}
	stop()

	ro := okJSON[registry.Rollout](t, db, "rollout", "get", "web")
	if ro.State != registry.RolloutCompleted || ro.Counts[registry.TargetSucceeded] != 2 || ro.Counts[registry.TargetRefused] != 1 {
		t.Fatalf("rollout = %s %v", ro.State, ro.Counts)
	}
	for _, tg := range ro.Targets[:2] {
		if tg.JobState != registry.JobSucceeded || tg.Attempts != 1 {
			t.Fatalf("target %+v", tg)
		}
	}
	table := ok(t, db, "rollout", "get", "web").stdout
	for _, want := range []string{"completed", "[####", "eu-1", "succeeded", "locked", "refused", "other"} {
		if !strings.Contains(table, want) {
			t.Fatalf("rollout get does not show %q:\n%s", want, table)
		}
	}
	if list := ok(t, db, "rollout", "list").stdout; !strings.Contains(list, "web") || !strings.Contains(list, "3/3") {
		t.Fatalf("rollout list:\n%s", list)
	}

	// The refused target is tried again once its allowlist admits the payload.
	ok(t, db, "cluster", "edit", "locked", "--add-namespace", "apps")
	out := ok(t, db, "rollout", "retry-failed", "web", "--reason", "allowlist fixed").stdout
	if !strings.Contains(out, "Rollout web is running") || !strings.Contains(out, "1 running") {
		t.Fatalf("retry-failed: %s", out)
	}
	out = ok(t, db, "rollout", "abort", "web", "--reason", "changed my mind").stdout
	if !strings.Contains(out, "aborted") || !strings.Contains(out, "1 skipped") {
		t.Fatalf("abort: %s", out)
	}
	audit := ok(t, db, "audit", "--action", "rollout.").stdout
	for _, want := range []string{"rollout.create", "rollout.complete", "rollout.retry_failed", "rollout.abort", "changed my mind"} {
		if !strings.Contains(audit, want) {
			t.Fatalf("audit trail lacks %q:\n%s", want, audit)
		}
	}

	wantError(t, cli(t, db, "rollout", "create", "--kind", "apply", "--payload", payload), exitUsage, "--selector")
	wantError(t, cli(t, db, "rollout", "create", "-l", "env=nowhere", "--kind", "apply", "--payload", payload), exitError, "matches no cluster")
	wantError(t, cli(t, db, "rollout", "create", "-l", "env=prod", "--kind", "apply", "--payload", payload, "--order", "size"), exitError, "order")
	wantError(t, cli(t, db, "rollout", "pause", "nope"), exitError, "no rollout", "nope")
	wantError(t, cli(t, db, "rollout", "pause", "web"), exitError, "aborted", "only a running rollout")
	wantError(t, cli(t, db, "rollout", "list", "--state", "sideways"), exitUsage, "sideways")
}

// TestTargetDurationReadsAsTheConsole: a target running for 60 hours reads
// "2d" in rollout get, as in the console's rollout view (tui's took), not
// "3d": a measured span is truncated, never rounded up (issue 12).
func TestTargetDurationReadsAsTheConsole(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tg := registry.RolloutTarget{StartedAt: now.Add(-60 * time.Hour)}
	if got := targetDuration(now, &tg); got != "2d" {
		t.Errorf("running 60h: %q, want 2d", got)
	}
	tg.FinishedAt = tg.StartedAt.Add(60*time.Hour - time.Second)
	if got := targetDuration(now, &tg); got != "2d" {
		t.Errorf("took 60h: %q, want 2d", got)
	}
	if got := ago(now, now.Add(-60*time.Hour)); got != "2d ago" {
		t.Errorf("60h ago: %q, want 2d ago", got)
	}
}

// rollout create --wait gives up at --timeout as job submit --wait does:
// exit 4, saying that the rollout carries on, and it does.
func TestRolloutWaitTimesOutWithExit4(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "quiet", "--label", "env=prod", "--namespaces", "apps") // no agent: its target never ends
	res := cli(t, db, "rollout", "create", "--name", "slow", "--selector", "env=prod", "--kind", "apply",
		"--payload", configMap("apps", "rolled"), "--wait", "--timeout", "1s")
	if res.code != exitWaitTimeout || !strings.Contains(res.stderr, "timed out after 1s waiting for rollout slow") ||
		!strings.Contains(res.stderr, "carries on") || !strings.Contains(res.stderr, "over 1 cluster;") {
		t.Fatalf("rollout create --wait --timeout: want exit 4 saying the rollout carries on\n%s", res)
	}
	if ro := okJSON[registry.Rollout](t, db, "rollout", "get", "slow"); ro.State != registry.RolloutRunning {
		t.Fatalf("the rollout is %s after the wait gave up, want running", ro.State)
	}
}
