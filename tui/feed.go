package tui

import (
	"context"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// frameInterval is how often live changes are applied: at most 20 redraws a
// second however fast the change feed moves.
const frameInterval = 50 * time.Millisecond

// Bounds of the live buffers between two frames. Clusters and jobs coalesce
// by id (the newest version wins), so they need no bound; events and audit
// entries are a tail, and what does not fit is dropped and counted.
const (
	feedEventBuffer = 1000
	feedAuditBuffer = 1000
)

// feed drains a registry watch into a coalescing buffer that the console
// reads once per frame, so that a burst of changes costs one redraw. The
// watch goroutine never waits for the UI: a slow UI must not hold back the
// registry's watcher.
type feed struct {
	mu       sync.Mutex
	clusters map[string]*registry.Cluster
	deleted  map[string]bool
	jobs     map[string]*registry.Job
	// deletedJobs are finished jobs deleted one by one (retention's
	// deletes are not fed).
	deletedJobs map[string]bool
	tokens      map[string]*registry.RegistrationToken
	creds       map[string]*registry.Credential
	rollouts    map[string]*registry.Rollout
	events      []registry.Event
	audit       []registry.AuditEntry
	dropEv      int
	dropAu      int
	reset       bool
	closed      bool
	ready       chan struct{} // holds one wake-up when there is something to read
	cancel      context.CancelFunc
	ctx         context.Context
	finished    chan struct{}
}

// feedBatch is what changed since the previous frame.
type feedBatch struct {
	Clusters      []*registry.Cluster
	Deleted       []string // cluster ids; everything they owned went with them
	Jobs          []*registry.Job
	DeletedJobs   []string // ids of finished jobs deleted one by one
	Tokens        []*registry.RegistrationToken
	Credentials   []*registry.Credential
	Rollouts      []*registry.Rollout
	Events        []registry.Event      // oldest first
	Audit         []registry.AuditEntry // oldest first
	DroppedEvents int
	DroppedAudit  int
	// Reset: the watch fell behind the feed's retention; reload everything.
	Reset bool
	// Closed: the watch ended (the registry closed, or Reset).
	Closed bool
}

func (b *feedBatch) empty() bool {
	return len(b.Clusters) == 0 && len(b.Deleted) == 0 && len(b.Jobs) == 0 && len(b.DeletedJobs) == 0 && len(b.Tokens) == 0 &&
		len(b.Credentials) == 0 && len(b.Rollouts) == 0 && len(b.Events) == 0 && len(b.Audit) == 0 && b.DroppedEvents == 0 &&
		b.DroppedAudit == 0 && !b.Reset && !b.Closed
}

func newFeed(parent context.Context) *feed {
	ctx, cancel := context.WithCancel(parent)
	return &feed{
		clusters: map[string]*registry.Cluster{}, deleted: map[string]bool{}, jobs: map[string]*registry.Job{}, deletedJobs: map[string]bool{}, rollouts: map[string]*registry.Rollout{},
		tokens: map[string]*registry.RegistrationToken{}, creds: map[string]*registry.Credential{},
		ready: make(chan struct{}, 1), ctx: ctx, cancel: cancel, finished: make(chan struct{}),
	}
}

// stop ends the watch.
func (f *feed) stop() { f.cancel() }

// pump reads the watch until it ends.
func (f *feed) pump(ch <-chan registry.WatchEvent) {
	defer close(f.finished)
	for ev := range ch {
		if f.add(ev) {
			f.cancel() // a reset: this watch is done; the console starts a new one
		}
	}
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.wake()
}

func (f *feed) wake() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// add buffers one watch event; it reports a reset.
func (f *feed) add(ev registry.WatchEvent) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch ev.Type {
	case registry.WatchEndOfSnapshot:
		return false
	case registry.WatchReset:
		f.reset = true
		f.wake()
		return true
	case registry.WatchDelete:
		if ev.Kind == registry.EntityJob {
			f.deletedJobs[ev.ID] = true
			delete(f.jobs, ev.ID)
		}
		if ev.Kind == registry.EntityCluster {
			f.deleted[ev.ID] = true
			delete(f.clusters, ev.ID)
			for id, j := range f.jobs {
				if j.ClusterID == ev.ID {
					delete(f.jobs, id)
				}
			}
		}
	case registry.WatchUpsert:
		switch {
		case ev.Cluster != nil:
			if !f.deleted[ev.Cluster.ID] {
				f.clusters[ev.Cluster.ID] = ev.Cluster
			}
		case ev.Job != nil:
			f.jobs[ev.Job.ID] = ev.Job
		case ev.Token != nil:
			f.tokens[ev.Token.ID] = ev.Token
		case ev.Credential != nil:
			f.creds[ev.Credential.ID] = ev.Credential
		case ev.Rollout != nil:
			f.rollouts[ev.Rollout.ID] = ev.Rollout
		case ev.Event != nil:
			if len(f.events) >= feedEventBuffer {
				f.dropEv++
			} else {
				f.events = append(f.events, *ev.Event)
			}
		case ev.Audit != nil:
			if len(f.audit) >= feedAuditBuffer {
				f.dropAu++
			} else {
				f.audit = append(f.audit, *ev.Audit)
			}
		}
	}
	f.wake()
	return false
}

