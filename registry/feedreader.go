package registry

import (
	"context"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"
)

// feedReader shares the store reads of this process's watchers. A change
// wakes every watcher at once, and each would read the same feed page, the
// same prune position and the same records: with a hundred watchers, a
// hundred reads of each. Watchers at the same position join one read in
// flight, and a record loaded for a change is kept (by the change's
// sequence number) for the watchers that come to it later. A record loaded
// after its change committed is at least as new as the change, so sharing it
// keeps the watch's promise; a newer change brings a newer load.
type feedReader struct {
	store Store
	reads singleflight.Group

	mu      sync.Mutex
	loaded  map[int64]loadedEntity
	order   []int64 // sequence numbers in loading order, for eviction
	maxKept int
	// pages keeps recent non-empty pages by their start: a page read once is
	// a correct answer for every watcher at that position (it holds what had
	// committed when it was read; what came later, the next page brings).
	// Empty pages are never kept: a watcher woken by a new change must see it.
	pages     map[string]feedPage
	pageOrder []string
}

// keptPages is how many recent pages feedReader keeps.
const keptPages = 64

// loadedEntity is a change's record as loaded, or that it no longer exists.
type loadedEntity struct {
	ev      WatchEvent
	missing bool
}

// feedPage is one read of the feed: the changes after a position and the
// oldest position still kept, read after them (see watch).
type feedPage struct {
	changes []Change
	oldest  int64
}

func newFeedReader(store Store) *feedReader {
	return &feedReader{store: store, loaded: map[int64]loadedEntity{}, maxKept: 4096, pages: map[string]feedPage{}}
}

// shared runs read once for every caller asking for key while it runs. It
// runs detached from the caller that started it, so that one watcher going
// away does not fail the others waiting on the same read.
func shared[T any](ctx context.Context, f *feedReader, key string, read func(context.Context) (T, error)) (T, error) {
	ch := f.reads.DoChan(key, func() (any, error) {
		return read(context.WithoutCancel(ctx))
	})
	select {
	case res := <-ch:
		v, _ := res.Val.(T)
		return v, res.Err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// page reads the changes after cursor, then the oldest kept position.
func (f *feedReader) page(ctx context.Context, cursor int64, limit int) (feedPage, error) {
	key := "page:" + strconv.FormatInt(cursor, 10) + ":" + strconv.Itoa(limit)
	f.mu.Lock()
	p, ok := f.pages[key]
	f.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := shared(ctx, f, key, func(ctx context.Context) (feedPage, error) {
		changes, err := f.store.ChangesSince(ctx, cursor, limit)
		if err != nil {
			return feedPage{}, err
		}
		_, oldest, err := f.store.ChangesLatest(ctx)
		return feedPage{changes: changes, oldest: oldest}, err
	})
	if err == nil && len(p.changes) > 0 {
		f.mu.Lock()
		if _, ok := f.pages[key]; !ok {
			f.pages[key] = p
			f.pageOrder = append(f.pageOrder, key)
			if len(f.pageOrder) > keptPages {
				delete(f.pages, f.pageOrder[0])
				f.pageOrder = f.pageOrder[1:]
			}
		}
		f.mu.Unlock()
	}
	return p, err
}

// entity returns the record of change c, loaded once for every watcher.
// The event's records are the caller's own copies.
func (f *feedReader) entity(ctx context.Context, c Change, load func(context.Context, Change) (WatchEvent, error)) (WatchEvent, bool, error) {
	f.mu.Lock()
	got, ok := f.loaded[c.Seq]
	f.mu.Unlock()
	if !ok {
		var err error
		got, err = shared(ctx, f, "entity:"+strconv.FormatInt(c.Seq, 10), func(ctx context.Context) (loadedEntity, error) {
			ev, err := load(ctx, c)
			if ErrorCode(err) == CodeNotFound {
				return loadedEntity{missing: true}, nil
			}
			if err != nil {
				return loadedEntity{}, err
			}
			return loadedEntity{ev: ev}, nil
		})
		if err != nil {
			return WatchEvent{}, false, err
		}
		f.keep(c.Seq, got)
	}
	return got.ev.copy(), !got.missing, nil
}

func (f *feedReader) keep(seq int64, e loadedEntity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.loaded[seq]; ok {
		return
	}
	f.loaded[seq] = e
	f.order = append(f.order, seq)
	if len(f.order) > f.maxKept {
		drop := f.order[:len(f.order)-f.maxKept]
		for _, s := range drop {
			delete(f.loaded, s)
		}
		f.order = append(f.order[:0], f.order[len(drop):]...)
	}
}

// copy gives a watcher its own records: consumers may keep and change what
// they receive.
func (ev WatchEvent) copy() WatchEvent {
	if ev.Cluster != nil {
		c := *ev.Cluster
		ev.Cluster = &c
	}
	if ev.Job != nil {
		j := *ev.Job
		ev.Job = &j
	}
	if ev.Event != nil {
		e := *ev.Event
		ev.Event = &e
	}
	if ev.Audit != nil {
		a := *ev.Audit
		ev.Audit = &a
	}
	if ev.Token != nil {
		t := *ev.Token
		ev.Token = &t
	}
	if ev.Credential != nil {
		c := *ev.Credential
		ev.Credential = &c
	}
	if ev.Rollout != nil {
		ro := *ev.Rollout
		ev.Rollout = &ro
	}
	return ev
}
