package tui

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// Backoff of the remote console's reconnection: the first retry after half
// a second, each next one twice as late, at most every 15 s.
const (
	reconnectFirst = 500 * time.Millisecond
	reconnectMax   = 15 * time.Second
)

// connState is what the remote console knows of its connection to the
// server: the header shows it, and the live marks follow it.
type connState struct {
	lostAt  time.Time // when the watch broke (server's clock); zero: connected
	retryAt time.Time // the next attempt
	err     error     // why the last attempt failed
	// back: how long the connection was lost, when it came back and no
	// one has said so yet (reconnected takes it).
	back time.Duration
}

// connReporter is a backend that can lose its connection: the remote one.
type connReporter interface {
	connection() connState
	reconnected() (time.Duration, bool)
}

// remoteConn is the Remote's connection state, shared by the watch's
// goroutine (which writes it) and the console's tick (which reads it).
type remoteConn struct {
	mu    sync.Mutex
	state connState
	// after waits between attempts; tests replace it to retry at once.
	after func(time.Duration) <-chan time.Time
}

func (r *Remote) connection() connState {
	r.conn.mu.Lock()
	defer r.conn.mu.Unlock()
	return r.conn.state
}

func (r *Remote) reconnected() (time.Duration, bool) {
	r.conn.mu.Lock()
	defer r.conn.mu.Unlock()
	d := r.conn.state.back
	r.conn.state.back = 0
	return d, d > 0
}

func (r *Remote) setConn(f func(*connState)) {
	r.conn.mu.Lock()
	defer r.conn.mu.Unlock()
	f(&r.conn.state)
}

// Unreachable reports the lost connection as the error of a read that
// failed meanwhile, so that no view presents what it holds as current.
func (r *Remote) unreachable(err error) error {
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		return err
	}
	st := r.connection()
	if st.lostAt.IsZero() {
		return err
	}
	return registry.Errorf(registry.CodeUnavailable, "the server is unreachable (connection lost %s ago); what is shown is from before",
		humanDuration(r.Now().Sub(st.lostAt).Round(time.Second)))
}

// resume keeps a watch going across lost connections: when the stream
// breaks it says so (connState), and reconnects with backoff from the last
// position it delivered, so that no change is lost or repeated. Only a
// refusal that asking again will not change (a 4xx: a revoked token) ends
// it, and then the channel closes.
func (r *Remote) resume(ctx context.Context, opts adminclient.WatchOptions, in <-chan adminclient.WatchEvent, broke *error, out chan<- registry.WatchEvent) {
	defer close(out)
	after := r.conn.after
	if after == nil {
		after = time.After
	}
	since := opts.Since
	for {
		for ev := range in {
			if ev.Seq > 0 && ev.Type != string(registry.WatchReset) {
				since = ev.Seq
			}
			we, err := watchEvent(ev)
			if err != nil {
				continue // an object this console does not know; the next snapshot has the rest
			}
			select {
			case out <- we:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		lostAt := r.Now()
		err := *broke
		delay := reconnectFirst
		for {
			r.setConn(func(s *connState) {
				if s.lostAt.IsZero() {
					s.lostAt = lostAt
				}
				s.retryAt, s.err = r.Now().Add(delay), err
			})
			select {
			case <-ctx.Done():
				return
			case <-after(delay):
			}
			var next error
			opts.Since = since
			opts.OnError = func(err error) { next = err }
			broke = &next
			in, err = r.c.Watch(ctx, opts)
			if err == nil {
				break
			}
			var apiErr *adminclient.Error
			if errors.As(err, &apiErr) && apiErr.StatusCode/100 == 4 && apiErr.StatusCode != http.StatusTooManyRequests {
				r.setConn(func(s *connState) { s.err = err })
				return
			}
			delay = min(2*delay, reconnectMax)
		}
		r.setConn(func(s *connState) {
			*s = connState{back: max(r.Now().Sub(s.lostAt), time.Millisecond)}
		})
	}
}
