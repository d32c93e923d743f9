package tui

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// A job an admin requeued past its cluster's bound on lease reclaims shows
// its attempt alone in the jobs list, not "2/1" (read "attempt 2 of 1"),
// as the job detail says it (issue 12, defect 7).
func TestJobsAttemptPastTheBound(t *testing.T) {
	e := newEnv(t)
	pol := registry.DefaultPolicy()
	pol.MaxAttempts = 1
	c, tok := e.cluster(t, registry.ClusterSpec{Name: "once", Organization: "acme", AllowedNamespaces: []string{"*"}, Policy: pol})
	a := e.agent(t, tok, registry.CapabilityLease)
	j := e.submit(t, c.ID, "web", "api")
	ok := e.submit(t, c.ID, "web", "db")
	if _, err := e.reg.AckJob(e.admin, a, j.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.RequeueJob(e.admin, j.ID, "test"); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	want := map[string]string{j.ID: "2", ok.ID: "1/1"}
	for i := range m.jobs.rows {
		id := m.jobs.rows[i].ID
		w, found := want[id]
		if !found {
			continue
		}
		delete(want, id)
		cells := m.jobs.rowCells(i)
		att := ""
		for _, s := range cells[5] { // ATT
			att += s.text
		}
		if att != w {
			t.Errorf("job %s: ATT %q, want %q", id, att, w)
		}
	}
	if len(want) > 0 {
		t.Fatalf("jobs not listed: %v", want)
	}
}