// drain takes everything buffered.
func (f *feed) drain() feedBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b feedBatch
	for _, c := range f.clusters {
		b.Clusters = append(b.Clusters, c)
	}
	for id := range f.deleted {
		b.Deleted = append(b.Deleted, id)
	}
	for _, j := range f.jobs {
		b.Jobs = append(b.Jobs, j)
	}
	for id := range f.deletedJobs {
		b.DeletedJobs = append(b.DeletedJobs, id)
	}
	for _, t := range f.tokens {
		b.Tokens = append(b.Tokens, t)
	}
	for _, c := range f.creds {
		b.Credentials = append(b.Credentials, c)
	}
	for _, r := range f.rollouts {
		b.Rollouts = append(b.Rollouts, r)
	}
	b.Events, b.Audit = f.events, f.audit
	b.DroppedEvents, b.DroppedAudit = f.dropEv, f.dropAu
	b.Reset, b.Closed = f.reset, f.closed
	clear(f.clusters)
	clear(f.deleted)
	clear(f.jobs)
	clear(f.deletedJobs)
	clear(f.tokens)
	clear(f.creds)
	clear(f.rollouts)
	f.events, f.audit = nil, nil
	f.dropEv, f.dropAu = 0, 0
	return b
}

// feedMsg carries one frame's worth of changes.
type feedMsg struct {
	feed  *feed
	batch feedBatch
}

// feedTickMsg says the frame interval passed: time to wait for the next
// batch.
type feedTickMsg struct{ feed *feed }

// wait returns the next batch once there is one.
func (f *feed) wait() tea.Cmd {
	return func() tea.Msg {
		for {
			select {
			case <-f.ready:
			case <-f.finished:
				// Drain what is left, then report the end.
			}
			b := f.drain()
			if !b.empty() {
				return feedMsg{feed: f, batch: b}
			}
			select {
			case <-f.finished:
				return feedMsg{feed: f, batch: feedBatch{Closed: true}}
			default:
			}
		}
	}
}

// next schedules the next wait one frame from now.
func (f *feed) next() tea.Cmd {
	return tea.Tick(frameInterval, func(time.Time) tea.Msg { return feedTickMsg{feed: f} })
}

// watchStartedMsg: the cluster list, read after the watch started from a
// position before it (loadFleetList).
type watchStartedMsg struct {
	feed     *feed
	clusters []registry.Cluster
	err      error
}

// feedStartedMsg: a running watch, not yet read from (the console reads it
// once the cluster list is in, so that no change is applied to a list that
// is not there yet).
type feedStartedMsg struct {
	feed *feed
	err  error
}

// startWatch reads the feed position, then watches from it; the cluster
// list is read afterwards (loadFleetList), so that nothing committed after
// the list is missed (a change may arrive twice; upserts are idempotent).
// Jobs are not snapshotted: the jobs views query pages; the feed only
// updates them.
//
// The list waits for the first screen's own reads (the model asks for it
// once the jobs page and the counts are in): over a fleet of 50,000
// clusters it is the largest read the console makes, and read beside them
// it took the CPU the first frame needed. The rows' clusters come with
// their page meanwhile (jobsPageMsg.clusters).
func startWatch(b Backend, f *feed) tea.Cmd {
	return func() tea.Msg {
		seq, err := b.LatestSeq(f.ctx)
		if err != nil {
			return feedStartedMsg{feed: f, err: err}
		}
		ch, err := b.Watch(f.ctx, registry.WatchParams{Since: seq, Buffer: 1024})
		if err != nil {
			return feedStartedMsg{feed: f, err: err}
		}
		go f.pump(ch)
		return feedStartedMsg{feed: f}
	}
}

// loadFleetList reads the cluster list for a watch that runs.
func loadFleetList(b Backend, f *feed) tea.Cmd {
	return func() tea.Msg {
		clusters, err := b.ListClusters(f.ctx, registry.ClusterListParams{})
		if err != nil {
			return watchStartedMsg{feed: f, err: err}
		}
		return watchStartedMsg{feed: f, clusters: clusters}
	}
}
