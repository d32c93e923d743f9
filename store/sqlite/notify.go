package sqlite

import (
	"context"
	"database/sql"
	"time"
)

func (s *Store) notifyLocal() {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	for ch := range s.listeners {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// NotifyChanges signals ch once when it is listening, after every local
// commit at once, and after other processes' commits within NotifyInterval: it holds one read connection and
// asks it for PRAGMA data_version, which changes whenever another connection
// commits.
func (s *Store) NotifyChanges(ctx context.Context, ch chan<- struct{}) error {
	s.listenMu.Lock()
	s.listeners[ch] = struct{}{}
	s.listenMu.Unlock()
	defer func() {
		s.listenMu.Lock()
		delete(s.listeners, ch)
		s.listenMu.Unlock()
	}()
	var (
		conn     *sql.Conn
		replaced <-chan struct{}
		last     int64
	)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	t := time.NewTicker(s.opts.NotifyInterval)
	defer t.Stop()
	for {
		if conn == nil {
			// First, or after a reopen (which waits for this connection
			// to be let go): a new connection's data_version starts anew,
			// and the first signal after it covers what the swap hid.
			s.poolMu.RLock()
			c, err := s.readers.Conn(ctx)
			replaced = s.replaced
			s.poolMu.RUnlock()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return s.wrap(err, "open a connection to watch for changes")
			}
			conn, last = c, -1
		}
		var v int64
		if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return s.wrap(err, "watch for changes")
		}
		if v != last {
			// Also signal once when first live: a commit between the caller
			// reading the feed's position and this listener being registered
			// would otherwise go unnoticed until the next one.
			select {
			case ch <- struct{}{}:
			default:
			}
			last = v
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case <-replaced:
			conn.Close()
			conn = nil
		case <-t.C:
		}
	}
}
