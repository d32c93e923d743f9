package server_test

import (
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPIRequeueAttempt: a requeue that names the attempt it means
// ("attempt") is refused with 409 conflict, the registry's message saying
// which attempt and claim the job is at now, once the job moved on; the
// job, its holder and the audit trail are left as they were. The attempt it
// is at requeues it.
func TestAdminAPIRequeueAttempt(t *testing.T) {
	e := newEnv(t)
	c, tok := e.cluster("prod")
	a := e.register(tok, registry.CapabilityLease)
	op := e.adminToken("ops", registry.RoleOperator, "")
	id := e.submit(c.ID)
	a.ack(id).wantNoContent(t)
	// The lease ran out, the job went back to the queue and its agent took
	// it again: attempt 2, another claim.
	if _, err := e.reg.RequeueJob(adminCtx(), id, "lease expired"); err != nil {
		t.Fatal(err)
	}
	ack := a.ack(id)
	ack.wantNoContent(t)
	claim := ack.header.Get("X-Claim-Id")
	if claim == "" {
		t.Fatal("the lease agent's ack has no X-Claim-Id")
	}
	before := decodeAs[registry.Job](t, e.api("GET", "/jobs/"+id, op, nil))

	wantAPIError(t, e.api("POST", "/jobs/"+id+"/requeue", op, map[string]any{"reason": "stuck", "attempt": 1}), 409, "conflict",
		"attempt 2 now", claim, "not attempt 1", "look at it again")
	after := decodeAs[registry.Job](t, e.api("GET", "/jobs/"+id, op, nil))
	if after.State != registry.JobInProgress || after.Attempt != 2 || after.ClaimID != claim || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("a refused requeue changed the job: %s attempt %d claim %q, want in_progress attempt 2 claim %q", after.State, after.Attempt, after.ClaimID, claim)
	}
	if audit := decodeAs[page[registry.AuditEntry]](t, e.api("GET", "/audit?action=job.requeue", op, nil)); len(audit.Items) != 1 {
		t.Fatalf("audit after a refused requeue: %+v, want the reaper-like requeue alone", audit.Items)
	}
	wantAPIError(t, e.api("POST", "/jobs/"+id+"/requeue", op, map[string]any{"attempt": -1}), 400, "invalid", "attempt")

	r := e.api("POST", "/jobs/"+id+"/requeue", op, map[string]any{"reason": "stuck", "attempt": 2})
	if j := decodeAs[registry.Job](t, r); r.status != 200 || j.State != registry.JobQueued || j.Attempt != 3 {
		t.Fatalf("requeue of the attempt the job is at: %d %s", r.status, r.body)
	}
}
