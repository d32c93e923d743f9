package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tetherhq/tether/registry"
)

// --- group-commit writers ---
//
// Every write of the store goes through a few writer goroutines (Options.
// Writers), each of which runs the writes that arrived while its previous
// transaction was committing together, in one transaction: one commit (and
// one WAL flush) for the whole group instead of one each, so that throughput
// rises with concurrency rather than with the disk's flush rate. A caller
// still returns only once its write committed.
//
// Groups run in parallel, on connections of their own, and so do the groups
// of other replicas. The change feed does not order them: its rows are
// inserted without a position, and get one from a holder of the feed lock
// (migrations 0018 and 0028). A group's last statement, sent with its
// COMMIT, takes that lock if it is free, without waiting for it, and then
// positions the group's rows and every committed row that has none; when it
// is held, the group's rows wait for the next holder: a later group, or a
// round of the store's sequencer (sequenceLoop), which the store asks for
// when no later group of its own comes soon enough (see "the groups' part"
// in sequencer.go). A group's callers are answered at its commit (measured:
// answering only after a round cost a quarter of the lifecycle's
// throughput). Whoever needs the feed to hold every change committed so far
// waits for a round (sequenced), as the watch's snapshot does through
// ChangesLatest.
//
// The writes of the hot path (a submission, a delivery, a job's update) are
// each a single statement that needs no other statement's result and whose
// conditions make it atomic by themselves: those are sent together, BEGIN
// included, as one pipeline (a pgx batch), so that a group costs one round
// trip instead of one per statement; on a busy machine each round trip costs
// a context switch to the database and back. Other writes run statement by
// statement in their turn, between the pipelined ones; several of them read
// before they write, so a group holding one takes the writers' lock
// (writersLockKey) first, and such groups, of every replica, run one at a
// time. The pipelined writes still run beside them: what such a write reads
// and then changes of the rows the pipelined writes touch (jobs), it locks
// first or checks again in its statement.
//
// Groups that lock the same rows in opposite orders deadlock; PostgreSQL
// aborts one after deadlock_timeout (1 s by default) and it runs again
// (transact). Agents write their own jobs, so it takes two writes of the
// same two jobs (an admin's bulk change beside the agents', a cluster's
// delete beside its agents' writes) in two groups at once.

// writersLockKey serializes the groups that hold a write other than a single
// pipelined statement ('tetherwr' as a big-endian int64).
const writersLockKey int64 = 8387237872774862706

// feedLockKey is the change feed's lock ('tetherfe' as a big-endian int64),
// taken by tether_sequence and by what must not run beside it.
const feedLockKey int64 = 8387237872774833765

// maxBatch bounds a group, so that one commit's latency stays bounded.
const maxBatch = 256

// writeAttempts is how many times a transaction PostgreSQL aborted for a
// deadlock or a serialization failure, or that failed before anything was
// sent, is run.
const writeAttempts = 4

type writeRequest struct {
	ctx   context.Context
	doing string
	fn    func(ctx context.Context, q db) error
	// pipe, when set, is the write as one statement that the writer may send
	// in a pipeline with others; fn is then what runs when pipe's read
	// answers errSlowPath.
	pipe *piped
	slow bool // pipe's read answered errSlowPath: run fn instead
	done chan error
}

// piped is a write as one statement and what reads its rows.
type piped struct {
	sql  string
	args []any
	// read reads the statement's rows (and closes them), or maps err, the
	// error that sending the statement returned instead (rows is then nil). It returns
	// errSlowPath when the rows show that the write needs more than the
	// statement (a rare case): the group then runs again, with this write
	// run by its fn.
	read func(rows pgx.Rows, err error) error
}

// errSlowPath: see piped.read.
var errSlowPath = errors.New("the write needs its statement-by-statement path")

// errRerun: a write of the group turned out to need its slow path; the
// group runs again (not an attempt: each write can ask for it once).
var errRerun = errors.New("the group runs again")

