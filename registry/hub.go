package registry

import (
	"context"
	"sync"
	"time"
)

// hub follows the store's change feed in one goroutine and fans it out:
// per-cluster wake-ups for held long-polls (a map lookup per change, no work
// per idle waiter), and a broadcast for watchers, who each read the feed from
// their own position. It starts on first use.
type hub struct {
	store Store

	mu       sync.Mutex
	started  bool
	closed   bool
	stop     context.CancelFunc
	done     chan struct{}
	last     int64
	advanced chan struct{} // closed and replaced whenever last moves
	// admins is closed and replaced whenever a change may have revoked an
	// admin token (as the cache evicts them: an audit entry of no cluster),
	// so that requests held by one look at it again (WhileAdminTokenWorks).
	admins    chan struct{}
	waiters   map[string][]*waiter // per cluster: usually one poll, a slice is the cheapest set
	followErr error
	// notifierErr is set while the store's notifier is down and restarting:
	// changes may then go unnoticed.
	notifierErr error
	// evict, when set, is told of every change (the record cache).
	evict func(Change)
}

const (
	feedBatch        = 1000
	feedRetryBackoff = 500 * time.Millisecond
)

func newHub(store Store) *hub {
	return &hub{store: store, advanced: make(chan struct{}), admins: make(chan struct{}), waiters: map[string][]*waiter{}}
}

// waiter is one subscription to a cluster's wake-ups: a channel that holds
// one pending wake-up, or a function called with the hub's lock held.
type waiter struct {
	ch chan struct{}
	fn func()
}

func (w *waiter) wake() {
	if w.fn != nil {
		w.fn()
		return
	}
	select {
	case w.ch <- struct{}{}:
	default: // already has a wake-up pending
	}
}

// start begins following the feed from its current end.
func (h *hub) start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return Errorf(CodeUnavailable, "registry is closed")
	}
	if h.started {
		return nil
	}
	latest, _, err := h.store.ChangesLatest(context.Background())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.started, h.stop, h.done, h.last = true, cancel, make(chan struct{}), latest
	go h.follow(ctx)
	return nil
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	started := h.started
	if started {
		h.stop()
	}
	h.mu.Unlock()
	if started {
		<-h.done
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.advanced) // release watchers; they see closed and stop
	close(h.admins)
	for _, set := range h.waiters {
		for _, w := range set {
			w.wake()
		}
	}
}

func (h *hub) follow(ctx context.Context) {
	defer close(h.done)
	signal := make(chan struct{}, 1)
	// The notifier holds a connection of the store: wait for it to let go
	// before reporting the hub stopped, so that closing the store after the
	// registry finds nothing of ours still open.
	notifying := make(chan struct{})
	go func() {
		defer close(notifying)
		h.notify(ctx, signal)
	}()
	defer func() { <-notifying }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-signal:
		}
		for {
			changes, err := h.store.ChangesSince(ctx, h.position(), feedBatch)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				h.mu.Lock()
				h.followErr = err
				h.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-time.After(feedRetryBackoff):
				}
				continue
			}
			if len(changes) == 0 {
				break
			}
			h.dispatch(changes)
			if len(changes) < feedBatch {
				break
			}
		}
	}
}

// notify keeps the store's change notifier running: if it stops (a lost
// connection, a read error), the hub reports itself not following (so caches
// stop trusting it) and starts it again after a pause. A restarted notifier
// signals once it listens, and the follower then catches up from where it was.
func (h *hub) notify(ctx context.Context, signal chan<- struct{}) {
	for {
		err := h.store.NotifyChanges(ctx, signal)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = Errorf(CodeUnavailable, "change notifier stopped")
		}
		h.mu.Lock()
		h.notifierErr = err
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(feedRetryBackoff):
		}
		h.mu.Lock()
		h.notifierErr = nil
		h.mu.Unlock()
	}
}

func (h *hub) position() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// following reports whether the hub is following the feed without error:
// only then can caches trust it to evict stale entries.
func (h *hub) following() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started && !h.closed && h.followErr == nil && h.notifierErr == nil
}

// positionIfFollowing returns the hub's position and whether it is following.
func (h *hub) positionIfFollowing() (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last, h.started && !h.closed && h.followErr == nil && h.notifierErr == nil
}

// ifFollowing runs fn if the hub is still following, holding the hub's lock
// so that no dispatch (and so no eviction) can come between the check and
// fn: the record cache then checks that no change to what it read was
// dispatched since the read began (recordCache.changedSince).
func (h *hub) ifFollowing(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started && !h.closed && h.followErr == nil && h.notifierErr == nil {
		fn()
	}
}

