package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAgentTextIsEscaped: what an agent wrote reaches the admin's terminal
// as visible text, never as control codes or bidi overrides, in job list,
// job get and events.
func TestAgentTextIsEscaped(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	job := submit(t, db, "prod", "apply", configMap("apps", "x"))
	reg := openRegistry(t, db)
	a, _ := registerAgent(t, reg, c.RegistrationToken, registry.CapabilityLease)
	ctx := context.Background()
	claim, err := reg.AckJob(ctx, a, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "red\x1b[31mALERT\x1b[0m \u202eevil\u202c\r\nnext"
	if err := reg.ReportStatus(ctx, a, job.ID, claim.ClaimID, registry.StatusReport{Phase: "Applying", Message: hostile}); err != nil {
		t.Fatal(err)
	}
	if err := reg.ReportResult(ctx, a, job.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: hostile,
		Body: []byte(`{"outcome":"failed","error":"\u202eevil"}`)}); err != nil {
		t.Fatal(err)
	}
	appendEvent(t, reg, a, registry.Event{Kind: "Audit", Message: hostile})

	for _, args := range [][]string{{"job", "list", "--state", "failed"}, {"job", "get", job.ID}, {"events"}} {
		out := ok(t, db, args...).stdout
		for _, bad := range []string{"\x1b", "\u202e", "\r"} {
			if strings.Contains(out, bad) {
				t.Fatalf("tether %s prints %q raw:\n%s", strings.Join(args, " "), bad, out)
			}
		}
		if !strings.Contains(out, `\x1b[31mALERT`) && !strings.Contains(out, `\u202e`) {
			t.Fatalf("tether %s hides the text instead of showing it escaped:\n%s", strings.Join(args, " "), out)
		}
	}
}
