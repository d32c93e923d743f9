package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// fleetAgents creates n clusters labelled env=prod, registers an agent for
// each through the registry (as agents in other processes would), and
// returns them.
func fleetAgents(t *testing.T, db string, reg *registry.Registry, n int) []*registry.Agent {
	t.Helper()
	var agents []*registry.Agent
	for i := 1; i <= n; i++ {
		c := createCluster(t, db, fmt.Sprintf("prod-%d", i), "--namespaces", "apps", "--label", "env=prod")
		a, _ := registerAgent(t, reg, c.RegistrationToken)
		agents = append(agents, a)
	}
	return agents
}

// workJobs makes the agents finish every job they are handed, until ctx
// ends, counting the jobs each cluster received.
func workJobs(ctx context.Context, reg *registry.Registry, agents []*registry.Agent) func() map[string]int {
	var mu sync.Mutex
	got := map[string]int{}
	go func() {
		for ctx.Err() == nil {
			for _, a := range agents {
				jobs, _ := reg.PollJobs(ctx, a, a.Cluster.ID, 10)
				for _, j := range jobs {
					claim, err := reg.AckJob(ctx, a, j.ID)
					if err != nil {
						continue
					}
					mu.Lock()
					got[a.Cluster.Name]++
					mu.Unlock()
					_, _ = reg.ReportResult(ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range got {
			out[k] = v
		}
		return out
	}
}

// awaitRollout polls the rollout until cond holds.
func awaitRollout(t *testing.T, reg *registry.Registry, name, what string, cond func(*registry.Rollout) bool) *registry.Rollout {
	t.Helper()
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	deadline := time.Now().Add(waitTimeout)
	for {
		ro, err := reg.GetRollout(ctx, name)
		if err == nil && cond(ro) {
			return ro
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout %s: no %s within %s (last: %+v, %v)", name, what, waitTimeout, ro, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRolloutSurvivesKill9: a serve killed with SIGKILL in the middle of a
// rollout, and started again, finishes it with exactly one job per cluster.
func TestRolloutSurvivesKill9(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	reg := openRegistry(t, db)
	agents := fleetAgents(t, db, reg, 5)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	received := workJobs(ctx, reg, agents)

	srv, _, _ := startServe(t, db)
	ok(t, db, "rollout", "create", "--name", "steady", "--selector", "env=prod", "--kind", "apply", "--payload", configMap("apps", "steady"), "--max-parallel", "1")
	awaitRollout(t, reg, "steady", "second target done", func(ro *registry.Rollout) bool { return ro.Counts[registry.TargetSucceeded] >= 2 })
	if err := srv.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
		t.Fatal(err)
	}
	<-srv.exited
	startServe(t, db)
	ro := awaitRollout(t, reg, "steady", "completion", func(ro *registry.Rollout) bool { return ro.State == registry.RolloutCompleted })
	if ro.Counts[registry.TargetSucceeded] != 5 {
		t.Fatalf("completed with %v", ro.Counts)
	}
	got := received()
	for _, a := range agents {
		if got[a.Cluster.Name] != 1 {
			t.Fatalf("cluster %s received %d jobs from one rollout across a kill -9: %v", a.Cluster.Name, got[a.Cluster.Name], got)
		}
	}
}

// TestRolloutPausedAndResumedInTheConsole drives the real console in tmux
// over a real `console --serve`: p pauses a running rollout (its running job
// finishes, no new wave starts), P and y resume it, and it completes.
func TestRolloutPausedAndResumedInTheConsole(t *testing.T) {
	db := newDB(t)
	reg := openRegistry(t, db)
	agents := fleetAgents(t, db, reg, 3)
	ok(t, db, "rollout", "create", "--name", "canary-wave", "--selector", "env=prod", "--kind", "apply", "--payload", configMap("apps", "wave"), "--max-parallel", "1")

	s := startTmux(t, 120, 40, fmt.Sprintf("%s --db %s console --serve --listen 127.0.0.1:0", binPath, db))
	s.waitFor("the console to serve the agent API", func(sc string) bool { return servingRe.MatchString(sc) })
	s.keys(":")
	s.typeText("rollouts canary-wave")
	s.keys("Enter")
	s.waitText("Rollout canary-wave")
	s.keys("p")
	s.waitText("paused")

	// The agents work now: the running job finishes, and nothing follows.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	workJobs(ctx, reg, agents)
	ro := awaitRollout(t, reg, "canary-wave", "first target done", func(ro *registry.Rollout) bool { return ro.Counts[registry.TargetSucceeded] == 1 })
	if ro.State != registry.RolloutPaused || ro.Counts[registry.TargetRunning] != 0 || ro.Counts[registry.TargetPending] != 2 {
		t.Fatalf("paused rollout moved on: %s %v", ro.State, ro.Counts)
	}
	s.waitFor("the detail to show the finished target", func(sc string) bool { return strings.Contains(sc, "1/3 done") })

	s.keys("P")
	s.waitText("Resume rollout canary-wave?")
	s.keys("y")
	awaitRollout(t, reg, "canary-wave", "completion", func(ro *registry.Rollout) bool { return ro.State == registry.RolloutCompleted })
	s.waitFor("the console to show it completed", func(sc string) bool { return strings.Contains(sc, "completed") && strings.Contains(sc, "3/3 done") })

	entries, err := reg.ListAudit(context.Background(), registry.AuditListParams{Action: "rollout."})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	for _, want := range []string{registry.AuditRolloutPause, registry.AuditRolloutResume, registry.AuditRolloutComplete} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Fatalf("audit trail %v lacks %s", actions, want)
		}
	}
}
