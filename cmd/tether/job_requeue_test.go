package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestJobRequeueAttempt: a script looked at a job (job get: attempt 1),
// then its lease ran out, the job went back to the queue and its agent took
// it again as attempt 2. requeue --attempt 1 then refuses, naming the
// attempt and claim the job is at now, and leaves the healthy holder alone;
// --attempt 2 requeues it.
func TestJobRequeueAttempt(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "again", "--namespaces", "apps", "--lease-seconds", "60", "--max-attempts", "4")
	reg := openRegistry(t, db)
	ctx := context.Background()
	admin := registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "seed"})
	agent, _ := registerAgent(t, reg, c.RegistrationToken, "lease")
	j := submit(t, db, "again", "apply", configMap("apps", "web"))
	if _, err := reg.AckJob(ctx, agent, j.ID); err != nil {
		t.Fatalf("ack: %v", err)
	}
	seen := okJSON[registry.Job](t, db, "job", "get", j.ID)
	if _, err := reg.RequeueJob(admin, j.ID, "lease expired"); err != nil {
		t.Fatal(err)
	}
	second, err := reg.AckJob(ctx, agent, j.ID)
	if err != nil {
		t.Fatalf("ack of attempt 2: %v", err)
	}

	wantError(t, cli(t, db, "job", "requeue", j.ID, "--attempt", "1", "--reason", "wedged"), exitError,
		"attempt 2 now", second.ClaimID, "not attempt 1", "look at it again")
	if got := okJSON[registry.Job](t, db, "job", "get", j.ID); got.State != registry.JobInProgress || got.Attempt != 2 || got.ClaimID != second.ClaimID {
		t.Fatalf("a refused requeue changed the job: %s attempt %d claim %q, want in_progress attempt 2 claim %q", got.State, got.Attempt, got.ClaimID, second.ClaimID)
	}
	if out := ok(t, db, "audit", "--action", "job.requeue").stdout; strings.Contains(out, "wedged") {
		t.Errorf("a refused requeue was audited:\n%s", out)
	}
	wantError(t, cli(t, db, "job", "requeue", j.ID, "--attempt", "-1"), exitUsage, "--attempt")

	requeued := okJSON[registry.Job](t, db, "job", "requeue", j.ID, "--attempt", "2", "--reason", "wedged")
	if seen.Attempt != 1 || requeued.State != registry.JobQueued || requeued.Attempt != 3 {
		t.Fatalf("requeue --attempt 2: %s attempt %d (seen at attempt %d)", requeued.State, requeued.Attempt, seen.Attempt)
	}
	if out := ok(t, db, "job", "requeue", "--help").stdout; !strings.Contains(out, "--attempt") {
		t.Errorf("requeue --help does not describe --attempt:\n%s", out)
	}
}
