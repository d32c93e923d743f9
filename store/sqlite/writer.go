package sqlite

import (
	"context"
	"database/sql"

	"github.com/tetherhq/tether/registry"
)

// --- group-commit writer ---

type writeRequest struct {
	ctx  context.Context
	fn   func(*txn) error
	done chan error
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
	return <-req.done
}

var errClosed = registry.Errorf(registry.CodeUnavailable, "the database is closed")

func (s *Store) writeLoop() {
	defer close(s.stopped)
	batch := make([]*writeRequest, 0, s.opts.MaxBatch)
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
	drain:
		for len(batch) < s.opts.MaxBatch {
			select {
			case req := <-s.queue:
				batch = append(batch, req)
			default:
				break drain
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch of write requests in one transaction. Requests run
// without savepoints: a request that refuses does so before it writes, and a
// statement that fails undoes itself, so a failure leaves nothing behind. Only
// a request that fails after it wrote something (an I/O error, a constraint
// hit by its second statement) would leave the transaction dirty: then the
// whole batch is rolled back and each request run again in a savepoint of its
// own, so that every caller still gets its own outcome.
func (s *Store) commit(batch []*writeRequest) {
	errs := make([]error, len(batch))
	t := &txn{s: s, ctx: context.Background()} // a batch is not cancelled by one caller
	// BEGIN IMMEDIATE takes the write lock now (waiting for another process up
	// to the busy timeout), so no statement inside deadlocks upgrading a lock.
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		for _, req := range batch {
			req.done <- err
		}
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
}

// commitIsolated runs a batch again, each request in its own savepoint.
func (s *Store) commitIsolated(batch []*writeRequest) {
	errs := make([]error, len(batch))
	t := &txn{s: s, ctx: context.Background()}
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		for _, req := range batch {
			req.done <- err
		}
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
			if _, rerr := t.exec("ROLLBACK TO w"); rerr != nil {
				t.exec("ROLLBACK") // unusable: fail what has not failed yet
				for j := range errs {
					if errs[j] == nil {
						errs[j] = rerr
					}
				}
				s.reply(batch, errs)
				return
			}
		}
		if _, err := t.exec("RELEASE w"); err != nil && errs[i] == nil {
			errs[i] = err
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
}

func (s *Store) reply(batch []*writeRequest, errs []error) {
	ok := false
	for i, req := range batch {
		req.done <- errs[i]
		ok = ok || errs[i] == nil
	}
	if ok {
		s.notifyLocal()
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
