package server_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPIIdempotencyReplay: a producer's retry with the same
// Idempotency-Key answers the original job, open (202) or finished (200),
// with Idempotent-Replayed: true; another request with the key is 409
// naming it; once the key's retention passed, the key makes a new job.
func TestAdminAPIIdempotencyReplay(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("producer", registry.RoleOperator, "")
	_, regToken := e.cluster("prod", func(s *registry.ClusterSpec) { s.AllowedNamespaces = []string{"apps"} })
	a := e.register(regToken, registry.CapabilityLease)
	cm := func(name string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"apps"}}`, name))
	}
	post := func(path, name string) *response {
		t.Helper()
		return e.api("POST", path, tok, map[string]any{"cluster": "prod", "kind": "apply", "payload": cm(name)}, withHeader("Idempotency-Key", "deploy-42"))
	}
	answer := func(r *response, status int, replayed bool) registry.Job {
		t.Helper()
		if r.status != status || (r.header.Get("Idempotent-Replayed") == "true") != replayed {
			t.Fatalf("answer %d (Idempotent-Replayed %q), want %d replayed=%v: %s", r.status, r.header.Get("Idempotent-Replayed"), status, replayed, r.body)
		}
		return decodeAs[registry.Job](t, r)
	}

	first := answer(post("/jobs", "x"), 202, false)
	if again := answer(post("/jobs", "x"), 202, true); again.ID != first.ID {
		t.Fatalf("replay of an open job answered %s, want %s", again.ID, first.ID)
	}
	claim := a.do("POST", "/api/agent/jobs/"+first.ID+"/ack", withBody(`{}`))
	claim.want(t, 204)
	a.do("POST", "/api/agent/jobs/"+first.ID+"/result", withHeader("X-Claim-Id", claim.header.Get("X-Claim-Id")), withBody(`{"outcome":"succeeded"}`)).want(t, 204)

	// The retry after the job finished answers it as it ended, and queues nothing.
	for _, path := range []string{"/jobs", "/jobs?wait=30"} {
		j := answer(post(path, "x"), 200, true)
		if j.ID != first.ID || j.State != registry.JobSucceeded {
			t.Fatalf("POST %s after the job finished answered %s (%s), want %s succeeded", path, j.ID, j.State, first.ID)
		}
		if loc := post(path, "x").header.Get("Location"); loc != "/api/admin/v1/jobs/"+first.ID {
			t.Fatalf("replay's Location %q", loc)
		}
	}
	wantAPIError(t, post("/jobs", "y"), 409, "conflict", `"deploy-42"`, first.ID)
	jobs := decodeAs[page[registry.Job]](t, e.api("GET", "/jobs", tok, nil))
	if len(jobs.Items) != 1 {
		t.Fatalf("%d jobs after the replays, want 1", len(jobs.Items))
	}

	e.clock.Advance(registry.DefaultIdempotencyRetention)
	if next := answer(post("/jobs", "y"), 202, false); next.ID == first.ID {
		t.Fatal("the expired key answered the old job")
	}
}
