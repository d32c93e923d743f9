package tui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// bothBackends runs f over a console on the seeded fleet twice: over the
// registry in this process, and over the admin API of a real server on
// loopback (the remote console), with an admin token.
func bothBackends(t *testing.T, f func(t *testing.T, m *Model, e *env, fx fleetFixture)) {
	t.Run("local", func(t *testing.T) {
		e := newEnv(t)
		fx := seedFleet(t, e)
		m := newModel(t, e, false)
		load(t, m, e)
		f(t, m, e, fx)
	})
	t.Run("remote", func(t *testing.T) {
		e := newEnv(t)
		fx := seedFleet(t, e)
		remote := remoteEnv(t, e, registry.RoleAdmin, "")
		m := New(Options{Backend: remote, Theme: themes.Choice{Theme: themes.Dark()}, ServerURL: "http://127.0.0.1:7070"})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		load(t, m, e)
		f(t, m, e, fx)
	})
}

// filter types a / filter and applies it with enter.
func filter(m *Model, text string) {
	do(m, "/")
	m.filterInput.SetValue("") // the input starts with the filter in force
	for _, r := range text {
		// Typed as a person types; the jobs view's pause-then-query timer
		// each key starts is not waited for (the caller reads the jobs
		// again itself).
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	do(m, "enter")
}

// TestFiltersEverywhere: the filter syntax every list shares (words in any
// column, re:, !) and its store-backed form in the jobs view, over both
// backends.
func TestFiltersEverywhere(t *testing.T) {
	bothBackends(t, func(t *testing.T, m *Model, e *env, fx fleetFixture) {
		names := func() string {
			var out []string
			for _, c := range m.clusters.rows {
				out = append(out, c.Name)
			}
			return strings.Join(out, " ")
		}
		do(m, "2")
		filter(m, "re:^prod-(eu|us)-\\d")
		m.clusters.rebuild()
		if got := names(); got != "prod-eu-1 prod-us-1" {
			t.Errorf("/re:^prod-(eu|us)-\\d: %s", got)
		}
		filter(m, "!prod !re:^edge")
		m.clusters.rebuild()
		if got := names(); got != "legacy-dc staging" {
			t.Errorf("/!prod !re:^edge: %s", got)
		}
		filter(m, "gitops") // the MODE column
		m.clusters.rebuild()
		if got := names(); got != "legacy-dc" {
			t.Errorf("/gitops (a column the old filter did not read): %s", got)
		}
		// ^ and $ anchor at a column's edges (the console's own example,
		// re:^api-[0-9]+$, matched no row when they anchored the whole
		// row's text), and .* still spans columns.
		filter(m, "re:^prod-eu-1$")
		m.clusters.rebuild()
		if got := names(); got != "prod-eu-1" {
			t.Errorf("/re:^prod-eu-1$: %q", got)
		}
		filter(m, "re:^gitops$")
		m.clusters.rebuild()
		if got := names(); got != "legacy-dc" {
			t.Errorf("/re:^gitops$ (the MODE column): %q", got)
		}
		filter(m, "re:^legacy.*gitops")
		m.clusters.rebuild()
		if got := names(); got != "legacy-dc" {
			t.Errorf("/re:^legacy.*gitops (across columns): %q", got)
		}
		filter(m, "re:(")
		m.clusters.rebuild()
		if view := m.View().Content; !strings.Contains(view, "invalid regex: missing closing )") || m.statusKind != statusErr || !strings.Contains(m.status, "invalid regex") {
			t.Errorf("an invalid regex does not say so in the status line (%q):\n%s", m.status, view)
		}

		// The jobs: states and clusters left out through the store.
		do(m, "3", "l", "l", "l", "l")
		if m.jobs.tab != tabAll {
			t.Fatalf("tab %d, want all", m.jobs.tab)
		}
		filter(m, "!failed !succeeded cluster:prod-us")
		pump(m, m.jobs.requery())
		for i := range m.jobs.rows {
			j := &m.jobs.rows[i]
			if j.State == registry.JobFailed || j.State == registry.JobSucceeded || j.ClusterID == fx.euID {
				t.Errorf("/!failed !succeeded cluster:prod-us shows %s (%s on %s)", j.ID, j.State, j.ClusterID)
			}
		}
		settleCounts(m)
		if len(m.jobs.rows) == 0 || m.jobs.tabCount(tabAll) != len(m.jobs.rows) || m.jobs.tabCount(tabFailed) != 0 {
			t.Errorf("/!failed !succeeded cluster:prod-us: %d rows, all %d, failed %d", len(m.jobs.rows), m.jobs.tabCount(tabAll), m.jobs.tabCount(tabFailed))
		}
		// A bare word matches the CLUSTER column too (/prod-us found no
		// job; only cluster:prod-us did), and with a word of the target.
		filter(m, "prod-us")
		pump(m, m.jobs.requery())
		settleCounts(m)
		if len(m.jobs.rows) == 0 || m.jobs.tabCount(tabAll) != len(m.jobs.rows) {
			t.Errorf("/prod-us: %d rows, all %d", len(m.jobs.rows), m.jobs.tabCount(tabAll))
		}
		for i := range m.jobs.rows {
			if j := &m.jobs.rows[i]; j.ClusterID != fx.usID {
				t.Errorf("/prod-us shows %s on %s", j.ID, j.ClusterID)
			}
		}
		filter(m, "edge-lab notebook")
		pump(m, m.jobs.requery())
		if len(m.jobs.rows) != 1 || m.jobs.rows[0].ID != fx.silentJob {
			t.Errorf("/edge-lab notebook: %d rows, want the silent job %s", len(m.jobs.rows), fx.silentJob)
		}
		filter(m, "re:^api")
		if view := m.View().Content; !strings.Contains(view, "cannot match a regular expression") {
			t.Errorf("re: over the jobs does not say why not:\n%s", view)
		}
	})
}

// TestStuckTabFiltersWhy: on the stuck tab a word also matches the WHY
// column (/silent found nothing although WHY said it), through the
// registry's stuck queries, over both backends; the count on the tab
// agrees with the rows.
func TestStuckTabFiltersWhy(t *testing.T) {
	bothBackends(t, func(t *testing.T, m *Model, e *env, fx fleetFixture) {
		do(m, "3")
		m.jobs.setTab(tabStuck)
		for _, c := range []struct {
			filter string
			want   []string
		}{
			// no lease, silent; queued, cluster silent (the expired lease
			// on the silent prod-us-1 says lease expired)
			{"silent", []string{fx.silentJob, fx.strandedJob}},
			{"silent notebook", []string{fx.silentJob}},
			{"disabled legacy", []string{fx.disabledJob}},
			{"exhausted", []string{fx.exhaustedJob}},
			{"lease frontend", []string{fx.expiredJob}},
			// expired is a state no stuck job is in: a word on this tab
			{"expired frontend", []string{fx.expiredJob}},
			{"failed exhausted", []string{fx.exhaustedJob}}, // a stuck job's state stays a state
			{"in-progress exhausted", nil},
			{"silent legacy", nil},
		} {
			filter(m, c.filter)
			pump(m, m.jobs.requery())
			settleCounts(m)
			var got []string
			for i := range m.jobs.rows {
				got = append(got, m.jobs.rows[i].ID)
			}
			for _, id := range c.want {
				if !slices.Contains(got, id) {
					t.Errorf("stuck tab /%s: %v lacks %s", c.filter, got, id)
				}
			}
			if c.filter == "silent" && len(got) != 3 { // and the other job queued on prod-us-1
				t.Errorf("stuck tab /silent: %d rows, want 3", len(got))
			} else if c.filter != "silent" && len(got) != len(c.want) {
				t.Errorf("stuck tab /%s: %v, want %v", c.filter, got, c.want)
			}
			if n := m.jobs.tabCount(tabStuck); n != len(got) {
				t.Errorf("stuck tab /%s: counted %d, %d rows", c.filter, n, len(got))
			}
			if len(got) > 0 && c.filter == "silent" {
				if view := m.View().Content; !strings.Contains(view, "no lease, silent") || !strings.Contains(view, "queued, cluster silent") {
					t.Errorf("stuck tab /silent does not show why:\n%s", view)
				}
			}
		}
	})
}
