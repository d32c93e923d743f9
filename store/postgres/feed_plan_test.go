package postgres_test

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/store/postgres"
)

// TestPositioningReadsOnlyTheUnpositioned: on a database that is never
// analyzed (autovacuum off), with plans a session made while changes was
// empty, positioning a few rows after 100,000 were positioned reads neither
// the table nor the index entries those left behind (migration 0032). Its
// reads are counted by the backend's statistics (pg_stat_get_xact_*).
func TestPositioningReadsOnlyTheUnpositioned(t *testing.T) {
	ctx := context.Background()
	dsn := freshSchema(t)
	conn := admin(t, dsn)
	migrateTo(t, conn, postgres.SchemaVersion())
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	feed := func(n int) {
		t.Helper()
		if _, err := conn.Exec(ctx, `INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at)
			SELECT 'job', 'j-' || g, 'cl-1', 'upsert', 'queued', 0 FROM generate_series(1, $1::int) g`, n); err != nil {
			t.Fatal(err)
		}
	}
	// Plans made while changes is empty (a new database, a new session).
	feed(3)
	exec("SELECT tether_sequence()")
	// 100,000 rows positioned, in a few rounds, as a busy feed's would be.
	for range 4 {
		feed(25_000)
		exec("SELECT tether_sequence()")
	}

	// The entries the positioned rows left in changes_unsequenced are
	// passed over once (by the first round after them, which marks them
	// dead); within a few rounds, whatever other sessions' snapshots hold
	// back, a round reads only its rows.
	var seqScans, entries, positioned int64
	for round := range 5 {
		feed(20)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The counters are this backend's since it last sent them, which it
		// does only between transactions: the difference within one is the
		// call's.
		const reads = `SELECT pg_stat_get_xact_numscans('changes'::regclass),
			pg_stat_get_xact_tuples_returned('changes_unsequenced'::regclass)`
		var scans0, entries0 int64
		if err := tx.QueryRow(ctx, reads).Scan(&scans0, &entries0); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "SELECT tether_sequence()").Scan(&positioned); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, reads).Scan(&seqScans, &entries); err != nil {
			t.Fatal(err)
		}
		seqScans, entries = seqScans-scans0, entries-entries0
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if positioned != 20 {
			t.Fatalf("round %d positioned %d rows, want 20", round, positioned)
		}
		if seqScans == 0 && entries < 1000 {
			break
		}
	}
	if seqScans != 0 || entries >= 1000 {
		t.Fatalf("positioning 20 rows after 100,000: %d seq scans of changes, %d entries of changes_unsequenced read; want none, and fewer than 1000", seqScans, entries)
	}
	var last, top, rows, positions, unpositioned int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT last FROM feed_position), max(seq), count(*), count(DISTINCT seq),
		count(*) FILTER (WHERE seq IS NULL) FROM changes`).Scan(&last, &top, &rows, &positions, &unpositioned); err != nil {
		t.Fatal(err)
	}
	if last != top || positions != rows || unpositioned != 0 {
		t.Fatalf("feed end %d, highest position %d, %d rows, %d positions, %d unpositioned", last, top, rows, positions, unpositioned)
	}
}
