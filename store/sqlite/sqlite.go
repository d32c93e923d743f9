// Package sqlite is the embedded registry.Store: one database file, any
// number of processes (the console, `tether serve`, the CLI) side by side.
//
// Writes go through one goroutine that owns the single writer connection and
// commits concurrent requests together (group commit): a batch of requests
// pays for one commit, and one request's failure is its own (writer.go). Reads use a separate pool of read-only
// connections, which WAL lets run alongside the writer, and a goroutine of
// its own copies the WAL back into the database file (checkpoint.go). After
// a failure that may have left SQLite unable to write, all of them are
// closed and opened again (reopen.go).
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/tetherhq/tether/registry"
)

// Options tune the store. Zero values take the defaults.
type Options struct {
	// Readers is the size of the read pool (default 4).
	Readers int
	// BusyTimeout is how long a connection waits for another process's lock
	// (default 10s).
	BusyTimeout time.Duration
	// MaxBatch bounds how many write requests share one transaction
	// (default 256).
	MaxBatch int
	// NotifyInterval is how often other processes' writes are looked for
	// (default 10ms). The check reads one page header: it costs next to
	// nothing.
	NotifyInterval time.Duration
	// CacheKiB is each connection's page cache in KiB (default 32768: a
	// write batch's dirty pages are not spilled mid-transaction, and a
	// server's reads stay in memory). The caches fill as pages are read and
	// stay full: over a large database a process holds about CacheKiB times
	// its connections (Readers + 3; the change feed's two more read only the
	// feed's end). The console, which reads a screen at a
	// time, takes a small one.
	CacheKiB int

	// Clock is what the writer's retries after a failure are timed by
	// (ReopenInterval); default the wall clock. Tests advance a fake one.
	Clock registry.Clock

	// checkpointPages overrides checkpointPages, for tests.
	checkpointPages int
}

// Store is a registry.Store on a SQLite file.
type Store struct {
	path string
	opts Options

	// The writer's pool and its one connection: the writer goroutine's (and
	// Close's, once it stopped). Both nil while a reopen could not open them.
	writer *sql.DB
	wconn  *sql.Conn

	// poolMu guards readers and replaced, which a reopen replaces (reopen.go).
	// A read holds it for reading until it has its connection: a reopen
	// then waits for no read that has not started, and closes the pool
	// under those that have, which finish on their connection.
	poolMu  sync.RWMutex
	readers *sql.DB
	// feed is a pool of its own for reading the change feed (ChangesSince):
	// the hub's reads, which wake held polls, never queue behind the
	// requests' reads for a connection of readers.
	feed     *sql.DB
	replaced chan struct{} // closed when readers is replaced (NotifyChanges lets its connection go)

	// The DSNs open the connections again. writerBroken (writer goroutine
	// only) says a batch failed in a way that only opening every connection
	// again may cure (see needsReopen); brokenErr is that failure, answered
	// until ReopenInterval after lastReopen.
	writerDSN, readerDSN string
	writerBroken         bool
	brokenErr            error
	lastReopen           time.Time
	reopened             atomic.Int64 // times the store reopened its connections, for tests

	ckpt *checkpointer // runs the WAL's checkpoints beside the writer

	queue   chan *writeRequest
	closing chan struct{}
	stopped chan struct{}

	// wstmts are the writer's prepared statements, kept across transactions
	// (used by the writer goroutine only); rstmts the readers', prepared on
	// each pool connection as needed.
	wstmts map[string]*sql.Stmt
	stmtMu sync.Mutex
	rstmts map[string]*sql.Stmt
	fstmts map[string]*sql.Stmt // feed's, as rstmts

	listenMu  sync.Mutex
	listeners map[chan<- struct{}]struct{}

	closeOnce sync.Once
}

