package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyChannel is what tether_sequence notifies when it positioned
// feed rows.
const notifyChannel = "tether_changes"

// notifyPositioned signals the listeners that are not LISTENing right now
// that this store positioned feed rows (a group or a round that committed
// positions). The others hear of it from PostgreSQL: the positions were
// given with a notification, delivered at their commit to every LISTEN
// connection, this store's included; signalling them too would make each
// read the feed twice for one change. A listener that was not LISTENing at
// the commit and is by now signals itself once it LISTENs (NotifyChanges).
func (s *Store) notifyPositioned() {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	for ch, listening := range s.listeners {
		if !listening.Load() {
			signal(ch)
		}
	}
}

func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// NotifyChanges signals ch after every group or round, of this process or
// another, that positioned feed rows, as PostgreSQL delivers their
// notifications: it holds a connection of its own that LISTENs on
// tether_changes. If that connection drops, it reconnects with backoff, and
// meanwhile polls ChangesLatest every PollInterval and is signalled by this
// store's groups and rounds that position rows at once. It returns when ctx
// is done or the store closes.
func (s *Store) NotifyChanges(ctx context.Context, ch chan<- struct{}) error {
	listening := new(atomic.Bool)
	s.listenMu.Lock()
	if s.closed.Load() {
		s.listenMu.Unlock()
		return errClosed
	}
	s.notifiers.Add(1)
	s.listeners[ch] = listening
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
			listening.Store(true)
			signal(ch)
			backoff = 100 * time.Millisecond
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				signal(ch)
			}
			listening.Store(false)
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
