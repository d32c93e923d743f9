package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// esc after drilling from a cluster into its jobs (J) or events (E) goes
// back to the cluster, and leaves the list as it was before the drill; a
// filter typed by hand is still cleared by esc, as before (issue 12,
// defect 7).
func TestEscGoesBackFromADrill(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "2", "j", "j", "enter")
	d, ok := m.top().(*clusterDetail)
	if !ok {
		t.Fatalf("enter on a cluster opened %T", m.top())
	}
	for _, drill := range []string{"J", "E"} {
		do(m, drill)
		f, ok := m.top().(filterable)
		if !ok || f.Filter() != "cluster:prod-eu-1" {
			t.Fatalf("%s: top %T, filter %v", drill, m.top(), f)
		}
		do(m, "esc")
		if m.screen != screenClusters || m.top() != d {
			t.Fatalf("%s then esc: screen %d, top %T; want the cluster's detail", drill, m.screen, m.top())
		}
		if f.Filter() != "" {
			t.Errorf("%s then esc left the list filtered by %q", drill, f.Filter())
		}
	}
	// From the clusters list too (docs/console.md: clusters J, E): the
	// selected cluster's jobs or events, and esc comes back to the list
	// with the same cluster selected. J did nothing there.
	do(m, "esc", "2")
	m.clusters.rebuild()
	sel := m.clusters.selected()
	if sel == nil {
		t.Fatal("no cluster selected in the list")
	}
	for _, drill := range []string{"J", "E"} {
		do(m, drill)
		f, ok := m.top().(filterable)
		if !ok || f.Filter() != "cluster:"+sel.Name {
			t.Fatalf("%s from the list: top %T, filter %v", drill, m.top(), f)
		}
		do(m, "esc")
		if m.screen != screenClusters || m.top() != m.clusters {
			t.Fatalf("%s from the list then esc: screen %d, top %T; want the clusters list", drill, m.screen, m.top())
		}
		if got := m.clusters.selected(); got == nil || got.ID != sel.ID {
			t.Errorf("%s then esc: %v selected, want %s", drill, got, sel.Name)
		}
	}
	// Not a drill: esc clears the filter and stays.
	do(m, "3")
	m.jobs.SetFilter("cluster:prod-us-1")
	do(m, "esc")
	if m.screen != screenJobs || m.jobs.Filter() != "" {
		t.Errorf("esc on a filter typed by hand: screen %d filter %q", m.screen, m.jobs.Filter())
	}
}

// TestBackStack: each drill pushes (a cluster, its jobs, a job), the header
// shows the trail, and esc returns step by step to exactly where each step
// left: the jobs list's tab, filter and selected job from before the drill,
// the cluster selected in the clusters list; the overview's stuck jobs go
// back to the overview. Over both backends.
func TestBackStack(t *testing.T) {
	bothBackends(t, func(t *testing.T, m *Model, e *env, fx fleetFixture) {
		// The jobs list as someone left it: the queued tab, filtered,
		// the third job selected.
		do(m, "3")
		filter(m, "kind:apply")
		pump(m, m.jobs.requery())
		do(m, "j", "j")
		before := m.jobs.selected()
		if before == nil || m.jobs.tab != tabQueued {
			t.Fatalf("no job selected on the queued tab (tab %d)", m.jobs.tab)
		}

		do(m, "2", "j", "j", "enter") // prod-eu-1
		do(m, "J")
		pump(m, m.jobs.requery())
		if m.jobs.tab != tabAll || m.jobs.filter != "cluster:prod-eu-1" {
			t.Fatalf("J: tab %d filter %q", m.jobs.tab, m.jobs.filter)
		}
		do(m, "j", "enter")
		d, ok := m.top().(*jobDetail)
		if !ok {
			t.Fatalf("enter on a job opened %T", m.top())
		}
		var names []string
		for _, v := range m.trail() {
			names = append(names, crumb(v))
		}
		want := "clusters › prod-eu-1 › jobs all /cluster:prod-eu-1 › job " + shortID(d.id)
		if got := strings.Join(names, " › "); got != want {
			t.Errorf("trail %q, want %q", got, want)
		}
		if h := ansi.Strip(m.header()); !strings.Contains(h, "clusters › prod-eu-1 › jobs all /cluster:prod-eu-1 › job") {
			t.Errorf("the header does not show the trail: %q", h)
		}
		m.ctx.Width = 80
		if h := ansi.Strip(m.header()); ansi.StringWidth(h) > 80 || !strings.Contains(h, "clusters › … › job") {
			t.Errorf("at 80 columns the trail keeps its ends and drops the middle: %q", h)
		}
		m.ctx.Width = 120

		do(m, "esc")
		if m.top() != m.jobs || m.jobs.filter != "cluster:prod-eu-1" {
			t.Fatalf("esc from the job: top %T filter %q", m.top(), m.jobs.filter)
		}
		do(m, "esc")
		if _, ok := m.top().(*clusterDetail); !ok || m.screen != screenClusters {
			t.Fatalf("esc from the cluster's jobs: screen %d top %T", m.screen, m.top())
		}
		pump(m, nil)
		if m.jobs.tab != tabQueued || m.jobs.filter != "kind:apply" {
			t.Errorf("the jobs list was not put back: tab %d filter %q", m.jobs.tab, m.jobs.filter)
		}
		if j := m.jobs.selected(); j == nil || j.ID != before.ID {
			t.Errorf("the jobs list's selection was not put back: %v, want %s", j, before.ID)
		}
		do(m, "esc")
		if m.top() != m.clusters {
			t.Fatalf("esc from the cluster: top %T", m.top())
		}
		if c := m.clusters.selected(); c == nil || c.Name != "prod-eu-1" {
			t.Errorf("back on the clusters, %v is selected, want prod-eu-1", c)
		}
		if m.drilled() {
			t.Error("back at a list, the header should show the tabs again")
		}

		// The overview's stuck jobs are a drill too.
		do(m, "1", "s")
		if m.screen != screenJobs || m.jobs.tab != tabStuck {
			t.Fatalf("s on the overview: screen %d tab %d", m.screen, m.jobs.tab)
		}
		do(m, "esc")
		if m.screen != screenOverview || m.jobs.tab != tabQueued {
			t.Errorf("esc from the stuck jobs: screen %d, jobs tab %d", m.screen, m.jobs.tab)
		}
		// Moving by hand starts a new trail: esc does not jump back.
		do(m, "1", "s", "4", "3")
		do(m, "esc")
		if m.screen != screenJobs {
			t.Errorf("after moving by hand, esc went to screen %d", m.screen)
		}
	})
}
