// Package postgres is the registry.Store on PostgreSQL, for several `tether
// serve` replicas sharing one database.
//
// Writes are grouped into transactions by a few writer goroutines (see
// writer.go); the hot ones are single statements (data-modifying CTEs carry a
// transition's history and audit rows). The schema and its triggers are
// explained in migrations/0001_init.sql, and how the change feed is ordered
// while writers run in parallel in migrations/0018_feed_sequencer.sql. Other
// processes' writes reach NotifyChanges through LISTEN/NOTIFY.
//
// The store needs real sessions: NotifyChanges LISTENs on a connection of its
// own, and statements are prepared and cached per connection (pgx's default).
// Behind a pooler such as PgBouncer, use session pooling (or connect the
// replicas directly).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tetherhq/tether/registry"
)

// Options tune the store. Zero values take the defaults.
type Options struct {
	// MaxConns is the size of the connection pool (default 10, or the DSN's
	// pool_max_conns). Each NotifyChanges holds one more connection.
	MaxConns int32
	// Writers is how many write transactions the store runs at once, each
	// on a connection of the pool (default 2, or half the pool when that is
	// smaller, so that reads keep connections; see writer.go). More pay where
	// the database has cores of its own and commits wait on its disk; on one
	// small machine shared with the database they cost more CPU than they
	// save (docs/performance.md).
	Writers int
	// ConnectTimeout bounds connecting when the DSN sets no connect_timeout
	// (default 10s).
	ConnectTimeout time.Duration
	// WriteTimeout bounds a write once started (default 30s). A write that
	// started is not interrupted by its caller's context, so that a caller
	// never reports failure for a change that was committed.
	WriteTimeout time.Duration
	// PollInterval is how often NotifyChanges polls the feed while its
	// LISTEN connection is down (default 1s).
	PollInterval time.Duration
	// MaxReconnectBackoff caps the wait between reconnection attempts of
	// NotifyChanges (default 10s; the first wait is 100ms, then doubles).
	MaxReconnectBackoff time.Duration
}

// Store is a registry.Store on a PostgreSQL database.
type Store struct {
	pool     *pgxpool.Pool
	connConf *pgx.ConnConfig // for NotifyChanges' own connections
	desc     string          // the database, for messages: no password
	opts     Options

	// searchIndex says whether migration 0023 built jobs_search (it does
	// not where pg_trgm is not available): see searchCandidates.
	searchIndex bool

	closing   chan struct{}
	closed    atomic.Bool
	closeOnce sync.Once
	notifiers sync.WaitGroup

	listenMu  sync.Mutex
	listeners map[chan<- struct{}]*atomic.Bool // NotifyChanges' channels: is it LISTENing now?

	// writes feeds the group-commit writers (writer.go); writers counts
	// them and the sequencer, which Close waits for.
	writes  chan *writeRequest
	writers sync.WaitGroup

	// The sequencer's rounds (see sequenced): seqKick asks for one;
	// seqStarted and seqDone number the last started and ended, and
	// seqRound is closed when the running one ends.
	seqKick    chan struct{}
	seqMu      sync.Mutex
	seqStarted int64
	seqDone    int64
	seqRound   chan struct{}

	// The groups' part in positioning the feed (writer.go): pending counts
	// the groups that have not sent their last statements yet, debts the
	// groups that committed without positioning, covered the debts paid;
	// owedKick tells the sequencer of a debt, which it pays if no group
	// does in time.
	pigMu    sync.Mutex
	pending  int
	debts    int64
	covered  int64
	owedKick chan struct{}

	// listenerPID is the backend of the newest LISTEN connection, retried
	// counts transactions run again (see commit), and batches and batched
	// count commits and the writes they held; for tests and benchmarks.
	listenerPID atomic.Uint32
	retried     atomic.Int64
	batches     atomic.Int64
	batched     atomic.Int64
	// piggybacked counts the groups that positioned the feed themselves,
	// kicked the rounds run for debts no group paid in time, rounds all
	// the sequencer's rounds; for tests and benchmarks.
	piggybacked atomic.Int64
	kicked      atomic.Int64
	rounds      atomic.Int64
}

var _ registry.Store = (*Store)(nil)