// write runs fn in a transaction and returns once it committed, or fn's
// error once it was rolled back. A request whose context has ended is not
// started; once started it runs to its end (bounded by WriteTimeout) whatever
// happens to the caller's context, so that a caller never reports failure for
// a change that was committed. Listeners are signalled after the commit.
func (s *Store) write(ctx context.Context, doing string, fn func(ctx context.Context, q db) error) error {
	return s.enqueue(ctx, &writeRequest{ctx: ctx, doing: doing, fn: fn, done: make(chan error, 1)})
}

func (s *Store) enqueue(ctx context.Context, req *writeRequest) error {
	if s.closed.Load() {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// s.writes is unbuffered: a send completes only into the writer's hands,
	// never into a buffer the writer has stopped reading after Close.
	select {
	case s.writes <- req:
	case <-s.closing:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.done
}

// writePiped is write for a single statement that needs no other
// statement's result (see piped); slow is what runs instead when read
// answers errSlowPath.
func (s *Store) writePiped(ctx context.Context, doing string, p *piped, slow func(ctx context.Context, q db) error) error {
	if slow == nil {
		slow = func(ctx context.Context, q db) error {
			return p.read(q.Query(ctx, p.sql, p.args...))
		}
	}
	return s.enqueue(ctx, &writeRequest{ctx: ctx, doing: doing, fn: slow, pipe: p, done: make(chan error, 1)})
}

// stmt is write for a single statement. It is a transaction of its own
// like any other write: the group's.
func (s *Store) stmt(ctx context.Context, doing string, fn func(ctx context.Context, q db) error) error {
	return s.write(ctx, doing, fn)
}

// writeLoop is one writer goroutine; Open starts Options.Writers of them.
func (s *Store) writeLoop() {
	defer s.writers.Done()
	batch := make([]*writeRequest, 0, maxBatch)
	for {
		select {
		case req := <-s.writes:
			batch = append(batch[:0], req)
		case <-s.closing:
			return // write refuses new requests once closing is closed
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case req := <-s.writes:
				batch = append(batch, req)
			default:
				break gather
			}
		}
		s.commit(batch)
	}
}

// commit runs a group in one transaction. If one of its writes fails, the
// transaction is rolled back, that write's caller gets its error, and the
// others run again together: outcomes are those of running the writes one
// after another in arrival order, and no failure undoes another's write.
func (s *Store) commit(batch []*writeRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
	defer cancel()
	live := batch[:0:0]
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.done <- err // not started: its caller has gone
			continue
		}
		live = append(live, req)
	}
	for len(live) > 0 {
		failed, err := s.transact(ctx, live)
		if failed >= 0 {
			live[failed].done <- s.outcome(ctx, live[failed], err)
			live = slices.Delete(live, failed, failed+1)
			continue
		}
		if err == nil {
			s.batches.Add(1)
			s.batched.Add(int64(len(live)))
			for _, req := range live {
				req.done <- nil
			}
			return
		}
		for _, req := range live {
			req.done <- s.outcome(ctx, req, err)
		}
		return
	}
}

// transact runs reqs in one transaction, run again when PostgreSQL aborted
// it for a deadlock or a serialization failure, or it failed before anything
// was sent. failed is the index of the write whose error rolled it back, or
// -1 when it committed or failed as a whole (err).
func (s *Store) transact(ctx context.Context, reqs []*writeRequest) (failed int, err error) {
	for attempt := 1; ; attempt++ {
		failed, err = s.transactOnce(ctx, reqs)
		if errors.Is(err, errRerun) {
			attempt--
			continue
		}
		if err != nil && attempt < writeAttempts && retryable(err) && ctx.Err() == nil {
			s.retried.Add(1)
			time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
			continue
		}
		return failed, err
	}
}

// errNotCommitted: COMMIT answered ROLLBACK, because a statement of the
// transaction failed and a write went on as if it had not.
var errNotCommitted = errors.New("the transaction was rolled back")

