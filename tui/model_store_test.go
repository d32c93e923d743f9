package tui

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// downBackend is a backend whose database can be taken away: its periodic
// reads (queue health, job counts) then fail as a store that cannot reach
// its database fails them.
type downBackend struct {
	Backend
	down atomic.Bool
}

var errDBDown = registry.Errorf(registry.CodeUnavailable, "the database cannot be reached; try again")

func (b *downBackend) FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	if b.down.Load() {
		return nil, errDBDown
	}
	return b.Backend.FleetQueueHealth(ctx)
}

func (b *downBackend) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	if b.down.Load() {
		return nil, errDBDown
	}
	return b.Backend.JobCounts(ctx)
}

func header(m *Model) string {
	return strings.SplitN(ansi.Strip(m.View().Content), "\n", 2)[0]
}

// A database that cannot be reached sends the watch no change, so the
// console looked live while every figure on it grew old (PostgreSQL behind
// a cut: the header said nothing, the events view "● following"). The
// periodic reads tell: the header says OFFLINE and how old the figures
// are, the live marks say they are not updating, and the first read that
// succeeds says the database is back.
func TestDatabaseUnreachableIsShown(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	b := &downBackend{Backend: e.backend()}
	m := New(Options{Backend: b, ServerURL: "http://127.0.0.1:7070"})
	m.Update(tickMsg{now: e.clock.Now()})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	run := func(cmd func() tea.Cmd) {
		for _, msg := range exec(cmd(), 10*time.Second) {
			m.Update(msg)
		}
	}
	tick := func(d time.Duration) { m.Update(tickMsg{now: e.clock.Now().Add(d)}) }
	tick(0)
	run(m.loadQueues)
	do(m, "4")
	if h := header(m); strings.Contains(h, "OFFLINE") {
		t.Fatalf("the database answers, yet the header says OFFLINE:\n%s", h)
	}

	b.down.Store(true)
	tick(5 * time.Second)
	run(m.loadQueues)
	tick(40 * time.Second)
	view := ansi.Strip(m.View().Content)
	if h := header(m); !strings.Contains(h, "OFFLINE") || !strings.Contains(h, "database unreachable · figures 40s old") {
		t.Errorf("the header does not say the database is unreachable, nor how old the figures are:\n%s", h)
	}
	if strings.Contains(view, "● following") || !strings.Contains(view, offlineMark) {
		t.Errorf("the events view still says it follows:\n%s", view)
	}

	b.down.Store(false)
	run(m.loadQueues)
	view = ansi.Strip(m.View().Content)
	if h := header(m); strings.Contains(h, "OFFLINE") {
		t.Errorf("the database answers again, yet the header says OFFLINE:\n%s", h)
	}
	if !strings.Contains(view, "the database answers again after 40s") || !strings.Contains(view, "● following") {
		t.Errorf("the console does not say the database is back:\n%s", view)
	}
}

// A cut that drops packets answers nothing, not even an error: a periodic
// read left unanswered for storeStallAfter says the database is not
// answering.
func TestDatabaseNotAnsweringIsShown(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	now := e.clock.Now()
	m.Update(tickMsg{now: now})
	for _, msg := range exec(m.loadQueues(), 10*time.Second) {
		m.Update(msg)
	}
	_ = m.loadQueues() // asked, never answered
	m.Update(tickMsg{now: now.Add(storeStallAfter - time.Second)})
	if h := header(m); strings.Contains(h, "OFFLINE") {
		t.Fatalf("a read under way for %v is not a lost database:\n%s", storeStallAfter-time.Second, h)
	}
	m.Update(tickMsg{now: now.Add(storeStallAfter)})
	if h := header(m); !strings.Contains(h, "OFFLINE") || !strings.Contains(h, fmt.Sprintf("database not answering · figures %s old", humanDuration(storeStallAfter))) {
		t.Errorf("the header does not say the database is not answering:\n%s", h)
	}
}

// An action that timed out may have been done all the same: it says so,
// not "internal error".
func TestActionTimeoutSaysItMayHaveBeenDone(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	m.Update(actionDoneMsg{id: 1, label: "cancel j-1", outcome: outcome{err: fmt.Errorf("cancel: %w", context.DeadlineExceeded)}})
	view := ansi.Strip(m.View().Content)
	if strings.Contains(view, "internal error") || !strings.Contains(view, "not answering") || !strings.Contains(view, "may have been done") {
		t.Errorf("a timed-out action's outcome:\n%s", view)
	}
}

// With the server gone, the counters' read fails every few seconds: its
// error replaced the outcome of what the person had just done ("cancel …
// failed: the server is unreachable") within 3s, before it could be read.
// An action's outcome now stays while it is shown; the repeated failure
// shows once it has gone.
func TestBackgroundErrorKeepsActionOutcome(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	m.Update(actionDoneMsg{id: 1, label: "cancel j-1", outcome: outcome{err: errDBDown}})
	pump(m, bgFailed("could not count jobs: the database cannot be reached; try again"))
	m.Update(countsMsg{err: errDBDown})
	if !strings.HasPrefix(m.status, "cancel j-1 failed") {
		t.Fatalf("the action's outcome was replaced by %q", m.status)
	}
	e.at(time.Hour) // past its showing
	m.Update(tickMsg{now: e.clock.Now()})
	pump(m, bgFailed("could not count jobs: the database cannot be reached; try again"))
	if !strings.HasPrefix(m.status, "could not count jobs") {
		t.Errorf("once the outcome is gone the failure does not show: %q", m.status)
	}
}
