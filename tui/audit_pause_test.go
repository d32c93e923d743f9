package tui

import (
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The audit view pauses with f like the events view: new entries wait
// (counted in the title) and are read from the store on resume; the view
// never holds more than auditKeep entries (issue 12, defect 7).
func TestAuditPausesAndIsTrimmed(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	v := m.audit
	v.Update(keyMsg("f"))
	if !v.paused {
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
	if len(v.all) != before || v.waiting != len(entries) {
		t.Fatalf("paused: %d held (was %d), %d waiting; want nothing shown and %d waiting", len(v.all), before, v.waiting, len(entries))
	}
	for _, msg := range exec(v.Update(keyMsg("f")), 10*time.Second) {
		v.Update(msg)
	}
	if v.paused || v.waiting != 0 || len(v.all) == 0 || v.all[0].ID != entries[0].ID {
		t.Fatalf("resumed: paused %v, %d waiting, newest %v; want the entry written while paused on top", v.paused, v.waiting, v.all[0].ID)
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
