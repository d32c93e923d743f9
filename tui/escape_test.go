package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

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

// TestConsoleEscapesAgentEventFields: an event's kind and key, and the body
// the agent sent (JSON, which carries DEL, C1 controls such as CSI and bidi
// overrides unescaped), are the agent's text too: the cluster detail's recent
// events and the event's own view show them escaped, on one line each. So
// does an audit entry's view its reason (typed by whoever acted, perhaps
// over the admin API), as the audit table does.
func TestConsoleEscapesAgentEventFields(t *testing.T) {
	e := newEnv(t)
	c, tok := e.cluster(t, registry.ClusterSpec{Name: "prod", Organization: "acme", AllowedNamespaces: []string{"apps"}})
	a := e.agent(t, tok)
	ctx := context.Background()
	hostile := "k\x1b[31mALERT\u202eevil\rnext\u009b2J"
	must(e.reg.AppendEvents(ctx, a, "", []registry.Event{{Kind: "Kind" + hostile, EventKey: "key" + hostile,
		ResourceRef: registry.ResourceRef{APIVersion: "v1", Kind: "ConfigMap", Name: "x"},
		Body:        []byte(`{"kind":"Kind","message":"body` + "\u009b2J\u202eevil\x7f" + `"}`)}}))
	must(e.reg.SetClusterPaused(e.admin, c.ID, true, "why"+hostile))

	m := newModel(t, e, false)
	load(t, m, e)
	for _, keys := range [][]string{{"2", "enter", "G"}, {"4", "enter"}} {
		for _, k := range keys {
			do(m, k)
			m.View() // a detail lays out its document when drawn: G then scrolls it
		}
		view := m.View().Content
		for _, bad := range []string{"\x1b[31mALERT", "\u202e", "\r", "\u009b", "\x7f"} {
			if strings.Contains(view, bad) {
				t.Errorf("after %v the console shows %q raw:\n%s", keys, bad, view)
			}
		}
		if !strings.Contains(view, `Kindk\x1b[31m`) { // the detail cuts it at 20 cells
			t.Errorf("after %v the event's kind is not shown escaped:\n%s", keys, view)
		}
	}
	view := m.View().Content // the event's view
	for _, want := range []string{`keyk\x1b[31mALERT\u202eevil\rnext\x9b2J`, `body\x9b2J\u202eevil\x7f`} {
		if !strings.Contains(view, want) {
			t.Errorf("the event's view does not show %q:\n%s", want, view)
		}
	}
	do(m, "esc", "5", "enter") // the pause's audit entry
	view = m.View().Content
	for _, bad := range []string{"\x1b[31mALERT", "\u202e", "\r", "\u009b"} {
		if strings.Contains(view, bad) {
			t.Errorf("the audit entry's view shows %q raw:\n%s", bad, view)
		}
	}
	if want := `whyk\x1b[31mALERT\u202eevil\rnext\x9b2J`; !strings.Contains(view, want) {
		t.Errorf("the audit entry's view does not show %q:\n%s", want, view)
	}
}

// A job's target comes from its payload, whoever submitted it (an operator's
// token over the admin API, a rollout): the cluster detail's recent jobs and
// the confirmations that describe the job show it escaped, as the jobs list
// and the job's detail do.
func TestConsoleEscapesJobTargets(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster(t, registry.ClusterSpec{Name: "prod", Organization: "acme", AllowedNamespaces: []string{"apps"}})
	payload := must(json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Config\x1b[31mMap",
		"metadata": map[string]string{"name": "web\u202eevil\u009b2J", "namespace": "apps"}}))
	if _, _, err := e.reg.SubmitJob(e.admin, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: payload}); err != nil {
		t.Fatal(err)
	}

	m := newModel(t, e, false)
	load(t, m, e)
	for _, keys := range [][]string{{"2", "enter", "G"}, {"3", "C"}} {
		for _, k := range keys {
			do(m, k)
			m.View()
		}
		view := m.View().Content
		for _, bad := range []string{"\x1b[31mMap", "\u202e", "\u009b"} {
			if strings.Contains(view, bad) {
				t.Errorf("after %v the console shows %q raw:\n%s", keys, bad, view)
			}
		}
		if !strings.Contains(ansi.Strip(view), `Config\x1b[31mMap`) {
			t.Errorf("after %v the target is not shown escaped:\n%s", keys, view)
		}
	}
}
