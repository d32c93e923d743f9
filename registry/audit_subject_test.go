package registry

import "testing"

// What an audit entry links to: its own target when that is a job, a
// cluster or a rollout, else the cluster it concerns, else nothing.
func TestAuditEntrySubject(t *testing.T) {
	for _, c := range []struct {
		entry    AuditEntry
		kind, id string
	}{
		{AuditEntry{TargetKind: "job", TargetID: "j-1", ClusterID: "c-1"}, "job", "j-1"},
		{AuditEntry{TargetKind: "rollout", TargetID: "ro-1"}, "rollout", "ro-1"},
		{AuditEntry{TargetKind: "cluster", TargetID: "c-2"}, "cluster", "c-2"},
		{AuditEntry{TargetKind: "credential", TargetID: "cr-1", ClusterID: "c-1"}, "cluster", "c-1"},
		{AuditEntry{TargetKind: "ca", TargetID: "ca-1"}, "", ""},
	} {
		kind, id, ok := c.entry.Subject()
		if kind != c.kind || id != c.id || ok != (c.kind != "") {
			t.Errorf("%+v: subject %s %s %v, want %s %s", c.entry, kind, id, ok, c.kind, c.id)
		}
	}
}
