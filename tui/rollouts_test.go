package tui

import (
	"encoding/json"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// startRollout starts, over the seeded fleet, a rollout that halts at once:
// edge-lab refuses the payload (its namespaces), legacy-dc is disabled, and
// no failure is allowed.
func startRollout(h *harness) *registry.Rollout {
	h.t.Helper()
	return must(h.env.reg.CreateRollout(h.env.admin, registry.RolloutSpec{
		Name: "config-v2", Selector: "!canary", Kind: registry.KindApply, MaxParallel: 2,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"default"}}`),
	}))
}

func openRollouts(h *harness) {
	h.keys(":")
	h.typeText("rollouts")
	h.keys("enter")
	h.waitIdle(func(m *Model) bool { v, ok := m.top().(*rolloutsView); return ok && v.loaded && len(v.list) == 1 })
}

func openRolloutDetail(h *harness) {
	openRollouts(h)
	h.keys("enter")
	h.waitIdle(func(m *Model) bool { d, ok := m.top().(*rolloutDetail); return ok && d.ro != nil })
}

func TestGoldenRollouts(t *testing.T) {
	for _, size := range []struct {
		name          string
		width, height int
	}{{"120x40", 120, 40}, {"80x24", 80, 24}} {
		t.Run("list_"+size.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, seed: func(h *harness) { startRollout(h) }})
			openRollouts(h)
			h.golden()
		})
		t.Run("detail_"+size.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size.width, height: size.height, seed: func(h *harness) { startRollout(h) }})
			openRolloutDetail(h)
			h.golden()
		})
	}
}

func TestGoldenOverviewWithRollouts(t *testing.T) {
	h := startConsole(t, consoleOpts{seed: func(h *harness) { startRollout(h) }})
	h.waitIdle(func(m *Model) bool { return len(m.overview.rollouts) == 1 })
	h.golden()
}

func TestRolloutSteeredFromTheConsole(t *testing.T) {
	h := startConsole(t, consoleOpts{})
	ro := startRollout(h)
	if ro.State != registry.RolloutHalted {
		t.Fatalf("fixture rollout is %s, want halted", ro.State)
	}
	openRolloutDetail(h)
	h.keys("P")
	h.waitIdle(isModal[*confirm])
	h.keys("y")
	h.waitIdle(func(m *Model) bool {
		d, ok := m.top().(*rolloutDetail)
		return ok && d.ro != nil && d.ro.State == registry.RolloutRunning && d.ro.FailureBase == 1
	})
	h.keys("X")
	h.waitIdle(isModal[*confirm])
	h.keys("y")
	h.waitIdle(func(m *Model) bool {
		d, ok := m.top().(*rolloutDetail)
		return ok && d.ro != nil && d.ro.State == registry.RolloutAborted
	})
	got, err := h.env.reg.GetRollout(h.env.admin, ro.ID)
	if err != nil || got.State != registry.RolloutAborted {
		t.Fatalf("the registry's rollout is %v (%v), want aborted", got.State, err)
	}
	for _, action := range []string{registry.AuditRolloutResume, registry.AuditRolloutAbort} {
		entries := must(h.env.reg.ListAudit(h.env.admin, registry.AuditListParams{Action: action}))
		if len(entries) != 1 || entries[0].Actor != "admin:alice" {
			t.Fatalf("audit of %s: %+v", action, entries)
		}
	}
	// esc goes back to the list, then to the overview.
	h.keys("esc")
	h.waitIdle(topIs[*rolloutsView])
	h.keys("esc")
	h.waitIdle(topIs[*overview])
}

func TestRolloutsReadOnly(t *testing.T) {
	h := startConsole(t, consoleOpts{readOnly: true})
	startRollout(h)
	openRolloutDetail(h)
	// Neither help offers what the keys refuse, in the detail or the list.
	var help string
	h.inspect(func(m *Model) { help = ansi.Strip(m.helpLine() + m.helpModal().View()) })
	h.keys("esc")
	h.waitIdle(topIs[*rolloutsView])
	h.inspect(func(m *Model) { help += ansi.Strip(m.helpLine() + m.helpModal().View()) })
	for _, word := range []string{"pause", "resume", "abort", "retry failed"} {
		if strings.Contains(help, word) {
			t.Errorf("read-only help still offers %q:\n%s", word, help)
		}
	}
	h.keys("enter")
	h.waitIdle(func(m *Model) bool { d, ok := m.top().(*rolloutDetail); return ok && d.ro != nil })
	h.keys("P")
	h.waitIdle(func(m *Model) bool { return m.status != "" })
	var status string
	h.inspect(func(m *Model) { status = m.status })
	if !strings.Contains(status, "read-only") {
		t.Fatalf("status %q does not say the console is read-only", status)
	}
	if ro := must(h.env.reg.ListRollouts(h.env.admin, registry.RolloutListParams{})); ro[0].State != registry.RolloutHalted {
		t.Fatalf("a read-only console changed the rollout: %s (status %q)", ro[0].State, status)
	}
}

// A rollout's target whose job an agent holds reads "in progress", as the
// jobs view says it, not the registry's raw in_progress (issue 30, small),
// and enter on the target opens its job (issue 30: a rollout's jobs are
// links).
func TestRolloutDetailSaysInProgress(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	ro := must(e.reg.CreateRollout(e.admin, registry.RolloutSpec{
		Name: "config-v2", Selector: "!canary", Kind: registry.KindApply, MaxParallel: 2,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"default"}}`),
	}))
	var job string
	for _, tg := range ro.Targets {
		if tg.ClusterID == fx.euID && tg.JobID != "" {
			job = tg.JobID
		}
	}
	if job == "" {
		t.Fatalf("the rollout started no job on prod-eu-1: %+v", ro.Targets)
	}
	must(e.reg.AckJob(e.admin, fx.euAgent, job))
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	load(t, m, e)
	runCmd(m, "rollouts config-v2")
	pump(m, nil)
	view := ansi.Strip(m.View().Content)
	if _, ok := m.top().(*rolloutDetail); !ok || !strings.Contains(view, "in progress") || strings.Contains(view, "in_progress") {
		t.Fatalf("the rollout's job held by its agent (top %T):\n%s", m.top(), view)
	}

	// enter on a target opens its job over the rollout; esc comes back.
	d := m.top().(*rolloutDetail)
	for d.table.cursor < len(d.ro.Targets) && d.ro.Targets[d.table.cursor].JobID != job {
		do(m, "j")
	}
	do(m, "enter")
	if jd, ok := m.top().(*jobDetail); !ok || jd.id != job {
		t.Fatalf("enter on prod-eu-1's target opened %T; want its job %s", m.top(), job)
	}
	do(m, "esc")
	if m.top() != d {
		t.Fatalf("esc from the target's job: top %T, want the rollout", m.top())
	}
}
