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

// TestOverviewQueueSelection: the overview selects the most urgent queue;
// ] and [ move the selection over every row that opens something (the
// queues, the silent clusters, the False conditions, the recent failures),
// wrapping, and it stays on its record as the order changes; Enter opens
// the selected cluster or job, and esc comes back with the selection kept.
func TestOverviewQueueSelection(t *testing.T) {
	h := startConsole(t, consoleOpts{seed: seedNotDraining})
	selected := func() (name string) {
		h.inspect(func(m *Model) {
			it, ok := m.overview.selectedItem()
			if !ok {
				return
			}
			kind, id, _ := strings.Cut(it.key, ":")
			if kind == "job" {
				name = it.key
				return
			}
			name = kind + ":" + m.ctx.Fleet.clusterName(id)
		})
		return name
	}
	if got := selected(); got != "queue:batch-eu" {
		t.Fatalf("selected %q first, want the not-draining batch-eu", got)
	}
	h.keys("]", "]")
	h.waitIdle(func(m *Model) bool { return m.overview.sel != "" })
	if got := selected(); got != "queue:prod-us-1" {
		t.Fatalf("after ] ]: %q, want prod-us-1 (batch-eu, legacy-dc, prod-us-1, ...)", got)
	}
	h.keys("[", "[", "[")
	h.waitIdle(func(m *Model) bool { return true })
	var last string
	h.inspect(func(m *Model) {
		items := m.overview.items()
		last = items[len(items)-1].key
	})
	if got := selected(); got != last || !strings.HasPrefix(last, "job:") {
		t.Fatalf("after [ [ [: %q, want the last item, the oldest recent failure (%q)", got, last)
	}
	if frame := h.frame(); !strings.Contains(ansi.Strip(frame), "▸ prod-us-1") {
		t.Fatalf("the failure's row is not marked:\n%s", frame)
	}
	h.keys("enter")
	h.waitIdle(topIs[*jobDetail])
	h.inspect(func(m *Model) {
		if d := m.top().(*jobDetail); "job:"+d.id != last {
			t.Fatalf("enter opened job %q, want %q", d.id, last)
		}
	})
	h.keys("esc")
	h.waitIdle(topIs[*overview])
	if got := selected(); got != last {
		t.Fatalf("back on the overview, %q is selected, want %q", got, last)
	}
	for i := 0; selected() != "queue:edge-lab"; i++ {
		if i == 20 {
			t.Fatalf("[ never selected edge-lab's queue (at %q)", selected())
		}
		h.keys("[")
		h.waitIdle(func(m *Model) bool { return true })
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

// TestOverviewSelectionScrolls: at 80x24 the overview is taller than the
// screen; [ from the first queue selects the last recent failure, far
// below, and scrolls it into sight.
func TestOverviewSelectionScrolls(t *testing.T) {
	h := startConsole(t, consoleOpts{width: 80, height: 24, seed: seedNotDraining})
	h.keys("[")
	h.waitIdle(func(m *Model) bool { return m.overview.sel != "" })
	frame := ansi.Strip(h.frame())
	if !strings.Contains(frame, "RECENT FAILURES") || !strings.Contains(frame, "▸ ") {
		t.Fatalf("the selected failure is not in sight:\n%s", frame)
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
