package tui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"
)

// The root model's side of the live feed: the watch started, restarted
// and applied to every screen (feed.go buffers it between frames).

// feedStarted: the watch runs; the cluster list follows (maybeLoadFleet).
func (m *Model) feedStarted(msg feedStartedMsg) tea.Cmd {
	if msg.feed != m.feed {
		return nil
	}
	if msg.err != nil {
		return m.watchStarted(watchStartedMsg{feed: msg.feed, err: msg.err})
	}
	m.feedReady = true
	return nil
}

func (m *Model) watchStarted(msg watchStartedMsg) tea.Cmd {
	if msg.feed != m.feed {
		return nil
	}
	if msg.err != nil {
		m.watchErr = msg.err
		m.setStatus(statusErr, "live updates unavailable: "+errText(msg.err)+"; retrying in 5s")
		return tea.Tick(5*time.Second, func(time.Time) tea.Msg { return restartWatchMsg{} })
	}
	if m.watchErr != nil {
		m.setStatus(statusOK, "live updates reconnected")
	}
	m.watchErr = nil
	m.ctx.Fleet.setClusters(msg.clusters)
	ids := make([]string, 0, len(msg.clusters))
	for _, c := range msg.clusters {
		ids = append(ids, c.ID)
	}
	cmds := []tea.Cmd{m.feed.wait(), loadCredentials(m.ctx.Backend, ids), m.broadcast(msg)}
	if !m.queues.busy && !m.ctx.Fleet.queuesLoaded {
		// Queue health lists the fleet and reads every busy cluster's
		// queue: its first read waits for the list, as the list waits for
		// the first screen.
		cmds = append(cmds, m.loadQueues())
	}
	return tea.Batch(cmds...)
}

// restartWatch starts over after the watch ended: a new feed, the cluster
// list and the counters read again.
func (m *Model) restartWatch() tea.Cmd {
	if m.feed != nil {
		m.feed.stop()
	}
	m.feed = newFeed(m.opts.Context)
	m.feedReady, m.listAsked = false, false
	return tea.Batch(startWatch(m.ctx.Backend, m.feed), m.loadCounts())
}

func (m *Model) applyFeed(msg feedMsg) tea.Cmd {
	if msg.feed != m.feed {
		return nil
	}
	b := &msg.batch
	f := m.ctx.Fleet
	reorder := len(b.Deleted) > 0
	for _, c := range b.Clusters {
		if f.upsert(c) {
			reorder = true
		}
	}
	for _, id := range b.Deleted {
		f.remove(id)
	}
	if reorder {
		f.resort()
	}
	for _, c := range b.Credentials {
		f.upsertCredential(c)
	}
	for _, t := range b.Tokens {
		f.upsertToken(t)
	}
	cmds := []tea.Cmd{m.broadcast(msg)}
	if len(b.Jobs) > 0 || len(b.Deleted) > 0 || len(b.DeletedJobs) > 0 {
		cmds = append(cmds, m.countsLater())
	}
	switch {
	case b.Reset:
		m.setStatus(statusInfo, "the console fell behind the change feed; reloading")
		cmds = append(cmds, m.restartWatch(), m.jobs.requery())
	case b.Closed:
		if m.opts.Context.Err() == nil {
			m.watchErr = fmt.Errorf("the watch ended")
			m.setStatus(statusErr, "live updates stopped; reconnecting in 5s")
			cmds = append(cmds, tea.Tick(5*time.Second, func(time.Time) tea.Msg { return restartWatchMsg{} }))
		}
	default:
		cmds = append(cmds, m.feed.next())
	}
	return tea.Batch(cmds...)
}
