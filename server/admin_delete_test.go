package server_test

import (
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPIDeleteJob: DELETE /jobs/{id} deletes a finished job for an
// operator, audited as the token with the reason; an open job is 409
// job_not_finished saying to cancel it first; a viewer is 403; another
// organization's job and a deleted one are 404.
func TestAdminAPIDeleteJob(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster("prod")
	other, _ := e.cluster("globex-prod", func(s *registry.ClusterSpec) { s.Organization = "globex" })
	op := e.adminToken("ops", registry.RoleOperator, "")
	viewer := e.adminToken("watcher", registry.RoleViewer, "")
	scoped := e.adminToken("acme-ops", registry.RoleOperator, "org")

	open := e.submit(c.ID)
	wantAPIError(t, e.api("DELETE", "/jobs/"+open, op, nil), 409, "job_not_finished", "queued", "cancel it first")
	if r := e.api("POST", "/jobs/"+open+"/cancel", op, nil); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("DELETE", "/jobs/"+open, viewer, nil), 403, "forbidden", "operator")
	theirs := e.submit(other.ID)
	if _, err := e.reg.CancelJob(adminCtx(), theirs, ""); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, e.api("DELETE", "/jobs/"+theirs, scoped, nil), 404, "not_found")

	r := e.api("DELETE", "/jobs/"+open+"?reason=cleanup", op, nil)
	if gone := decodeAs[registry.Job](t, r); r.status != 200 || gone.ID != open || gone.State != registry.JobCanceled {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("GET", "/jobs/"+open, op, nil), 404, "not_found")
	wantAPIError(t, e.api("DELETE", "/jobs/"+open, op, nil), 404, "not_found")
	audit := decodeAs[page[registry.AuditEntry]](t, e.api("GET", "/audit?action=job.delete", op, nil))
	if len(audit.Items) != 1 || audit.Items[0].Actor != "admin-token:ops" || audit.Items[0].TargetID != open ||
		audit.Items[0].Reason != "deleted canceled job: cleanup" {
		t.Fatalf("audit %+v", audit.Items)
	}

	// The reason may come in a body too.
	if _, err := e.reg.CancelJob(adminCtx(), theirs, ""); registry.ErrorCode(err) != registry.CodeConflict {
		t.Fatalf("cancel again: %v", err)
	}
	if r := e.api("DELETE", "/jobs/"+theirs, op, map[string]string{"reason": "from a body"}); r.status != 200 {
		t.Fatalf("delete with a body: %d %s", r.status, r.body)
	}
	if audit := decodeAs[page[registry.AuditEntry]](t, e.api("GET", "/audit?action=job.delete", op, nil)); len(audit.Items) != 2 || audit.Items[0].Reason != "deleted canceled job: from a body" {
		t.Fatalf("audit %+v", audit.Items)
	}
}
