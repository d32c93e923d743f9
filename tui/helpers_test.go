package tui

import (
	"sync"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// newModel is a console over e's registry, sized 120x40, not started (no
// watch, no ticks): unit tests feed it the messages they need.
func newModel(tb testing.TB, e *env, readOnly bool) *Model {
	tb.Helper()
	m := New(Options{Backend: e.backend(), Theme: themes.Choice{Theme: themes.Dark()}, ReadOnly: readOnly, ServerURL: "http://127.0.0.1:7070"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return m
}

// exec runs cmd and returns the messages it produces, running the commands
// of a batch concurrently. A command that has not answered within wait
// (a timer, a watch waiting for changes) is left behind.
func exec(cmd tea.Cmd, wait time.Duration) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(wait):
		return nil
	}
	batch, ok := msg.(tea.BatchMsg)
	if !ok {
		if msg == nil {
			return nil
		}
		return []tea.Msg{msg}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var out []tea.Msg
	for _, c := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := exec(c, wait)
			mu.Lock()
			out = append(out, msgs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// find returns the first message of type T.
func find[T tea.Msg](msgs []tea.Msg) (T, bool) {
	for _, m := range msgs {
		if t, ok := m.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// load feeds the console what its start would (without the watch): the
// clusters, the counters, the credentials, a first page of jobs, the events
// and the audit trail.
func load(tb testing.TB, m *Model, e *env) {
	tb.Helper()
	m.ctx.Fleet.setClusters(must(m.ctx.Backend.ListClusters(e.admin, registry.ClusterListParams{})))
	for _, cmd := range []tea.Cmd{m.loadCounts(), loadCredentials(m.ctx.Backend, clusterIDs(m)), m.jobs.load(0), m.jobs.countCmd(), m.events.Init(), m.audit.Init()} {
		for _, msg := range exec(cmd, 10*time.Second) {
			m.Update(msg)
		}
	}
}

func clusterIDs(m *Model) []string {
	var ids []string
	for _, c := range m.ctx.Fleet.sorted {
		ids = append(ids, c.ID)
	}
	return ids
}

// pump feeds the messages of cmd to the model, then those of the commands
// it returns, for a few rounds: enough for an action to run and report, a
// detail to load, a confirmation to open. Clock and spinner ticks are not
// fed (they would re-arm forever).
func pump(m *Model, cmd tea.Cmd) {
	for range 6 {
		var next []tea.Cmd
		for _, msg := range exec(cmd, 3*time.Second) {
			switch msg.(type) {
			case spinner.TickMsg, tickMsg, feedTickMsg, feedMsg:
				continue
			}
			_, c := m.Update(msg)
			next = append(next, c)
		}
		if len(next) == 0 {
			return
		}
		cmd = tea.Batch(next...)
	}
}

// settleCounts waits for the jobs view's tab counts when pump gave up on
// them: pump drops a command still running after 3 s (it cannot tell work
// from a timer), and on a loaded machine a count over a fleet can take that
// long, leaving the counts unknown (-1) for good. Counting is work, never a
// timer, so it is run again here with a minute to answer.
func settleCounts(m *Model) {
	if !m.jobs.counting {
		return
	}
	m.jobs.counting = false
	for _, msg := range exec(m.jobs.countCmd(), time.Minute) {
		_, cmd := m.Update(msg)
		pump(m, cmd)
	}
}

// do presses keys and pumps what they start.
func do(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		pump(m, cmd)
	}
}

func press(m *Model, keys ...string) tea.Cmd {
	var cmds []tea.Cmd
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}
