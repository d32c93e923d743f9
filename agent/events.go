package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tetherhq/tether/apiclient"
)

// batcher sends events in batches of up to size, or after flush, whichever
// comes first (seed 000). While tether is unreachable it holds up to limit
// events; beyond that it drops the oldest and, once sending works again,
// reports how many with a BufferOverflow event.
type batcher struct {
	client  *apiclient.Client
	size    int
	flush   time.Duration
	limit   int
	log     *slog.Logger
	cluster string

	mu      sync.Mutex
	buf     []apiclient.Event
	dropped int // not yet reported in a BufferOverflow event
	shifted int // events ever dropped from the front of buf
	closed  bool
	kick    chan struct{}
}

func newBatcher(c *apiclient.Client, size int, flush time.Duration, limit int, log *slog.Logger, cluster string) *batcher {
	return &batcher{client: c, size: size, flush: flush, limit: limit, log: log, cluster: cluster, kick: make(chan struct{}, 1)}
}

func (b *batcher) add(e apiclient.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if len(b.buf) >= b.limit {
		b.buf = b.buf[1:]
		b.dropped++
		b.shifted++
	}
	b.buf = append(b.buf, e)
	if len(b.buf) >= b.size {
		b.signal()
	}
}

// sendNow queues e and asks for an immediate flush (heartbeats).
func (b *batcher) sendNow(e apiclient.Event) {
	b.add(e)
	b.mu.Lock()
	b.signal()
	b.mu.Unlock()
}

func (b *batcher) signal() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// run flushes until ctx ends.
func (b *batcher) run(ctx context.Context) {
	t := time.NewTicker(b.flush)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.kick:
		}
		b.drain(ctx)
	}
}

// close stops accepting events.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// drain sends everything buffered, a batch at a time, until the buffer is
// empty or a send fails (the events stay buffered for the next try).
func (b *batcher) drain(ctx context.Context) {
	for {
		b.mu.Lock()
		if b.dropped > 0 && len(b.buf) < b.limit {
			b.buf = append(b.buf, apiclient.Event{
				Kind: apiclient.EventBufferOverflow, ResourceRef: clusterRef(b.cluster), Timestamp: time.Now().UTC(),
				Message: fmt.Sprintf("agent dropped %d events while tether was unreachable", b.dropped),
			})
			b.dropped = 0
		}
		n := min(len(b.buf), b.size)
		batch := append([]apiclient.Event(nil), b.buf[:n]...)
		shiftedBefore := b.shifted
		b.mu.Unlock()
		if n == 0 {
			return
		}
		done := n
		if err := b.client.Events(ctx, batch); err != nil {
			if !malformed(err) {
				if ctx.Err() == nil {
					b.log.Warn("could not send events; keeping them for the next try", "events", n, "err", err)
				}
				return
			}
			// tether refused the batch for a malformed event, which it
			// names: sent again, the batch would be refused forever and hold
			// back every event behind it. One at a time, only the
			// malformed ones are refused, and dropped.
			done = b.sendEach(ctx, batch)
		}
		b.mu.Lock()
		// Overflow may have dropped some of the sent events from the front
		// meanwhile; remove only the sent ones still there.
		sentLeft := max(0, done-(b.shifted-shiftedBefore))
		b.buf = b.buf[min(sentLeft, len(b.buf)):]
		b.mu.Unlock()
		if done < n {
			return
		}
	}
}

// sendEach sends the events of a refused batch one by one, dropping those
// tether refuses, and returns how many from the front it is done with (all,
// unless a send failed otherwise: those are kept for the next try).
func (b *batcher) sendEach(ctx context.Context, batch []apiclient.Event) int {
	for i, e := range batch {
		err := b.client.Events(ctx, []apiclient.Event{e})
		switch {
		case err == nil:
		case malformed(err):
			b.log.Error("tether refused an event as malformed; dropping it", "kind", e.Kind, "eventKey", e.EventKey, "err", err)
		default:
			if ctx.Err() == nil {
				b.log.Warn("could not send events; keeping them for the next try", "events", len(batch)-i, "err", err)
			}
			return i
		}
	}
	return len(batch)
}

// malformed reports whether tether refused events as malformed (400):
// sending them again cannot succeed. (A 401 or 403 may pass: the agent
// registers again, an admin enables the cluster.)
func malformed(err error) bool {
	var apiErr *apiclient.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest
}
