package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The audit view pauses with f like the events view (one live list): new
// entries wait (counted in the title) and go on top on resume; the view
// never holds more than auditKeep entries (issue 12, defect 7).
func TestAuditPausesAndIsTrimmed(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	v := m.audit
	v.Update(keyMsg("f"))
	if v.follow {
		t.Fatal("f did not pause the audit view")
	}
	before := len(v.all)
	c, _, err := e.reg.CreateCluster(e.admin, registry.ClusterSpec{Name: "while-paused", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.reg.ListAudit(context.Background(), registry.AuditListParams{ClusterID: c.ID})
	if err != nil || len(entries) == 0 {
		t.Fatalf("the new cluster's audit entries: %v %v", entries, err)
	}
	v.Update(feedMsg{batch: feedBatch{Audit: entries}})
	if len(v.all) != before || len(v.pending) != len(entries) {
		t.Fatalf("paused: %d held (was %d), %d waiting; want nothing shown and %d waiting", len(v.all), before, len(v.pending), len(entries))
	}
	for _, msg := range exec(v.Update(keyMsg("f")), 10*time.Second) {
		v.Update(msg)
	}
	if !v.follow || len(v.pending) != 0 || len(v.all) == 0 || v.all[0].ID != entries[0].ID {
		t.Fatalf("resumed: paused %v, %d waiting, newest %v; want the entry written while paused on top", !v.follow, len(v.pending), v.all[0].ID)
	}

	// Bounded: a flood of live entries keeps the newest auditKeep.
	flood := make([]registry.AuditEntry, auditKeep+100)
	for i := range flood {
		flood[i] = registry.AuditEntry{ID: int64(1_000_000 + i), Action: "job.submit", Actor: "admin:flood"}
	}
	v.Update(feedMsg{batch: feedBatch{Audit: flood}})
	if len(v.all) != auditKeep || v.all[0].ID != flood[len(flood)-1].ID {
		t.Fatalf("after %d live entries the view holds %d, newest %d", len(flood), len(v.all), v.all[0].ID)
	}
}

// The audit trail is the same live list as the events tail: entries the
// feed dropped while it followed are read back from the store at once, and
// the title says so until they are.
func TestAuditDroppedEntriesComeBack(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	v := m.audit
	newest := v.all[0].ID
	v.all = v.all[1:] // the feed dropped the newest entry
	v.rebuild()
	cmd := v.Update(feedMsg{batch: feedBatch{DroppedAudit: 1}})
	if v.dropped != 1 || cmd == nil {
		t.Fatalf("after a drop: %d dropped, reload %v; want 1 and a read from the store", v.dropped, cmd != nil)
	}
	if view := v.View(); !strings.Contains(view, "1 dropped") {
		t.Errorf("the title does not show the drop:\n%s", strings.SplitN(view, "\n", 2)[0])
	}
	for _, msg := range exec(cmd, 10*time.Second) {
		v.Update(msg)
	}
	if v.dropped != 0 || v.rows[0].ID != newest {
		t.Fatalf("after the reload: %d dropped, top %d; want 0 and %d", v.dropped, v.rows[0].ID, newest)
	}
}
