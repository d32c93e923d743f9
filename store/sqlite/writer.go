package sqlite

import (
	"context"
	"database/sql"
	"runtime"

	"github.com/tetherhq/tether/registry"
)

// --- group-commit writer ---

type writeRequest struct {
	ctx  context.Context
	fn   func(*txn) error
	done chan error
	// probe: the request changes nothing anyone watches (CheckWritable), so
	// a batch of probes alone wakes no listener.
	probe bool
}

// write runs fn in the writer's transaction, inside its own savepoint, and
// returns once the transaction committed (or fn's error after its savepoint was
// rolled back). A request whose context ends while queued is not run. Once
// queued, write waits for the outcome even if ctx ends, so that a caller never
// reports failure for a change that was committed.
func (s *Store) write(ctx context.Context, fn func(*txn) error) error {
	req := &writeRequest{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case <-s.closing:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	case s.queue <- req:
	}
	return s.await(req)
}

// await is req's answer. A request queued while Close ran may find the
// writer already gone (the queue has room, and select picks among ready
// cases at random): it gets errClosed rather than waiting forever.
func (s *Store) await(req *writeRequest) error {
	select {
	case err := <-req.done:
		return err
	case <-s.stopped:
		select { // the writer answers before it stops
		case err := <-req.done:
			return err
		default:
			return errClosed
		}
	}
}

var errClosed = registry.Errorf(registry.CodeUnavailable, "the database is closed")

