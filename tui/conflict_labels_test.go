package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// TestConflictNamesALabelEdit: when someone else changed only the cluster's
// labels meanwhile, the conflict dialog says so (the spec diff is the
// registry's, which knows labels), not "no change to the spec".
func TestConflictNamesALabelEdit(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	c := m.ctx.Fleet.cluster(fx.euID)
	f := newClusterForm(m.ctx, c.ClusterSpec, c, c.Version)
	m.modal = f
	f.field("namespaces").items = append(f.field("namespaces").items, "batch")
	must(e.reg.ModifyCluster(e.admin, fx.euID, func(s *registry.ClusterSpec) error {
		s.Labels = registry.Labels{"tier": "gold"}
		return nil
	}))
	do(m, "ctrl+s")
	d, ok := m.modal.(*conflictDialog)
	if !ok {
		t.Fatalf("a lost compare-and-swap opened %T (status %q)", m.modal, m.status)
	}
	if d.current == nil {
		t.Fatal("the dialog did not read the current version")
	}
	view := ansi.Strip(d.View())
	if strings.Contains(view, "no change to the spec") || !strings.Contains(view, "tier=gold") {
		t.Errorf("the conflict dialog does not name the label edit:\n%s", view)
	}
	if !strings.Contains(view, "namespaces +batch") {
		t.Errorf("the conflict dialog does not name my change:\n%s", view)
	}
}
