package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// seedNotDraining adds batch-eu: its agent heartbeats, two jobs have waited
// four minutes, nothing was claimed. The clock stays at 10:30.
func seedNotDraining(h *harness) {
	e := h.env
	e.at(26 * time.Minute)
	c, tok := e.cluster(h.t, registry.ClusterSpec{Name: "batch-eu", Organization: "acme", AllowedNamespaces: []string{"*"}})
	a := e.agent(h.t, tok, registry.CapabilityLease)
	e.submit(h.t, c.ID, "batch", "reindex")
	e.submit(h.t, c.ID, "batch", "compact")
	e.at(30 * time.Minute)
	e.heartbeat(h.t, a)
}

// TestQueueHealthGolden: a queue the live agent leaves alone is flagged on
// the overview (first in QUEUES, selected, red, and in the header), in the
// clusters list and in its detail, at 120x40 and 80x24.
func TestQueueHealthGolden(t *testing.T) {
	for _, size := range []struct {
		name          string
		width, height int
	}{{"wide", 120, 40}, {"narrow", 80, 24}} {
		t.Run("overview_"+size.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, seed: seedNotDraining})
			h.golden()
		})
		t.Run("clusters_"+size.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, start: "clusters", seed: seedNotDraining})
			h.golden()
		})
		t.Run("cluster_detail_"+size.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, seed: seedNotDraining})
			h.keys("enter") // the overview's selected queue: batch-eu, not draining
			h.waitIdle(topIs[*clusterDetail])
			h.golden()
		})
	}
}

// TestOverviewQueueSelection: the QUEUES block selects the most urgent
// queue; ] and [ move the selection (wrapping), which stays on its cluster
// as the order changes; Enter opens the selected cluster.
func TestOverviewQueueSelection(t *testing.T) {
	h := startConsole(t, consoleOpts{seed: seedNotDraining})
	selected := func() (name string) {
		h.inspect(func(m *Model) {
			if c := m.overview.selectedQueue(); c != nil {
				name = c.Name
			}
		})
		return name
	}
	if got := selected(); got != "batch-eu" {
		t.Fatalf("selected %q first, want the not-draining batch-eu", got)
	}
	h.keys("]", "]")
	h.waitIdle(func(m *Model) bool { return m.overview.queueSel != "" })
	if got := selected(); got != "prod-us-1" {
		t.Fatalf("after ] ]: %q, want prod-us-1 (batch-eu, legacy-dc, prod-us-1, ...)", got)
	}
	h.keys("[", "[", "[")
	h.waitIdle(func(m *Model) bool { return true })
	if got := selected(); got != "edge-lab" {
		t.Fatalf("after [ [ [: %q, want edge-lab (wrapped to the last)", got)
	}
	h.keys("enter")
	h.waitIdle(topIs[*clusterDetail])
	h.inspect(func(m *Model) {
		if d := m.top().(*clusterDetail); d.Title() != "edge-lab" {
			t.Fatalf("enter opened %q", d.Title())
		}
	})
	if frame := h.frame(); !strings.Contains(frame, "QUEUE") {
		t.Fatalf("the detail has no QUEUE section:\n%s", frame)
	}
}

// seedPaused adds freeze-eu: two jobs queued on it and its queue paused.
func seedPaused(h *harness) {
	e := h.env
	e.at(26 * time.Minute)
	c, tok := e.cluster(h.t, registry.ClusterSpec{Name: "freeze-eu", Organization: "acme", AllowedNamespaces: []string{"*"}})
	a := e.agent(h.t, tok, registry.CapabilityLease)
	e.submit(h.t, c.ID, "batch", "reindex")
	e.submit(h.t, c.ID, "batch", "compact")
	if _, err := e.reg.SetClusterPaused(e.admin, c.ID, true, "change freeze"); err != nil {
		h.t.Fatal(err)
	}
	e.at(30 * time.Minute)
	e.heartbeat(h.t, a)
}

// TestOverviewQueuePaused: a paused queue says so in the overview's QUEUES
// block (⏸ before its oldest wait), as the clusters list and the detail
// do; it was only drawn amber, like a silent cluster's, and not at all in
// the mono theme.
func TestOverviewQueuePaused(t *testing.T) {
	for _, size := range []struct {
		name          string
		width, height int
	}{{"wide", 120, 40}, {"narrow", 80, 24}} {
		t.Run(size.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, seed: seedPaused})
			frame := h.frame()
			var row string
			for _, l := range strings.Split(ansi.Strip(frame), "\n") {
				if strings.Contains(l, "freeze-eu") {
					row = l
				}
			}
			if !strings.Contains(row, "⏸ 4m") {
				t.Fatalf("the paused queue's row does not say paused: %q\n%s", row, frame)
			}
			h.golden()
		})
	}
}
