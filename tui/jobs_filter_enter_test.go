package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Enter applies a jobs filter at once: the pause that waits for typing to
// stop (so that a word is not read from the store key by key) is no use
// once the person is done, and would hold every filter's first page back by
// its length (issue 30: a word filter's first page within 100 ms).
func TestJobsFilterEnterReadsAtOnce(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "3", "l", "l", "l", "l") // the all tab
	do(m, "/")
	m.filterInput.SetValue("")
	for _, r := range "notebook" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)}) // the pause each key starts is left behind
	}
	_, cmd := m.Update(keyMsg("enter"))
	// Enter's own commands, run to their end: the pause's would answer a
	// jobsFilterMsg, which reads nothing until it is fed back, so a page
	// here is a read started by enter. (The wait is a bound for a slow
	// machine, not the assertion: a read held to 150 ms failed 1 run in
	// 20 under -race on two busy cores.)
	page, ok := find[jobsPageMsg](exec(cmd, 10*time.Second))
	if !ok {
		t.Fatal("enter started no read of the filtered jobs: the filter waits for the typing pause")
	}
	m.Update(page)
	if len(m.jobs.rows) != 1 || m.jobs.rows[0].Target.Name != "notebook" {
		t.Fatalf("/notebook: %d rows %+v", len(m.jobs.rows), m.jobs.rows)
	}
	// Enter again, nothing typed: nothing to read again.
	do(m, "/")
	if _, cmd := m.Update(keyMsg("enter")); cmd != nil {
		if _, ok := find[jobsPageMsg](exec(cmd, 10*time.Second)); ok {
			t.Error("enter on an unchanged filter read the jobs again")
		}
	}
}

// A new filter's first page is read alone; the tab counts follow once it
// has landed (read beside it, they took the CPU the page needed).
func TestJobsFilterCountsFollowThePage(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "3", "l", "l", "l", "l")
	do(m, "/")
	m.filterInput.SetValue("")
	for _, r := range "notebook" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	_, cmd := m.Update(keyMsg("enter"))
	msgs := exec(cmd, 10*time.Second) // enter's commands, run to their end: counts read beside the page would be here
	page, ok := find[jobsPageMsg](msgs)
	if !ok {
		t.Fatal("no page read")
	}
	if _, ok := find[jobsCountsMsg](msgs); ok {
		t.Fatal("the counts were read beside the first page")
	}
	_, cmd = m.Update(page)
	if _, ok := find[jobsCountsMsg](exec(cmd, 5*time.Second)); !ok {
		t.Fatal("the counts were not read once the page landed")
	}
}
