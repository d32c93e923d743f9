package tui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// The overview's blocks size the cluster name to the fleet's names: at
// 120x40 and 80x24 tmp-delete-me is whole in the queues, the recent failures
// and the false conditions, where fixed widths cut it to "tmp-delete-…" in
// one block and left it whole in another (issue 12, defect 4).
func TestOverviewNamesFitTheirContent(t *testing.T) {
	e := newEnv(t)
	c, tok := e.cluster(t, registry.ClusterSpec{Name: "tmp-delete-me", AllowedNamespaces: []string{"apps"}})
	a := e.agent(t, tok)
	j := e.submit(t, c.ID, "apps", "web")
	ctx := context.Background()
	must(e.reg.AckJob(ctx, a, j.ID))
	if _, err := e.reg.ReportResult(ctx, a, j.ID, "", registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "ImagePullBackOff"}); err != nil {
		t.Fatal(err)
	}
	e.submit(t, c.ID, "apps", "queued")
	e.heartbeat(t, a, registry.Condition{Type: "Ready", Status: "False", Reason: "Down"})

	for _, size := range []tea.WindowSizeMsg{{Width: 120, Height: 40}, {Width: 80, Height: 24}} {
		m := newModel(t, e, false)
		m.Update(size)
		load(t, m, e)
		pump(m, tea.Batch(m.overview.Init(), m.queues.load(m.ctx.Backend))) // failures, queue health
		for _, block := range []string{"QUEUES", "FALSE CONDITIONS", "RECENT FAILURES"} {
			if !strings.Contains(m.overview.render(), block) {
				t.Fatalf("at %dx%d the overview has no %s block", size.Width, size.Height, block)
			}
		}
		n := 0
		for _, line := range strings.Split(m.overview.render(), "\n") {
			if strings.Contains(line, "tmp-delete") {
				n++
				if !strings.Contains(line, "tmp-delete-me") {
					t.Errorf("at %dx%d the overview cuts the cluster's name: %q", size.Width, size.Height, strings.TrimSpace(line))
				}
			}
		}
		if n < 3 {
			t.Log(m.overview.render())
			t.Errorf("at %dx%d the cluster is named on %d lines, want the queues, the false conditions and the failures", size.Width, size.Height, n)
		}
	}
}

// A false condition's message is read whole at 120 columns, not cut at the
// middle of the screen, and a block pads its names to its own, not to the
// longest name in the fleet (issue 30, defect 7).
func TestOverviewConditionsReadWhole(t *testing.T) {
	e := newEnv(t)
	e.cluster(t, registry.ClusterSpec{Name: "a-cluster-with-a-much-longer-name", AllowedNamespaces: []string{"apps"}})
	_, tok := e.cluster(t, registry.ClusterSpec{Name: "eu-1", AllowedNamespaces: []string{"apps"}})
	a := e.agent(t, tok)
	msg := "node-3 reports 93% of its disk used; the kubelet evicts pods at 95%"
	e.heartbeat(t, a, registry.Condition{Type: "DiskPressure", Status: "False", Reason: "DiskFull", Message: msg})
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	pump(m, m.overview.Init())
	view := ansi.Strip(m.overview.render())
	if !strings.Contains(view, msg) {
		t.Errorf("the condition's message is cut:\n%s", view)
	}
	if !strings.Contains(view, "eu-1 DiskPressure=False") {
		t.Errorf("the condition's cluster name is padded to the fleet's longest:\n%s", view)
	}
}

// Before the cluster list is read (over a large fleet it follows the first
// screen), the overview never tells on-call that no cluster is silent and
// no condition is false: those blocks say loading until the list is in.
func TestOverviewSaysLoadingUntilTheClusterListIsIn(t *testing.T) {
	e := newEnv(t)
	_, tok := e.cluster(t, registry.ClusterSpec{Name: "prod-eu-1", AllowedNamespaces: []string{"apps"}})
	e.heartbeat(t, e.agent(t, tok), registry.Condition{Type: "Ready", Status: "False", Reason: "Down"})
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	section := func(view, head string) string {
		_, after, _ := strings.Cut(view, head)
		lines := strings.SplitN(after, "\n", 3)
		if len(lines) < 2 {
			return ""
		}
		return ansi.Strip(lines[1])
	}
	view := m.overview.render()
	for _, head := range []string{"SILENT CLUSTERS", "FALSE CONDITIONS"} {
		if got := section(view, head); !strings.Contains(got, "loading") {
			t.Errorf("before the cluster list is in, %s reads %q, want loading", head, strings.TrimSpace(got))
		}
	}
	load(t, m, e)
	view = m.overview.render()
	if got := section(view, "FALSE CONDITIONS"); !strings.Contains(got, "prod-eu-1") {
		t.Errorf("with the list in, FALSE CONDITIONS reads %q, want prod-eu-1's Ready=False", strings.TrimSpace(got))
	}
}
