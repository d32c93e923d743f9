package tui

import (
	"testing"
)

// Goldens of the CA view, without a CA (offering i) and with one, and of a
// cluster detail whose credential carries a client certificate, at 120x40
// and 80x24.
func TestGoldenCA(t *testing.T) {
	withCA := func(h *harness) { must(h.env.reg.InitCA(h.env.admin, false)) }
	certified := func(h *harness) { certifiedCluster(h.t, h.env) }
	for _, size := range []struct {
		prefix        string
		width, height int
	}{{"", 120, 40}, {"narrow_", 80, 24}} {
		t.Run(size.prefix+"ca_view_none", func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height})
			h.keys(":")
			h.typeText("ca")
			h.keys("enter")
			h.waitIdle(func(m *Model) bool { v, ok := m.top().(*caView); return ok && v.loaded })
			h.golden()
		})
		t.Run(size.prefix+"ca_view", func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, seed: withCA})
			h.keys(":")
			h.typeText("ca")
			h.keys("enter")
			h.waitIdle(func(m *Model) bool { v, ok := m.top().(*caView); return ok && v.loaded })
			h.golden()
		})
		t.Run(size.prefix+"cluster_detail_certificate", func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, seed: certified})
			h.keys(":")
			h.typeText("clusters secure-1")
			h.keys("enter")
			h.waitIdle(func(m *Model) bool { d, ok := m.top().(*clusterDetail); return ok && d.loaded })
			h.keys("G") // CREDENTIALS is below SECURITY
			h.waitIdle(topIs[*clusterDetail])
			h.golden()
		})
	}
}
