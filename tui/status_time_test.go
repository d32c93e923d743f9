package tui

import (
	"strings"
	"testing"
	"time"
)

// A result message stays its full ten seconds even when the console is
// busy and handles its clock ticks late: the bulk cancel's summary, shown
// while the last tick the console handled is already nine seconds old,
// must still be there two seconds later.
func TestStatusStaysItsFullTimeOnABusyConsole(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	m.Update(tickMsg{now: e.clock.Now()})
	e.at(9 * time.Second) // busy: no tick handled for nine seconds
	m.Update(actionDoneMsg{id: 0, label: "cancel 54 jobs", outcome: outcome{ok: "canceled 54 jobs"}})
	for _, d := range []time.Duration{10 * time.Second, 11 * time.Second, 18 * time.Second} {
		e.at(d)
		m.Update(tickMsg{now: e.clock.Now()})
		if !strings.Contains(m.View().Content, "canceled 54 jobs") {
			t.Fatalf("%s after it was shown (the last tick %s old then), the summary is gone:\n%s", d-9*time.Second, 9*time.Second, m.View().Content)
		}
	}
	e.at(19 * time.Second)
	m.Update(tickMsg{now: e.clock.Now()})
	if strings.Contains(m.View().Content, "canceled 54 jobs") {
		t.Errorf("the summary outlived its ten seconds")
	}

	// A copied id, the same.
	m.Update(tickMsg{now: e.clock.Now()})
	e.at(27 * time.Second)
	pump(m, info("copied j-1 to the clipboard (OSC 52)"))
	e.at(29 * time.Second)
	m.Update(tickMsg{now: e.clock.Now()})
	if !strings.Contains(m.View().Content, "copied j-1") {
		t.Errorf("the copied id's message vanished after two seconds:\n%s", m.View().Content)
	}
}
