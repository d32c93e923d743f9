package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestConsoleEscapesAgentText: what an agent wrote (a result's error, an
// event's message, a heartbeat condition's type) reaches the console's jobs
// and events views, the cluster's detail and the overview's recent failures
// and false conditions escaped:
// its escape sequences, bidi overrides and carriage returns show as text and
// never act on the admin's terminal.
func TestConsoleEscapesAgentText(t *testing.T) {
	e := newEnv(t)
	c, tok := e.cluster(t, registry.ClusterSpec{Name: "prod", Organization: "acme", AllowedNamespaces: []string{"apps"}})
	a := e.agent(t, tok)
	j := e.submit(t, c.ID, "apps", "web")
	ctx := context.Background()
	must(e.reg.AckJob(ctx, a, j.ID))
	hostile := "red\x1b[31mALERT\x1b[0m \u202eevil\u202c\rnext"
	if _, err := e.reg.ReportResult(ctx, a, j.ID, "", registry.ResultReport{Outcome: registry.OutcomeFailed, Error: hostile}); err != nil {
		t.Fatal(err)
	}
	must(e.reg.AppendEvents(ctx, a, "", []registry.Event{{Kind: "Audit", Message: hostile,
		ResourceRef: registry.ResourceRef{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}}}))
	e.heartbeat(t, a, registry.Condition{Type: hostile, Status: "False"})

	m := newModel(t, e, false)
	load(t, m, e)
	pump(m, m.overview.Init()) // the recent failures
	for _, keys := range [][]string{{"3", "l", "l", "l", "l", "enter"}, {"esc", "4"}, {"1"}, {"2", "enter"}} {
		do(m, keys...)
		view := m.View().Content
		for _, bad := range []string{"\x1b[31mALERT", "\u202e", "\r"} {
			if strings.Contains(view, bad) {
				t.Errorf("after %v the console shows %q raw", keys, bad)
			}
		}
		if !strings.Contains(view, `\x1b[31mALERT`) && !strings.Contains(view, `\u202e`) {
			t.Errorf("after %v the agent's text is not shown escaped:\n%s", keys, view)
		}
	}
}