// transactOnce is one attempt of transact: BEGIN, the writers' lock when a
// write needs it, the writes in order and COMMIT, the pipelined writes sent
// together with what surrounds them (see piped), the others in their turn.
func (s *Store) transactOnce(ctx context.Context, reqs []*writeRequest) (failed int, err error) {
	s.groupStarted()
	var last lastBatch
	defer func() { s.groupEnded(&last) }()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return -1, err
	}
	// Release destroys a connection left inside a transaction (after an
	// error below), so a rolled-back or broken one is never reused.
	defer conn.Release()
	p := pipeline{conn: conn}
	p.b.Queue("BEGIN")
	p.reqs = append(p.reqs, -1)
	if slices.ContainsFunc(reqs, func(r *writeRequest) bool { return r.pipe == nil || r.slow }) {
		p.b.Queue(fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", writersLockKey))
		p.reqs = append(p.reqs, -1)
	}
	rollback := func() { conn.Exec(ctx, "ROLLBACK") }
	for i, req := range reqs {
		if req.pipe != nil && !req.slow {
			p.b.Queue(req.pipe.sql, req.pipe.args...)
			p.reqs = append(p.reqs, i)
			continue
		}
		if failed, err := p.flush(ctx, reqs); err != nil {
			rollback()
			return failed, err
		}
		if err := req.fn(ctx, conn); err != nil {
			rollback()
			if retryable(err) {
				return -1, err // the whole group runs again
			}
			return i, err
		}
	}
	if failed, err := p.flush(ctx, reqs); err != nil {
		rollback()
		return failed, err
	}
	// COMMIT goes after every write's rows were read: a write that fails on
	// what its rows say (not on a database error) must still be able to
	// roll the group back. It goes with tether_sequence_try, the group's
	// last statement (see "the groups' part" in sequencer.go).
	s.sendingLast(&last)
	var b pgx.Batch
	b.Queue("SELECT tether_sequence_try()")
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, &b)
	if err := br.QueryRow().Scan(&last.positioned); err != nil {
		br.Close()
		rollback()
		return -1, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return -1, err
	}
	if tag.String() != "COMMIT" {
		return -1, errNotCommitted
	}
	last.committed = true
	return -1, nil
}

// pipeline is the statements queued and not sent yet of transactOnce.
type pipeline struct {
	conn interface {
		SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	}
	b pgx.Batch
	// reqs is, for each queued statement, the index of its write in the
	// group, or -1 for BEGIN and the lock.
	reqs []int
}

// flush sends the queued statements in one round trip and reads their
// results in order. failed is the index of the write whose error rolled
// the transaction back, or -1 when the error concerns the group.
func (p *pipeline) flush(ctx context.Context, reqs []*writeRequest) (failed int, err error) {
	if p.b.Len() == 0 {
		return -1, nil
	}
	br := p.conn.SendBatch(ctx, &p.b)
	failed, err = p.read(br, reqs)
	if cerr := br.Close(); err == nil && cerr != nil {
		failed, err = -1, cerr
	}
	p.b = pgx.Batch{}
	p.reqs = p.reqs[:0]
	return failed, err
}

func (p *pipeline) read(br pgx.BatchResults, reqs []*writeRequest) (failed int, err error) {
	for _, i := range p.reqs {
		switch i {
		case -1:
			if _, err := br.Exec(); err != nil {
				return -1, err
			}
		default:
			err := reqs[i].pipe.read(br.Query())
			if errors.Is(err, errSlowPath) {
				reqs[i].slow = true
				return -1, errRerun
			}
			if err != nil {
				if retryable(err) {
					return -1, err // the whole group runs again
				}
				return i, err
			}
		}
	}
	return -1, nil
}

// outcome is what a write's caller is told of err.
func (s *Store) outcome(ctx context.Context, req *writeRequest, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && req.ctx.Err() == nil && !s.closed.Load() {
		return &registry.Error{Code: registry.CodeUnavailable, Message: fmt.Sprintf("the database did not complete a write within %s; try again", s.opts.WriteTimeout), Err: err}
	}
	return s.wrap(err, req.doing)
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40P01" || pe.Code == "40001"
	}
	return pgconn.SafeToRetry(err)
}
