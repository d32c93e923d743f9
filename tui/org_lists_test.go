package tui

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// An organization's token opens the events and the audit trail scoped to
// its organization by themselves (it used to be told to name a cluster),
// and o reads further back.
func TestOrgTokenReadsItsEventsAndAudit(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := remoteConsole(t, e, registry.RoleOperator, "research")
	for _, l := range []struct {
		name   string
		err    error
		loaded bool
		n      int
		of     func(i int) string
	}{
		{"events", m.events.err, m.events.loaded, len(m.events.all), func(i int) string { return m.events.all[i].ClusterID }},
		{"audit", m.audit.err, m.audit.loaded, len(m.audit.all), func(i int) string { return m.audit.all[i].ClusterID }},
	} {
		if l.err != nil || !l.loaded || l.n == 0 {
			t.Fatalf("the %s of an organization's token: loaded %v, %d, error %v", l.name, l.loaded, l.n, l.err)
		}
		for i := range l.n {
			if got := l.of(i); got != fx.edgeID {
				t.Errorf("the %s hold a record of cluster %s, outside the organization", l.name, got)
			}
		}
	}
	for _, screen := range []string{"4", "5"} {
		do(m, screen)
		if view := m.View().Content; strings.Contains(view, "name one of its clusters") {
			t.Errorf("screen %s:\n%s", screen, view)
		}
		m.status = ""
		do(m, "o")
		if strings.Contains(m.status, "could not read") || m.status == "" {
			t.Errorf("o on screen %s: status %q", screen, m.status)
		}
	}
}
