package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyChannel is what tether_sequence notifies when it positioned
// feed rows.
const notifyChannel = "tether_changes"

func (s *Store) notifyLocal() {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	for ch := range s.listeners {
		signal(ch)
	}
}

func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// NotifyChanges signals ch after every write through this Store at once and
// after every round of its sequencer that positioned feed rows, and after
// other processes' rounds as PostgreSQL delivers their notifications: it
// holds a connection of its own that LISTENs on tether_changes. If that
// connection drops, it reconnects with backoff, and meanwhile polls
// ChangesLatest every PollInterval. It returns when ctx is done or the store
// closes.
func (s *Store) NotifyChanges(ctx context.Context, ch chan<- struct{}) error {
	s.listenMu.Lock()
	if s.closed.Load() {
		s.listenMu.Unlock()
		return errClosed
	}
	s.notifiers.Add(1)
	s.listeners[ch] = struct{}{}
	s.listenMu.Unlock()
	defer s.notifiers.Done()
	defer func() {
		s.listenMu.Lock()
		delete(s.listeners, ch)
		s.listenMu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()

	backoff := 100 * time.Millisecond
	for {
		conn, err := s.listen(ctx)
		if err == nil {
			// Commits between the previous connection and this one (or
			// before the first) were not notified: look once.
			signal(ch)
			backoff = 100 * time.Millisecond
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				signal(ch)
			}
			conn.Close(context.Background())
		}
		if ctx.Err() != nil {
			return nil
		}
		// Disconnected: poll the feed's end until the next attempt.
		if !s.pollUntil(ctx, ch, time.Now().Add(backoff)) {
			return nil
		}
		backoff = min(2*backoff, s.opts.MaxReconnectBackoff)
	}
}

// listen opens a connection and LISTENs on the notification channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connConf.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	s.listenerPID.Store(conn.PgConn().PID())
	return conn, nil
}

// pollUntil polls ChangesLatest every PollInterval until deadline, signalling
// ch when the feed's end moved (and once at first). It reports false when ctx
// ended.
func (s *Store) pollUntil(ctx context.Context, ch chan<- struct{}, deadline time.Time) bool {
	var last int64 = -1
	for {
		if latest, _, err := s.ChangesLatest(ctx); err == nil && latest != last {
			signal(ch)
			last = latest
		}
		wait := min(s.opts.PollInterval, time.Until(deadline))
		if wait <= 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}