// Open connects to the database named by dsn (a postgres:// or postgresql://
// URL, or a key=value string; a search_path parameter selects the schema) and
// brings its schema up to date. A database written by a newer tether is
// refused. Concurrent replicas opening one database migrate it once.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.MaxReconnectBackoff <= 0 {
		opts.MaxReconnectBackoff = 10 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parser's message may quote the URL, and with it a password.
		return nil, registry.Errorf(registry.CodeInvalid, "cannot parse the PostgreSQL connection URL; expected postgres://USER@HOST:PORT/DATABASE?sslmode=...")
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(dsn, "pool_max_conns"):
		cfg.MaxConns = 10
	}
	if opts.Writers <= 0 {
		opts.Writers = max(1, min(2, int(cfg.MaxConns)/2))
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	// The store's statements rely on READ COMMITTED (a statement that waited
	// for a row reads it as it now is, and each statement of tether_sequence
	// sees what committed before it), whatever the database's default.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	desc := describe(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, openError(desc, err)
	}
	if err := migrate(ctx, pool, desc); err != nil {
		pool.Close()
		return nil, err
	}
	var searchIndex bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('jobs_search') IS NOT NULL").Scan(&searchIndex); err != nil {
		pool.Close()
		return nil, openError(desc, err)
	}
	s := &Store{
		searchIndex: searchIndex,
		pool:        pool, connConf: cfg.ConnConfig.Copy(), desc: desc, opts: opts,
		closing:   make(chan struct{}),
		listeners: map[chan<- struct{}]*atomic.Bool{},
		writes:    make(chan *writeRequest),
		seqKick:   make(chan struct{}, 1),
		owedKick:  make(chan struct{}, 1),
		seqRound:  make(chan struct{}),
	}
	s.writers.Add(opts.Writers + 1)
	for range opts.Writers {
		go s.writeLoop()
	}
	go s.sequenceLoop()
	return s, nil
}

// Path describes the database for logs and messages: its URL without the
// password.
func (s *Store) Path() string { return s.desc }

// describe renders a connection config as a URL without its password.
func describe(c *pgx.ConnConfig) string {
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), Path: "/" + c.Database}
	if strings.HasPrefix(c.Host, "/") { // a Unix socket directory
		u.Host = ""
		u.RawQuery = url.Values{"host": {c.Host}}.Encode()
	}
	if c.User != "" {
		u.User = url.User(c.User)
	}
	if sp := c.RuntimeParams["search_path"]; sp != "" {
		q := u.Query()
		q.Set("search_path", sp)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func openError(desc string, err error) error {
	if isConnError(err) {
		msg := fmt.Sprintf("cannot connect to PostgreSQL at %s: %s", desc, connErrorText(err))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) { // nobody answered: the server said nothing
			msg += "; check the URL's host and port, and that PostgreSQL is running and listening there"
		}
		return &registry.Error{Code: registry.CodeUnavailable, Message: msg, Err: err}
	}
	return &registry.Error{Code: registry.CodeInternal, Message: fmt.Sprintf("cannot open database %s", desc), Err: err}
}

// connErrorText is the cause of a connection failure, without the
// connection string pgx puts in front of it, on one line: pgx joins the
// errors of each attempt (with sslmode=prefer, the default, one with TLS
// and one without), which are often the same words twice.
func connErrorText(err error) string {
	text := err.Error()
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	if errors.As(err, &ce) {
		if u := errors.Unwrap(ce); u != nil {
			text = u.Error()
		}
	} else if errors.As(err, &pe) {
		text = pe.Message
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// Close stops the change notifiers and closes the connections. Methods called
// afterwards return CodeUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.listenMu.Lock() // no NotifyChanges starts after this
		s.closed.Store(true)
		s.listenMu.Unlock()
		close(s.closing)
		s.writers.Wait()
		s.notifiers.Wait()
		s.pool.Close()
	})
	return nil
}

func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	var v int
	if err := s.pool.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return s.wrap(err, "reach the database")
	}
	if v != len(migrationNames()) {
		return registry.Errorf(registry.CodeUnavailable, "database schema is version %d, expected %d", v, len(migrationNames()))
	}
	return nil
}

