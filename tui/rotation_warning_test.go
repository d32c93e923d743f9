package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// TestForceRotationWarnsWhenTheAgentNeverRotated: the cluster detail says
// when its agent last rotated ("never" for one that registered and never
// rotated since, as the public operator does unless its Cluster resource
// asks), and the force-rotation confirmation warns that such an agent stops
// working when the grace ends, and when that is.
func TestForceRotationWarnsWhenTheAgentNeverRotated(t *testing.T) {
	e := newEnv(t)
	spec := func(name string) registry.ClusterSpec {
		return registry.ClusterSpec{Name: name, Organization: "acme", AllowedNamespaces: []string{"*"}, Policy: registry.DefaultPolicy()}
	}
	_, tok := e.cluster(t, spec("operator"))
	e.agent(t, tok)
	_, tok = e.cluster(t, spec("rotating"))
	must(e.reg.RotateCredential(e.admin, e.agent(t, tok, "hmac", "lease")))
	m := newModel(t, e, false)
	load(t, m, e)
	open := func(name string) string {
		t.Helper()
		press(m, ":")
		for _, r := range "cl " + name {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		do(m, "enter")
		d, ok := m.top().(*clusterDetail)
		if !ok {
			t.Fatalf(":cl %s opened %T", name, m.top())
		}
		return ansi.Strip(d.render(m.ctx.Fleet.cluster(d.id)))
	}

	view := open("operator")
	for _, want := range []string{"agent rotated        never since it registered", "agent rotated never"} {
		if !strings.Contains(view, want) {
			t.Errorf("the detail of a cluster whose agent never rotated lacks %q:\n%s", want, view)
		}
	}
	press(m, "r")
	c, ok := m.modal.(*confirm)
	if !ok {
		t.Fatalf("r opened %T", m.modal)
	}
	stops := e.clock.Now().Add(registry.DefaultRotationGrace).Format("2006-01-02T15:04:05Z")
	want := "has never rotated its credential; if it does not rotate within the grace (24h) it will stop working at " + stops
	if !strings.Contains(c.body, "Warning: the agent of operator (") || !strings.Contains(c.body, want) {
		t.Errorf("the confirmation does not warn %q:\n%s", want, c.body)
	}
	if strings.Contains(c.body, "learns from its next answer") {
		t.Errorf("the confirmation promises the agent rotates by itself:\n%s", c.body)
	}
	do(m, "n")
	do(m, "esc")

	view = open("rotating")
	if strings.Contains(view, "never since it registered") {
		t.Errorf("the detail of a cluster whose agent rotated says never:\n%s", view)
	}
	press(m, "r")
	if c, ok := m.modal.(*confirm); !ok || strings.Contains(c.body, "Warning") {
		t.Errorf("the confirmation for an agent that rotates warns: %T %+v", m.modal, c)
	}
}
