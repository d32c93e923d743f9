package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// runCmd types a `:` command line and enters it.
func runCmd(m *Model, line string) {
	do(m, ":")
	for _, r := range line {
		if r == ' ' {
			m.Update(keyMsg("space"))
			continue
		}
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	do(m, "enter")
}

// trailText is the trail as the header names it.
func trailText(m *Model) string {
	var names []string
	for _, v := range m.trail() {
		names = append(names, crumb(v))
	}
	return strings.Join(names, " › ")
}

// A `:` command starts a new trail, one rule for all of them (issue 30,
// defect 10): it goes to its screen's list and opens what it names on top,
// so esc comes back to that list; :rollouts and :ca, with no screen of
// their own, open over the list you are on. :ro then esc went to the
// overview, :ca stayed over an open detail, :job inside a job extended the
// trail.
func TestCommandsStartANewTrail(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)

	for _, c := range []string{"ro", "ca"} {
		do(m, "2", "j", "enter") // a cluster's detail
		if _, ok := m.top().(*clusterDetail); !ok {
			t.Fatalf("enter on a cluster opened %T", m.top())
		}
		runCmd(m, c)
		if m.screen != screenClusters {
			t.Fatalf(":%s from a cluster went to screen %d; want over the clusters list", c, m.screen)
		}
		if got := trailText(m); !strings.HasPrefix(got, "clusters › ") || strings.Count(got, "›") != 1 {
			t.Errorf(":%s: trail %q; want the clusters list and what it opened", c, got)
		}
		do(m, "esc")
		if m.screen != screenClusters || m.top() != m.clusters {
			t.Errorf(":%s then esc: screen %d, top %T; want the clusters list it was run from", c, m.screen, m.top())
		}
	}

	// :job inside a job: a new trail, the jobs list and the new job.
	runCmd(m, "job "+fx.silentJob)
	if _, ok := m.top().(*jobDetail); !ok || m.screen != screenJobs {
		t.Fatalf(":job opened %T on screen %d", m.top(), m.screen)
	}
	runCmd(m, "job "+fx.disabledJob)
	if got, want := trailText(m), "jobs queued › job "+shortID(fx.disabledJob); got != want {
		t.Errorf(":job inside a job: trail %q, want %q", got, want)
	}
	do(m, "esc")
	if m.top() != m.jobs {
		t.Errorf(":job then esc: top %T; want the jobs list", m.top())
	}

	// A drill's way back is forgotten: esc after :ro goes to the list it
	// was run from and no further.
	do(m, "2", "j", "enter", "J")
	runCmd(m, "ro")
	do(m, "esc")
	if m.screen != screenJobs || m.top() != m.jobs || m.drilled() {
		t.Errorf("J, :ro, esc: screen %d top %T drilled %v; want the jobs list, a new trail", m.screen, m.top(), m.drilled())
	}
}