// CheckWritable commits one increment of the probe row (migration 0013) in a
// transaction of its own, outside the group-commit writers: the probe row has
// no feed trigger, so it neither waits behind nor delays the agents' writes.
// A standby, a read-only database, a full disk or a server that is down
// fails it.
func (s *Store) CheckWritable(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	if _, err := s.pool.Exec(ctx, "UPDATE store_probe SET probes = probes + 1 WHERE id = 1"); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return &registry.Error{Code: registry.CodeUnavailable, Message: "the database did not complete a one-row write in time", Err: err}
		}
		return s.wrap(err, "write the readiness probe")
	}
	return nil
}

// --- running statements ---

// db is what a write runs on: the pool (one statement, its own transaction)
// or a transaction.
type db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error)
}

var errClosed = registry.Errorf(registry.CodeUnavailable, "the database is closed")

func (s *Store) query(ctx context.Context, doing, sql string, args ...any) (pgx.Rows, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.wrap(err, doing)
	}
	return rows, nil
}

func (s *Store) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if s.closed.Load() {
		return errRow{errClosed}
	}
	return s.pool.QueryRow(ctx, sql, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// collect scans every row with scan, and closes rows.
func collect[T any](s *Store, rows pgx.Rows, doing string, scan func(pgx.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.wrap(err, doing)
		}
		out = append(out, v)
	}
	return out, s.wrap(rows.Err(), doing)
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
	if s.closed.Load() {
		return errClosed
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return &registry.Error{Code: registry.CodeConflict, Message: "the change conflicts with an existing record (" + pe.ConstraintName + ")", Err: err}
	}
	if errors.As(err, &pe) && pe.Code == "22021" {
		// character_not_in_repertoire: a parameter holds a NUL character
		// or bytes that are not UTF-8, which text cannot hold (SQLite
		// stores or finds nothing by such text). It came with the request:
		// the caller's mistake, not the server's failure.
		return &registry.Error{Code: registry.CodeInvalid,
			Message: "the request holds text with a NUL character (\\u0000) or bytes that are not UTF-8, which tether cannot store or look up; remove them", Err: err}
	}
	if u := unavailable(err); u != "" {
		return &registry.Error{Code: registry.CodeUnavailable, Message: u, Err: err}
	}
	return &registry.Error{Code: registry.CodeInternal, Message: "database error while trying to " + doing, Err: err}
}

// unavailable says what failed when err is a failure that passes once its
// cause is gone (the server back, a failover over, space freed), and ""
// otherwise. It never says where: the message reaches agents and
// unauthenticated probes, and a database URL names hosts and users; the
// driver's error, in the log, does.
func unavailable(err error) string {
	if pe := pgErr(err); pe != nil {
		switch {
		case pe.Code == "25006": // read_only_sql_transaction: a standby, or default_transaction_read_only
			return "the database is read-only (a standby, or set read-only); writes resume once it takes writes"
		case pe.Code == "53100": // disk_full
			return "the database server's disk is full; writes resume once space is freed"
		case pe.Code == "57P01", pe.Code == "57P02": // admin_shutdown, crash_shutdown
			return "the database server is shutting down or restarting; try again"
		case pe.Code == "57P03": // cannot_connect_now: starting up, or recovering
			return "the database server is starting up; try again"
		case pe.Code == "53300": // too_many_connections
			return "the database server has no connection to spare; try again"
		case pe.Code == "53200": // out_of_memory
			return "the database server is out of memory; try again"
		case strings.HasPrefix(pe.Code, "08"): // connection exceptions
			return "the connection to the database failed; try again"
		}
		return ""
	}
	if isConnError(err) {
		return "the database cannot be reached; try again"
	}
	return ""
}

// isConnError reports whether err means the server could not be reached or
// the connection broke.
func isConnError(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed), pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") || strings.Contains(msg, "connection refused")
}

// pgErr returns err's PostgreSQL error, if it has one.
func pgErr(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

func isUniqueViolation(err error, constraint string) bool {
	pe := pgErr(err)
	return pe != nil && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}

func isForeignKeyViolation(err error) bool {
	pe := pgErr(err)
	return pe != nil && pe.Code == "23503"
}