var _ registry.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and brings its schema
// up to date. A database written by a newer tether is refused.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.NotifyInterval <= 0 {
		opts.NotifyInterval = 10 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = registry.SystemClock{}
	}
	if opts.CacheKiB <= 0 {
		opts.CacheKiB = 32768
	}
	if dir := filepath.Dir(path); dir != "" {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return nil, registry.Errorf(registry.CodeInvalid, "cannot create database %s: directory %s does not exist", path, dir)
		}
	}
	// synchronous=NORMAL: in WAL mode a commit never corrupts the database
	// and survives a crash of the process; only a power cut or an OS crash
	// may roll back the last commits. The protocol is built for that: a lost
	// ack or result means a job is delivered again, which idempotency keys and
	// the agent's ledger make a no-op, leases reclaim, and fencing stops a
	// stale holder. FULL would fsync every commit: ~100 µs of CPU and up to
	// half a millisecond of waiting per batch on this class of machine, which
	// measured as the largest single cost of an agent's request.
	pragmas := []string{
		"busy_timeout(" + strconv.Itoa(int(opts.BusyTimeout/time.Millisecond)) + ")",
		"journal_mode(WAL)",
		"foreign_keys(1)",
		"synchronous(NORMAL)",
		// Savepoints (see commitIsolated) keep their undo log, the
		// sub-journal, in a temp file unless told otherwise: one pwrite per
		// page. In memory it costs nothing.
		"temp_store(MEMORY)",
		// The page cache per connection (negative = KiB; see CacheKiB).
		"cache_size(-" + strconv.Itoa(opts.CacheKiB) + ")",
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		for _, p := range append(pragmas, extra...) {
			q.Add("_pragma", p)
		}
		q.Set("_txlock", "immediate") // take the write lock at BEGIN: no deadlocking upgrades between processes
		return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	}
	writerDSN := dsn("wal_autocheckpoint(0)") // see checkpoint.go
	writer, err := openWriter(ctx, writerDSN)
	if err != nil {
		return nil, openError(path, err)
	}
	if err := migrate(ctx, writer, path); err != nil {
		writer.Close()
		return nil, err
	}
	// The writer goroutine owns this connection and runs BEGIN/COMMIT on it
	// itself (not database/sql's Tx), so that its prepared statements live as
	// long as the store instead of being prepared again in every transaction.
	wconn, err := writer.Conn(ctx)
	if err != nil {
		writer.Close()
		return nil, openError(path, err)
	}
	s := &Store{
		path: path, writer: writer, wconn: wconn, opts: opts, writerDSN: writerDSN, readerDSN: dsn("query_only(1)"),
		replaced: make(chan struct{}),
		queue:    make(chan *writeRequest, opts.MaxBatch), closing: make(chan struct{}), stopped: make(chan struct{}),
		wstmts:    map[string]*sql.Stmt{},
		rstmts:    map[string]*sql.Stmt{},
		fstmts:    map[string]*sql.Stmt{},
		listeners: map[chan<- struct{}]struct{}{},
	}
	readers, feed, ckptDB, err := s.openReaders()
	if err != nil {
		wconn.Close()
		writer.Close()
		return nil, openError(path, err)
	}
	s.readers, s.feed, s.ckpt = readers, feed, newCheckpointer(ckptDB, cmp.Or(opts.checkpointPages, checkpointPages))
	go s.writeLoop()
	go s.ckpt.loop(s.closing)
	return s, nil
}

// openReaders opens the read pool, the change feed's (feedReaders
// connections) and the checkpoint goroutine's pool (whose connection changes
// no row: a checkpoint is allowed under query_only). They connect on first
// use.
func (s *Store) openReaders() (readers, feed, ckpt *sql.DB, err error) {
	if readers, err = sql.Open("sqlite", s.readerDSN); err != nil {
		return nil, nil, nil, err
	}
	if feed, err = sql.Open("sqlite", s.readerDSN); err != nil {
		readers.Close()
		return nil, nil, nil, err
	}
	if ckpt, err = sql.Open("sqlite", s.readerDSN); err != nil {
		readers.Close()
		feed.Close()
		return nil, nil, nil, err
	}
	feed.SetMaxOpenConns(feedReaders)
	feed.SetMaxIdleConns(feedReaders)
	feed.SetConnMaxIdleTime(0)
	readers.SetMaxOpenConns(s.opts.Readers + 1) // +1: the change notifier holds one
	readers.SetMaxIdleConns(s.opts.Readers + 1)
	readers.SetConnMaxIdleTime(0)
	return readers, feed, ckpt, nil
}

// feedReaders is the size of the change feed's pool: the hub and the
// watchers' shared reader each read it in turn.
const feedReaders = 2

// openWriter opens the pool of the writer's one connection, and connects it.
func openWriter(ctx context.Context, dsn string) (*sql.DB, error) {
	writer, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, err
	}
	return writer, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

func openError(path string, err error) error {
	return &registry.Error{Code: registry.CodeInternal, Message: fmt.Sprintf("cannot open database %s", path), Err: err}
}

