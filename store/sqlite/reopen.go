package sqlite

import (
	"context"
	"time"
)

// --- opening every connection again after a failure ---
//
// SQLite opens a file it cannot write read-only, and a connection keeps
// what it opened for its life. Worse, the process's connections to one
// database share some of it: the -shm file's mapping (the WAL's index) is
// opened once, by the first connection, and kept until the last one
// closes. When the -shm file was read-only at that moment, every connection
// opened afterwards, however writable the files have become, is given the
// read-only mapping, and every write fails with "attempt to write a readonly
// database" until all the process's connections to the file are closed
// together: a restart, until this.
//
// So after a write fails in a way a fresh start may cure (needsReopen), the
// writer closes every connection this store has, the readers' and the
// checkpointer's too, waits until the last one in use has been let go, and
// only then opens them again. Reads wait meanwhile; one in progress ends on
// its connection first.

// ReopenInterval is how often, at most, a store whose writes fail reopens its
// connections, so that a database that stays read-only costs the reads that
// go on working one pause a second, not one per write. In between, writes
// are answered with the failure at once. A readiness check (CheckWritable)
// reopens at once.
const ReopenInterval = time.Second

// drainTimeout bounds how long a reopen waits for the reads in progress to
// let their connections go. One that holds its connection longer makes this
// attempt fail (the new connections share the old ones' state) and the next
// one try again.
const drainTimeout = 2 * time.Second

// reviveWriter reopens the store's connections if a batch left them broken,
// so that the store recovers by itself once the cause is gone (permissions
// fixed, a file system remounted read-write) instead of failing every write
// until a restart. While the cause remains, it tries again every
// ReopenInterval (at once for a readiness probe), and answers the batches in
// between with the failure.
func (s *Store) reviveWriter(batch []*writeRequest) error {
	if !s.writerBroken {
		return nil
	}
	now := s.opts.Clock.Now()
	if now.Sub(s.lastReopen) < ReopenInterval && !now.Before(s.lastReopen) && !hasProbe(batch) {
		return s.brokenErr
	}
	s.lastReopen = now
	if err := s.reopen(); err != nil {
		return err
	}
	s.writerBroken, s.brokenErr = false, nil
	return nil
}

func hasProbe(batch []*writeRequest) bool {
	for _, req := range batch {
		if req.probe {
			return true
		}
	}
	return false
}

// reopen closes every connection of the store and opens them again (writer
// goroutine only). The read pool is always replaced; the writer's
// connection stays nil when it cannot be opened, and the next reopen tries
// again.
func (s *Store) reopen() error {
	if err := s.closeAll(); err != nil {
		return err
	}
	s.reopened.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.BusyTimeout)
	defer cancel()
	writer, err := openWriter(ctx, s.writerDSN)
	if err != nil {
		return s.wrap(err, "open the database again")
	}
	wconn, err := writer.Conn(ctx)
	if err != nil {
		writer.Close()
		return s.wrap(err, "open the database again")
	}
	s.writer, s.wconn = writer, wconn
	return nil
}

// closeAll closes the writer's connection and replaces the read pools with
// new ones, which connect on first use, once the old ones' last connection
// has been let go (or drainTimeout has passed).
func (s *Store) closeAll() error {
	s.poolMu.Lock() // no read starts...
	defer s.poolMu.Unlock()
	s.ckpt.mu.Lock() // ...nor a checkpoint
	defer s.ckpt.mu.Unlock()
	close(s.replaced) // NotifyChanges lets its connection go
	s.replaced = make(chan struct{})

	s.stmtMu.Lock()
	for q, st := range s.rstmts {
		st.Close() // a statement's rows in progress keep it until they end
		delete(s.rstmts, q)
	}
	for q, st := range s.fstmts {
		st.Close()
		delete(s.fstmts, q)
	}
	s.stmtMu.Unlock()
	for q, st := range s.wstmts {
		st.Close()
		delete(s.wstmts, q)
	}
	if s.wconn != nil {
		s.wconn.Close()
		s.writer.Close()
		s.wconn, s.writer = nil, nil
	}
	// Closing a pool closes its idle connections now and each one in use
	// as it is let go.
	oldReaders, oldFeed := s.readers, s.feed
	oldReaders.Close()
	oldFeed.Close()
	s.ckpt.db.Close() // idle: no checkpoint runs
	for deadline := time.Now().Add(drainTimeout); oldReaders.Stats().OpenConnections+oldFeed.Stats().OpenConnections > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}

	readers, feed, ckptDB, err := s.openReaders()
	if err != nil {
		// Not expected (the DSN opened before): reads fail as closed
		// until the next reopen succeeds.
		return s.wrap(err, "open the database again")
	}
	s.readers, s.feed = readers, feed
	s.ckpt.setDB(ckptDB)
	return nil
}
