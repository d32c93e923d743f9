package registry

import (
	"context"
	"sync"
	"time"
)

// ReadyCacheTTL is how long Ready answers with the outcome of its last check.
// A readiness probe may be asked many times a second (every load balancer,
// every replica's kubelet); the check writes, and the writer is the one
// resource every agent shares, so it runs at most once per interval whatever
// the rate of probes.
const ReadyCacheTTL = 2 * time.Second

// readiness remembers the last check, and the one running.
type readiness struct {
	mu      sync.Mutex
	at      time.Time     // when the last check ended (registry clock); zero: never
	err     error         // its outcome
	running chan struct{} // closed when the check in flight ends; nil: none
}

// ReadyCheckTimeout bounds one readiness check: a store that takes longer to
// answer a one-row write is not ready.
const ReadyCheckTimeout = 5 * time.Second

// Ready reports whether this tether can serve: the store answers, its schema
// is this binary's, and it can write. A store that can be read but not
// written (read-only, disk full, a PostgreSQL standby) is not ready, since
// every write would fail. The outcome is reused for ReadyCacheTTL, and
// concurrent callers share one check, which runs to its end (at most
// ReadyCheckTimeout) even if the caller that started it goes away.
//
// The error is CodeUnavailable with a message that says what failed, never
// where; the store's own error (with the details for the log) is its cause.
func (r *Registry) Ready(ctx context.Context) error {
	rd := &r.ready
	now := r.cfg.Clock.Now()
	rd.mu.Lock()
	if !rd.at.IsZero() && !now.Before(rd.at) && now.Sub(rd.at) < ReadyCacheTTL {
		err := rd.err
		rd.mu.Unlock()
		return err
	}
	done := rd.running
	if done == nil {
		done = make(chan struct{})
		rd.running = done
		go func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReadyCheckTimeout)
			defer cancel()
			err := r.checkReady(cctx)
			rd.mu.Lock()
			rd.at, rd.err, rd.running = r.cfg.Clock.Now(), err, nil
			rd.mu.Unlock()
			close(done)
		}()
	}
	rd.mu.Unlock()
	select {
	case <-done:
		rd.mu.Lock()
		defer rd.mu.Unlock()
		return rd.err
	case <-ctx.Done():
		return &Error{Code: CodeUnavailable, Message: "the readiness check did not finish in time", Err: ctx.Err()}
	}
}

func (r *Registry) checkReady(ctx context.Context) error {
	if err := r.store.Ping(ctx); err != nil {
		return &Error{Code: CodeUnavailable, Message: "the database cannot be reached or is not at this tether's schema", Err: err}
	}
	if err := r.store.CheckWritable(ctx); err != nil {
		return &Error{Code: CodeUnavailable, Message: "the database cannot be written to (read-only, out of space, or down)", Err: err}
	}
	return nil
}
