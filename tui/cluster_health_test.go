package tui

import (
	"testing"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// TestClustersViewStrandedQueue: the QUEUED and OLDEST cells warn when
// jobs wait on a cluster no agent takes them from (registry's
// ClusterHealth.Stranded): a pending cluster too, as the cluster detail
// always said, not only a disabled or silent one.
func TestClustersViewStrandedQueue(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	e.submit(t, fx.stagingID, "default", "early")
	m := newModel(t, e, false)
	load(t, m, e)
	v := &clustersView{ctx: m.ctx}
	for _, tc := range []struct {
		id   string
		want themes.Kind
	}{
		{fx.stagingID, themes.Warning}, // pending, a job queued
		{fx.legacyID, themes.Warning},  // disabled, a job queued
	} {
		c := m.ctx.Fleet.cluster(tc.id)
		if h := c.Health(m.ctx.Now, nil); !h.Stranded() {
			t.Fatalf("%s is %s, want a verdict that strands its jobs", c.Name, h)
		}
		if q := m.ctx.Fleet.count(c.ID, registry.JobQueued); q == 0 {
			t.Fatalf("%s has no queued job", c.Name)
		}
		if got := v.cells(c)[6]; got[0].kind != tc.want {
			t.Errorf("%s's QUEUED cell %q is %v, want %v", c.Name, got[0].text, got[0].kind, tc.want)
		}
	}
}