// Close stops the writer after the requests already queued, and closes the
// connections.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.stopped
		<-s.ckpt.done
		for _, st := range s.wstmts {
			st.Close()
		}
		err = errors.Join(s.ckpt.db.Close(), s.readers.Close(), s.feed.Close())
		// The writer's connection closes last: the last connection to a
		// database checkpoints what is left and removes the WAL.
		if s.wconn != nil {
			err = errors.Join(err, s.wconn.Close(), s.writer.Close())
		}
	})
	return err
}

func (s *Store) Ping(ctx context.Context) error {
	var v int
	if err := s.queryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return s.wrap(err, "reach the database")
	}
	if v != len(migrationNames()) {
		return registry.Errorf(registry.CodeUnavailable, "database schema is version %d, expected %d", v, len(migrationNames()))
	}
	return nil
}

// --- reads ---

// maxReadStatements bounds the read statement cache: filtered lists build
// their SQL from the filters used, and each distinct text would otherwise stay
// prepared on every pool connection forever.
const maxReadStatements = 256

// rstmt returns the prepared read statement for q, or nil when the cache is
// full and q is not in it (the caller then runs q unprepared). The caller
// holds poolMu for reading.
func (s *Store) rstmt(ctx context.Context, q string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	st, ok := s.rstmts[q]
	if !ok {
		if len(s.rstmts) >= maxReadStatements {
			return nil, nil
		}
		var err error
		if st, err = s.readers.PrepareContext(ctx, q); err != nil {
			return nil, err
		}
		s.rstmts[q] = st
	}
	return st, nil
}

// query and queryRow hold poolMu until the statement has its connection,
// which its rows keep until they are closed.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s.poolMu.RLock()
	defer s.poolMu.RUnlock()
	st, err := s.rstmt(ctx, q)
	if err != nil {
		return nil, s.wrap(err, "prepare a query")
	}
	if st == nil {
		rows, err := s.readers.QueryContext(ctx, q, args...)
		return rows, s.wrap(err, "query")
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.wrap(err, "query")
	}
	return rows, nil
}

// feedQuery is query on the change feed's pool (its few statements are
// prepared once: preparing took half of each read's CPU).
func (s *Store) feedQuery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s.poolMu.RLock()
	defer s.poolMu.RUnlock()
	s.stmtMu.Lock()
	st, ok := s.fstmts[q]
	if !ok {
		var err error
		if st, err = s.feed.PrepareContext(ctx, q); err != nil {
			s.stmtMu.Unlock()
			return nil, s.wrap(err, "prepare a query")
		}
		s.fstmts[q] = st
	}
	s.stmtMu.Unlock()
	rows, err := st.QueryContext(ctx, args...)
	return rows, s.wrap(err, "query")
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	s.poolMu.RLock()
	defer s.poolMu.RUnlock()
	st, err := s.rstmt(ctx, q)
	if err != nil || st == nil {
		return s.readers.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// wrap turns a driver error into a registry error.
func (s *Store) wrap(err error, doing string) error {
	if err == nil {
		return nil
	}
	var re *registry.Error
	if errors.As(err, &re) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "database is closed") {
		return errClosed
	}
	if u := unavailable(err); u != "" {
		return &registry.Error{Code: registry.CodeUnavailable, Message: u, Err: err}
	}
	return &registry.Error{Code: registry.CodeInternal, Message: "database error while trying to " + doing, Err: err}
}

// unavailable says what failed when err is a failure that passes once its
// cause is gone (a lock released, space freed, permissions fixed), and ""
// otherwise. It never says where: the message reaches agents and
// unauthenticated probes; the path is in the operator's configuration and the
// driver's error in the log.
func unavailable(err error) string {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return "the database is locked by another process; try again"
	case sqlite3.SQLITE_FULL:
		return "the disk holding the database is full; writes resume once space is freed"
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return "the database cannot be written: its file, its directory or its file system is read-only; writes resume once it is writable"
	case sqlite3.SQLITE_CANTOPEN:
		return "the database file cannot be opened; try again"
	case sqlite3.SQLITE_IOERR:
		return "the database could not be read or written (an I/O error); try again"
	}
	return ""
}

// needsReopen reports whether err may have left the store unable to write
// until its connections are opened again (reopen.go). A connection SQLite
// opened while the file was read-only stays read-only for its life (it fell
// back to a read-only descriptor), whatever happens to the file, and so does
// the -shm mapping that all the process's connections to the file share;
// after an I/O error or a file that could not be opened, fresh connections
// are the safe start.
func needsReopen(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR:
		return true
	}
	return false
}

func isForeignKeyViolation(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}
