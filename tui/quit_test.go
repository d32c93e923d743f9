package tui

import (
	"strings"
	"testing"
	"time"
)

// TestQuitAndStatus: q in a detail goes back instead of quitting; q in a
// console that serves the agent API asks first; a status message goes away
// after a while.
func TestQuitAndStatus(t *testing.T) {
	h := startConsole(t, consoleOpts{start: "jobs", serveAddr: "127.0.0.1:7070"})
	h.keys(":")
	h.typeText("job " + h.id(h.fx.leasedJob))
	h.keys("enter")
	h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
	h.keys("q")
	h.waitIdle(topIs[*jobsView])

	h.keys("q")
	h.waitIdle(isModal[*confirm])
	h.keys("n")
	h.waitIdle(func(m *Model) bool { return m.modal == nil && m.status != "" })

	// The "canceled" status of that answer clears once it has been read.
	h.inspect(func(m *Model) {
		m.Update(tickMsg{now: m.ctx.Now.Add(statusShownFor + time.Second)})
		if m.status != "" {
			t.Errorf("status %q still shown %s later", m.status, statusShownFor)
		}
	})
}

// TestPauseQueueFromTheConsole: p pauses a cluster's queue after asking,
// the clusters view shows it, p again resumes.
func TestPauseQueueFromTheConsole(t *testing.T) {
	h := startConsole(t, consoleOpts{start: "clusters"})
	h.keys("j", "j") // prod-eu-1 (edge-lab, legacy-dc, prod-eu-1)
	h.keys("p")
	h.waitIdle(isModal[*confirm])
	h.keys("y")
	h.waitIdle(func(m *Model) bool {
		c := m.ctx.Fleet.cluster(h.id(h.fx.euID))
		return c != nil && c.Paused()
	})
	if !strings.Contains(h.frame(), "paused") {
		t.Fatal("the clusters view does not show the paused queue")
	}
	h.keys("p")
	h.waitIdle(isModal[*confirm])
	h.keys("y")
	h.waitIdle(func(m *Model) bool {
		c := m.ctx.Fleet.cluster(h.id(h.fx.euID))
		return c != nil && !c.Paused()
	})
}