func (s *Store) writeLoop() {
	defer close(s.stopped)
	batch := make([]*writeRequest, 0, s.opts.MaxBatch)
	lastBatch := 0
	for {
		var first *writeRequest
		select {
		case first = <-s.queue:
		case <-s.closing:
			// Finish what was queued before Close.
			for {
				select {
				case req := <-s.queue:
					s.commit([]*writeRequest{req})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
		batch = s.collect(batch, lastBatch >= yieldSiblings)
		lastBatch = len(batch)
		s.commit(batch)
	}
}

// yieldSiblings is how many requests the previous batch must have held for
// the next to yield to other goroutines before it commits: below it writes
// are not arriving concurrently, and a lone writer commits at once.
const yieldSiblings = 4

// yieldRounds bounds how many times a batch yields while it keeps growing.
const yieldRounds = 3

// collect adds to batch what is queued and, when writes are arriving
// concurrently, what the goroutines ready to run add once they ran.
//
// A commit writes every page its batch dirtied to the WAL, two system calls
// a page, and the requests of a batch share many pages, so bigger batches
// cost less CPU per request. Rather than wait a fixed time for more (a timer
// here used to cost a fifth of the lifecycle's throughput on an idle machine:
// the writer idled through it while the requests it waited for had already
// arrived), the writer yields its processor: when the machine is busy, the
// handlers waiting to run get to queue their writes first and join this
// batch; when it is idle there is nobody to yield to and the batch commits
// at once. See docs/performance.md for the measurements.
func (s *Store) collect(batch []*writeRequest, concurrent bool) []*writeRequest {
	batch = s.drain(batch)
	if !concurrent {
		return batch
	}
	for range yieldRounds {
		n := len(batch)
		if n >= s.opts.MaxBatch {
			break
		}
		runtime.Gosched()
		if batch = s.drain(batch); len(batch) == n {
			break
		}
	}
	return batch
}

// drain adds to batch what is queued, up to MaxBatch, without waiting.
func (s *Store) drain(batch []*writeRequest) []*writeRequest {
	for len(batch) < s.opts.MaxBatch {
		select {
		case req := <-s.queue:
			batch = append(batch, req)
		default:
			return batch
		}
	}
	return batch
}

// commit runs a batch of write requests in one transaction. Requests run
// without savepoints: a request that refuses does so before it writes, and a
// statement that fails undoes itself, so a failure leaves nothing behind. Only
// a request that fails after it wrote something (an I/O error, a constraint
// hit by its second statement) would leave the transaction dirty: then the
// whole batch is rolled back and each request run again in a savepoint of its
// own, so that every caller still gets its own outcome.
func (s *Store) commit(batch []*writeRequest) {
	if err := s.reviveWriter(batch); err != nil {
		s.failAll(batch, err)
		return
	}
	errs := make([]error, len(batch))
	t := &txn{s: s, ctx: context.Background()} // a batch is not cancelled by one caller
	// BEGIN IMMEDIATE takes the write lock now (waiting for another process up
	// to the busy timeout), so no statement inside deadlocks upgrading a lock.
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		s.failAll(batch, err)
		return
	}
	dirty := false
	for i, req := range batch {
		if err := req.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		t.wrote = false
		if errs[i] = req.fn(t); errs[i] != nil && t.wrote {
			dirty = true
			break
		}
		t.keepSearch(errs[i] == nil)
	}
	if !dirty && t.indexSearch() != nil {
		dirty = true // each request again on its own: one of them may be the cause
	}
	if dirty {
		t.exec("ROLLBACK")
		s.commitIsolated(batch)
		return
	}
	if _, err := t.exec("COMMIT"); err != nil {
		t.exec("ROLLBACK")
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	s.reply(batch, errs)
	s.committed()
}

// commitIsolated runs a batch again, each request in its own savepoint.
func (s *Store) commitIsolated(batch []*writeRequest) {
	errs := make([]error, len(batch))
	t := &txn{s: s, ctx: context.Background()}
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		s.failAll(batch, err)
		return
	}
	for i, req := range batch {
		if err := req.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if _, errs[i] = t.exec("SAVEPOINT w"); errs[i] != nil {
			continue
		}
		if errs[i] = req.fn(t); errs[i] != nil {
			if _, err := t.exec("ROLLBACK TO w"); err != nil {
				s.abandon(t, batch, errs, err)
				return
			}
		}
		t.keepSearch(errs[i] == nil)
		if _, err := t.exec("RELEASE w"); err != nil && errs[i] == nil {
			errs[i] = err
		}
		// Its jobs join the search index before the next request's
		// savepoint, whose rollback would otherwise take them along.
		if err := t.indexSearch(); err != nil {
			s.abandon(t, batch, errs, err)
			return
		}
	}
	if _, err := t.exec("COMMIT"); err != nil {
		t.exec("ROLLBACK")
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	s.reply(batch, errs)
	s.committed()
}

// abandon rolls back a transaction that cannot go on and fails what has not
// failed yet with err.
func (s *Store) abandon(t *txn, batch []*writeRequest, errs []error, err error) {
	t.exec("ROLLBACK")
	for j := range errs {
		if errs[j] == nil {
			errs[j] = err
		}
	}
	s.reply(batch, errs)
}

func (s *Store) reply(batch []*writeRequest, errs []error) {
	wake := false
	for i, req := range batch {
		s.noteFailure(errs[i])
		req.done <- errs[i]
		wake = wake || (errs[i] == nil && !req.probe)
	}
	if wake {
		s.notifyLocal()
	}
}

// failAll answers every request of a batch that could not start with err.
func (s *Store) failAll(batch []*writeRequest, err error) {
	s.noteFailure(err)
	for _, req := range batch {
		req.done <- err
	}
}

// noteFailure marks the store's connections for reopening when err may have
// left them unable to write (see needsReopen).
func (s *Store) noteFailure(err error) {
	if err != nil && needsReopen(err) {
		s.writerBroken, s.brokenErr = true, err
	}
}

// CheckWritable commits one increment of the probe row (migration 0013)
// through the writer, in the next batch like any write: it sees what writes
// see (a read-only file, a full disk, another process holding the lock past
// the busy timeout), and connections broken by such a failure are reopened
// for it at once, whatever ReopenInterval says: readiness checks are few
// (registry.ReadyCacheTTL), and the one after a fix should see it.
// It stops waiting when ctx ends; the probe may still run, harmlessly.
func (s *Store) CheckWritable(ctx context.Context) error {
	req := &writeRequest{ctx: ctx, probe: true, done: make(chan error, 1), fn: func(t *txn) error {
		_, err := t.exec("UPDATE store_probe SET probes = probes + 1 WHERE id = 1")
		return err
	}}
	select {
	case <-s.closing:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	case s.queue <- req:
	}
	answer := make(chan error, 1)
	go func() { answer <- s.await(req) }()
	select {
	case err := <-answer:
		return s.wrap(err, "write the readiness probe")
	case <-ctx.Done():
		return &registry.Error{Code: registry.CodeUnavailable, Message: "the database did not complete a one-row write in time", Err: ctx.Err()}
	}
}

// txn is the writer's transaction as a write request sees it. Its statements
// run under the batch's context, not the caller's: cancelling one caller must
// not interrupt the connection that other callers' changes share.
type txn struct {
	s   *Store
	ctx context.Context
	// wrote is set once a statement of the current request changed a row.
	wrote bool
	// The jobs inserted by the batch's requests that succeeded (searchQueue)
	// and by the request running (searchNew), which join the search index
	// together just before the batch commits (job_search.go).
	searchQueue, searchNew []string
}

// stmt returns the writer's prepared statement for q, preparing it once for
// the life of the store.
func (t *txn) stmt(q string) (*sql.Stmt, error) {
	if st, ok := t.s.wstmts[q]; ok {
		return st, nil
	}
	st, err := t.s.wconn.PrepareContext(t.ctx, q)
	if err != nil {
		return nil, err
	}
	t.s.wstmts[q] = st
	return st, nil
}

func (t *txn) exec(q string, args ...any) (sql.Result, error) {
	st, err := t.stmt(q)
	if err != nil {
		return nil, t.s.wrap(err, "prepare a write")
	}
	res, err := st.ExecContext(t.ctx, args...)
	if err != nil {
		return nil, t.s.wrap(err, "write")
	}
	if n, _ := res.RowsAffected(); n > 0 {
		t.wrote = true
	}
	return res, nil
}

// selectRow runs a query that only reads: it does not mark the request as
// having written (a refusal after it needs no rollback).
func (t *txn) selectRow(q string, args ...any) *sql.Row {
	st, err := t.stmt(q)
	if err != nil {
		return t.s.wconn.QueryRowContext(t.ctx, q, args...)
	}
	return st.QueryRowContext(t.ctx, args...)
}

// query and queryRow run statements that may write (UPDATE ... RETURNING):
// they mark the request as having written, to be safe.
func (t *txn) query(q string, args ...any) (*sql.Rows, error) {
	t.wrote = true
	st, err := t.stmt(q)
	if err != nil {
		return nil, t.s.wrap(err, "prepare a query")
	}
	rows, err := st.QueryContext(t.ctx, args...)
	if err != nil {
		return nil, t.s.wrap(err, "query")
	}
	return rows, nil
}

func (t *txn) queryRow(q string, args ...any) *sql.Row {
	t.wrote = true
	st, err := t.stmt(q)
	if err != nil {
		// Surface the error through Scan.
		return t.s.wconn.QueryRowContext(t.ctx, q, args...)
	}
	return st.QueryRowContext(t.ctx, args...)
}
