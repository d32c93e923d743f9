package postgres

import (
	"context"
	"path"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
)

// ListenerPID is the server process of the store's newest LISTEN connection,
// for tests that cut it.
func ListenerPID(s *Store) uint32 { return s.listenerPID.Load() }

// Retried is how many writes the store ran again: aborted by PostgreSQL
// (deadlock, serialization failure) or failed on a broken connection before
// anything was sent.
func Retried(s *Store) int64 { return s.retried.Load() }

// SchemaVersion is the schema version this build migrates to.
func SchemaVersion() int { return len(migrationNames()) }

// Batching returns how many group commits s made and the writes they held.
func Batching(s *Store) (commits, writes int64) { return s.batches.Load(), s.batched.Load() }

// QueueStatsSQL is the statement JobQueueStats runs.
func QueueStatsSQL() string { return queueStatsSQL }

// Unavailable is what the store says of err when it is a failure that
// passes, "" otherwise.
func Unavailable(err error) string { return unavailable(err) }

// ErrSlowPath is what a pipelined write's read answers when the write needs
// its slow path.
var ErrSlowPath = errSlowPath

// WritePiped is a pipelined write of one statement (see piped): read reads
// its rows; slow, when read answers ErrSlowPath, runs in its place.
func WritePiped(ctx context.Context, s *Store, sql string, args []any, read func(pgx.Rows, error) error, slow func(ctx context.Context, exec func(sql string, args ...any) error) error) error {
	return s.writePiped(ctx, "write", &piped{sql: sql, args: args, read: read}, func(ctx context.Context, q db) error {
		return slow(ctx, func(sql string, args ...any) error {
			_, err := q.Exec(ctx, sql, args...)
			return err
		})
	})
}

// Migrations returns the first n migrations, in order: name and statements.
func Migrations(n int) (names, bodies []string) {
	for _, name := range migrationNames()[:n] {
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			panic(err)
		}
		names, bodies = append(names, path.Base(name)), append(bodies, string(body))
	}
	return names, bodies
}

// Isolation is the default isolation level of the store's connections.
func Isolation(s *Store) (string, error) {
	var level string
	err := s.pool.QueryRow(context.Background(), "SHOW default_transaction_isolation").Scan(&level)
	return level, err
}

// SearchProbe is the statement that finds a search word's candidates.
const SearchProbe = searchProbe

// Exec runs one statement on the store's pool, outside its writer (for
// benchmarks that seed rows in bulk).
func Exec(ctx context.Context, s *Store, sql string, args ...any) error {
	_, err := s.pool.Exec(ctx, sql, args...)
	return err
}

// JobFilter is the WHERE clause and arguments the store reads p's jobs with
// (no search words).
func JobFilter(p registry.JobListParams) (string, []any) {
	var a args
	where := jobFilter(&a, p, nil)
	return where, a
}

// Sequencing returns how many groups positioned the feed themselves, how
// many rounds ran for debts no group paid in time, and how many rounds the
// sequencer ran in all.
func Sequencing(s *Store) (piggybacked, kicked, rounds int64) {
	return s.piggybacked.Load(), s.kicked.Load(), s.rounds.Load()
}
