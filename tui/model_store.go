package tui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// Whether the database answers, as the console can tell from the reads it
// repeats by itself: the fleet's queue health (every queuesEvery) and the
// job counters. The watch cannot tell: it waits for the next change, and a
// database that cannot be reached (PostgreSQL down, a network cut) sends
// none, so the screen would look live while every figure on it grows old.
// When one of those reads fails because the database cannot be reached, or
// has not answered for storeStallAfter (a cut that drops packets answers
// nothing, not even an error), the header says OFFLINE and how old the
// figures are (since the last read that succeeded), and the views' live
// marks say they are not updating. The first read that succeeds again says
// how long it lasted and reads the counters again.

// storeStallAfter is how long a periodic read may go unanswered before the
// console says the database is not answering. Queue health over 50,000
// clusters took 3-8 s before it was made lighter (docs/performance.md); a
// read four times later than that is not slow, it is lost.
const storeStallAfter = 30 * time.Second

// storeReadTimeout bounds a periodic read, so that one lost with its
// connection does not hold the next back for good.
const storeReadTimeout = 2 * time.Minute

type storeHealth struct {
	okAt    time.Time // the last periodic read that succeeded (the console's clock)
	askedAt time.Time // the queue-health read under way started; zero: none
	lostAt  time.Time // zero: the database answers
	stalled bool      // lost because a read went unanswered, not because it failed
}

// storeLost reports whether err says the database (or, over the admin API,
// the server's) cannot serve now: a failure that passes once its cause is
// gone, not a refusal or a bug.
func storeLost(err error) bool {
	return err != nil && (registry.ErrorCode(err) == registry.CodeUnavailable || errors.Is(err, context.DeadlineExceeded))
}

// storeRead records the outcome of a periodic read.
func (m *Model) storeRead(err error) tea.Cmd {
	h := &m.storeHealth
	now := m.ctx.Now
	switch {
	case err == nil:
		if h.lostAt.IsZero() {
			h.okAt = now
			return nil
		}
		since := h.lostAt
		if !h.okAt.IsZero() {
			since = h.okAt // the figures were that old
		}
		lost := roundDuration(max(now.Sub(since), 0))
		h.okAt, h.lostAt, h.stalled = now, time.Time{}, false
		m.ctx.Offline = m.offline()
		m.setStatus(statusOK, "the database answers again after "+humanDuration(lost)+"; figures read again")
		var cmds []tea.Cmd
		if !m.countsBusy {
			cmds = append(cmds, m.loadCounts())
		}
		if m.jobs.loaded {
			cmds = append(cmds, m.jobs.markDirty(), m.jobs.countLater())
		}
		return tea.Batch(cmds...)
	case storeLost(err):
		if h.lostAt.IsZero() {
			h.lostAt = now
		}
		h.stalled = false
		m.ctx.Offline = true
	}
	return nil
}

// storeCheck, at each tick, notices a periodic read left unanswered.
func (m *Model) storeCheck() {
	h := &m.storeHealth
	if !h.askedAt.IsZero() && m.ctx.Now.Sub(h.askedAt) >= storeStallAfter && h.lostAt.IsZero() {
		h.lostAt, h.stalled = m.ctx.Now, true
		m.ctx.Offline = true
	}
}

// storeHeader is the header's words for a database that does not answer
// (empty while it does): what is wrong and how old the figures shown are.
func (m *Model) storeHeader() string {
	h := m.storeHealth
	if h.lostAt.IsZero() {
		return ""
	}
	text := "database unreachable"
	if h.stalled {
		text = "database not answering"
	}
	since := h.okAt
	if since.IsZero() {
		since = h.lostAt
	}
	return text + " · figures " + humanDuration(roundDuration(max(m.ctx.Now.Sub(since), 0))) + " old"
}

// loadQueues starts the fleet's queue-health read, timed for storeCheck.
func (m *Model) loadQueues() tea.Cmd {
	m.storeHealth.askedAt = m.ctx.Now
	return m.queues.load(m.ctx.Backend)
}

// offline: the views' data may be out of date (their live marks say so).
func (m *Model) offline() bool {
	return m.watchErr != nil || !m.conn.LostAt.IsZero() || !m.storeHealth.lostAt.IsZero()
}
