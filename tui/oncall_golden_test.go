package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/tetherhq/tether/registry"
)

// TestGoldenOnCall: what on-call reads at 3 a.m., at 120x40 and 80x24: a
// database that stopped answering, a finished job's detail with an
// agent's hostile error, events of another day, a silent cluster's
// condition, an empty stuck tab.
func TestGoldenOnCall(t *testing.T) {
	// The database stopped answering: the header says so and how old the
	// figures are, the live mark that they are not updating; at 80 columns
	// the OFFLINE badge stays.
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("database_offline_%dx%d", size[0], size[1]), func(t *testing.T) {
			var db *downBackend
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "events",
				wrap: func(b Backend) Backend { db = &downBackend{Backend: b}; return db }})
			db.down.Store(true)
			h.env.clock.Advance(5 * time.Second)
			h.inspect(func(m *Model) {
				m.update(tickMsg{now: h.env.clock.Now()})
				m.update(queuesMsg{err: errDBDown})
			})
			h.env.clock.Advance(40 * time.Second)
			h.inspect(func(m *Model) { m.update(tickMsg{now: h.env.clock.Now()}) })
			h.waitIdle(func(m *Model) bool { return m.ctx.Offline })
			h.golden()
		})
	}
	// A finished job of a lease agent: its lease line says the lease ended
	// with the claim (it said "none: the agent does not use leases"), a
	// long target goes on under its label rather than losing its end, and
	// a timeline entry's message goes on below its row; the agent's error,
	// escapes and wide characters included, is shown escaped.
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("job_detail_finished_%dx%d", size[0], size[1]), func(t *testing.T) {
			var id string
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "jobs", seed: func(h *harness) {
				e, a := h.env, h.fx.euAgent
				j := e.submit(t, h.fx.euID, "payments", "nextcloud-team-a-payments-ledger-primary-01")
				must(e.reg.AckJob(context.Background(), a, j.ID))
				res := registry.ResultReport{Outcome: registry.OutcomeFailed,
					Error: "apply failed:\n\x1b[31mERROR\x1b[0m \x1b]0;pwned\x07 \u202eevil\u202c 全角文字 🔥\n  at line 3: IMPORTANT-TAIL quota exceeded"}
				if _, err := e.reg.ReportResult(context.Background(), a, j.ID, "", res); err != nil {
					t.Fatal(err)
				}
				id = j.ID
			}})
			h.keys(":")
			h.typeText("job " + h.id(id))
			h.keys("enter")
			h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
			h.golden()
			if size[1] == 24 {
				h.keys("G")
				h.waitIdle(func(m *Model) bool { return true })
				frame := h.frame()
				t.Run("bottom", func(t *testing.T) { golden.RequireEqual(t, []byte(frame)) })
			}
		})
	}
	// Events of another day than today (UTC) show their day: the tail
	// holds days of them, and "10:29:50" read as today's. Every time says
	// it is UTC (Z): at 80 columns the header's clock is gone.
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("events_days_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "events", seed: func(h *harness) {
				h.env.at(24*time.Hour + 5*time.Minute)
				must(h.env.reg.AppendEvents(context.Background(), h.fx.euAgent, "", []registry.Event{{
					Kind: registry.EventClusterHeartbeat, ResourceRef: registry.ResourceRef{Kind: "Cluster", Name: h.fx.euID},
					Conditions: []registry.Condition{{Type: "Ready", Status: "True", Reason: "AgentReady"}},
				}}))
				h.env.at(24*time.Hour + 6*time.Minute)
			}})
			h.golden()
		})
	}
	// An empty list's message is wrapped at 80 columns, not cut ("… a
	// silent agent or a silent …").
	t.Run("jobs_stuck_empty_80x24", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, empty: true, start: "jobs"})
		h.keys("l", "l")
		h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabStuck && m.jobs.loaded })
		h.golden()
	})
	// A silent cluster's False condition is from its last heartbeat: the
	// overview says so ahead of the agent's words, which 80 columns cut.
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("overview_silent_condition_%dx%d", size[0], size[1]), func(t *testing.T) {
			var dr *registry.Cluster
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], seed: func(h *harness) {
				e := h.env
				c, tok := e.cluster(t, registry.ClusterSpec{Name: "dr-eu-1", AllowedNamespaces: []string{"default"}})
				a := e.agent(t, tok)
				at := e.clock.Now().Add(-2 * time.Minute)
				e.heartbeat(t, a, registry.Condition{Type: "Ready", Status: "False", Reason: "APIServerUnreachable",
					Message: "dial tcp 10.0.0.1:6443: i/o timeout while listing nodes in every namespace", LastTransitionTime: at})
				dr = c
				e.at(40 * time.Minute)
			}})
			for i := 0; size[1] == 24 && i < 30; i++ { // to dr-eu-1's condition, scrolled into sight
				var there bool
				h.inspect(func(m *Model) {
					there = strings.HasPrefix(m.overview.sel, "condition:") && strings.Contains(m.overview.sel, h.id(dr.ID))
				})
				if there {
					break
				}
				h.keys("]")
				h.waitIdle(func(*Model) bool { return true })
			}
			h.golden()
		})
	}
}