func (h *hub) dispatch(changes []Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.followErr = nil
	admins := false
	for _, c := range changes {
		if h.evict != nil {
			h.evict(c) // before the wake-ups: a woken reader must not find the stale entry
		}
		if c.Kind == EntityAudit && c.ClusterID == "" {
			admins = true
		}
		if c.Kind == EntityJob && c.JobState == JobQueued {
			h.wakeLocked(c.ClusterID)
		}
		if c.Kind == EntityCluster && c.Op != OpStatus {
			// Enabling or disabling a cluster, or deleting it, matters to its
			// held polls too: let them look again (a heartbeat does not).
			h.wakeLocked(c.ClusterID)
		}
		if c.Kind == EntityCredential {
			// A credential revoked, superseded or cut short: its held polls
			// check it again now (a woken poll re-authenticates), so that a
			// revoked one is answered 401 at once rather than an empty 200
			// at the end of its wait. Credentials change rarely (register,
			// rotate, revoke), so the extra looks cost nothing.
			h.wakeLocked(c.ClusterID)
		}
	}
	h.last = changes[len(changes)-1].Seq
	close(h.advanced)
	h.advanced = make(chan struct{})
	if admins {
		close(h.admins)
		h.admins = make(chan struct{})
	}
}

// adminTokensChanged returns a channel closed once the hub dispatches a
// change that may have revoked an admin token, and false if the hub is
// closed (or cannot start).
func (h *hub) adminTokensChanged() (<-chan struct{}, bool) {
	if h.start() != nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	return h.admins, true
}

func (h *hub) wakeLocked(clusterID string) {
	for _, w := range h.waiters[clusterID] {
		w.wake()
	}
}

// subscribe registers a waiter for jobs queued on clusterID.
func (h *hub) subscribe(clusterID string) (<-chan struct{}, func(), error) {
	w := &waiter{ch: make(chan struct{}, 1)}
	unsubscribe, err := h.add(clusterID, w)
	if err != nil {
		return nil, nil, err
	}
	return w.ch, unsubscribe, nil
}

// add registers w for clusterID's wake-ups and returns what removes it.
func (h *hub) add(clusterID string, w *waiter) (func(), error) {
	if err := h.start(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, Errorf(CodeUnavailable, "registry is closed")
	}
	h.waiters[clusterID] = append(h.waiters[clusterID], w)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		set := h.waiters[clusterID]
		for i, c := range set {
			if c == w {
				set[i] = set[len(set)-1]
				set[len(set)-1] = nil
				set = set[:len(set)-1]
				break
			}
		}
		if len(set) == 0 {
			delete(h.waiters, clusterID)
		} else {
			h.waiters[clusterID] = set
		}
	}, nil
}

// waitPast returns a channel closed once the feed moves past seq (at
// once if it already has), and whether the hub is closed.
func (h *hub) waitPast(seq int64) (<-chan struct{}, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	if h.last > seq {
		ch := make(chan struct{})
		close(ch)
		return ch, true
	}
	return h.advanced, true
}

// SubscribeJobs returns a channel that receives a value whenever a job may
// have been queued for the cluster (or the cluster itself changed), and a
// function that ends the subscription. Subscribe before looking for jobs, so
// that a job queued in between is not missed.
func (r *Registry) SubscribeJobs(clusterID string) (<-chan struct{}, func(), error) {
	return r.hub.subscribe(clusterID)
}

// SubscribeJobsFunc is SubscribeJobs with a function instead of a channel:
// fn is called whenever a job may have been queued for the cluster (or the
// cluster changed), and when the registry closes. It runs with the hub's
// lock held, in the goroutine that follows the store's feed: it must return
// at once, without calling the registry (note the wake-up, let another
// goroutine act on it). A waiter that needs no goroutine of its own while
// it waits (a parked long-poll) subscribes this way.
func (r *Registry) SubscribeJobsFunc(clusterID string, fn func()) (func(), error) {
	return r.hub.add(clusterID, &waiter{fn: fn})
}

// Waiting returns how many long-polls are subscribed, for metrics.
func (r *Registry) Waiting() int {
	r.hub.mu.Lock()
	defer r.hub.mu.Unlock()
	n := 0
	for _, set := range r.hub.waiters {
		n += len(set)
	}
	return n
}
