package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
)

// --- checkpoints beside the writer ---
//
// In WAL mode a commit appends the pages it changed to the -wal file, and a
// checkpoint copies them back into the database file so that the WAL can
// start over. Left to itself SQLite runs a checkpoint inside the commit that
// takes the WAL past 1,000 pages: the writer then stops for the copy and two
// fsyncs (5 to 20 ms each on the disks tether was measured on), and every
// request queued behind it waits. In the agents' lifecycle that was a quarter
// of the writer's time (docs/performance.md).
//
// So the writer's connection has automatic checkpoints off. It counts the
// pages its commits write and, every thousand of them, wakes a goroutine
// with a connection of its own, which runs a PASSIVE checkpoint: it copies
// what no reader still needs while the writer goes on committing.
//
// The WAL starts over only at a write that finds every frame copied, and a
// checkpoint that runs beside a busy writer may never leave it so (more
// frames have been appended by the time it ends). When a checkpoint finds
// the WAL eight thousand pages long or longer, the writer runs the next one
// itself, between two batches, as SQLite would have: the WAL then starts
// over at its next write, and its file stays bounded.

// checkpointPages is how many pages the writer commits between two
// checkpoints: SQLite's own default (wal_autocheckpoint). The WAL may grow to
// walLimitFactor times that before the writer checkpoints itself (32 MiB at
// 4 KiB pages).
const (
	checkpointPages = 1000
	walLimitFactor  = 8
)

// checkpointer is the state shared by the writer and the checkpoint goroutine.
type checkpointer struct {
	mu   sync.Mutex    // held while db checkpoints, and while a reopen replaces it
	db   *sql.DB       // one connection; it only checkpoints
	kick chan struct{} // the writer's wake-up, one pending at most
	done chan struct{} // closed when the goroutine has stopped

	every int // pages between checkpoints (checkpointPages but in tests)
	limit int // the WAL's length, in pages, past which the writer checkpoints

	// pages is what the writer committed since its last kick (writer
	// goroutine only).
	pages int
	// inline asks the writer to run the next checkpoint itself.
	inline atomic.Bool

	// Counted for tests.
	runs        atomic.Int64 // checkpoints run by the goroutine
	inlineRuns  atomic.Int64 // checkpoints run by the writer
	lastWALSize atomic.Int64 // the WAL's length, in pages, at the last checkpoint
}

func newCheckpointer(db *sql.DB, every int) *checkpointer {
	c := &checkpointer{kick: make(chan struct{}, 1), done: make(chan struct{}),
		every: every, limit: walLimitFactor * every}
	c.setDB(db)
	return c
}

// setDB gives the checkpointer its pool (c.mu held, or before its loop runs).
func (c *checkpointer) setDB(db *sql.DB) {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	c.db = db
}

// loop runs a checkpoint at each kick until closing is closed.
func (c *checkpointer) loop(closing <-chan struct{}) {
	defer close(c.done)
	for {
		select {
		case <-closing:
			return
		case <-c.kick:
		}
		c.mu.Lock()
		walSize, err := checkpoint(context.Background(), c.db)
		c.mu.Unlock()
		if errors.Is(err, errCheckpointBusy) {
			continue // another checkpoint is copying: the next one goes on
		}
		if err != nil {
			// This connection could not checkpoint (whatever failed, the
			// writer's own commits meet and report it): the writer tries,
			// as SQLite would have, so that the WAL stays bounded.
			c.inline.Store(true)
			continue
		}
		c.runs.Add(1)
		c.lastWALSize.Store(int64(walSize))
		if walSize >= c.limit {
			c.inline.Store(true)
		}
	}
}

// committed is called by the writer after each commit: it counts the pages
// the commit wrote to the WAL, wakes the goroutine every c.every of them, and
// runs the checkpoint itself when the goroutine asked it to.
func (s *Store) committed() {
	c := s.ckpt
	var written int
	s.wconn.Raw(func(dc any) error {
		if st, ok := dc.(sqlite.DBStatus); ok {
			written, _, _ = st.Status(sqlite.DBStatusCacheWrite, true)
		}
		return nil
	})
	if c.pages += written; c.pages >= c.every {
		c.pages = 0
		select {
		case c.kick <- struct{}{}:
		default: // a checkpoint is pending: it will copy these pages too
		}
	}
	if c.inline.Swap(false) {
		walSize, err := checkpoint(context.Background(), s.wconn)
		if err == nil {
			c.inlineRuns.Add(1)
			c.lastWALSize.Store(int64(walSize))
		}
	}
}

// queryRower is what a checkpoint runs on: the goroutine's pool or the
// writer's connection.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// errCheckpointBusy: another connection, of this process or another, was
// checkpointing.
var errCheckpointBusy = errors.New("another checkpoint is running")

// checkpoint runs a PASSIVE checkpoint (it waits for no reader and no
// writer) and returns the WAL's length in pages.
func checkpoint(ctx context.Context, db queryRower) (walSize int, err error) {
	var busy, copied int
	if err = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &walSize, &copied); err == nil && busy != 0 {
		err = errCheckpointBusy
	}
	return walSize, err
}
