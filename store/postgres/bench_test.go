package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
	"github.com/tetherhq/tether/store/storetest"
)

// BenchmarkStore runs storetest's benchmark suite on PostgreSQL, each store
// in a schema of its own.
func BenchmarkStore(b *testing.B) {
	serverDSN(b)
	storetest.Benchmark(b, storetest.Bench{
		New:               func(b *testing.B) registry.Store { return openAt(b, freshSchema(b)) },
		WALBytes:          walBytes,
		SeedExpiredLeases: seedExpiredLeases,
		SeedFinished:      seedFinished,
		Million:           million,
	})
}

// walBytes is the server's WAL position in bytes.
func walBytes(b *testing.B) float64 {
	var wal float64
	if err := admin(b, serverDSN(b)).QueryRow(adminCtx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::FLOAT8").Scan(&wal); err != nil {
		b.Fatal(err)
	}
	return wal
}

// million seeds a million jobs on 50 clusters, submitted over 30 days, 2%
// queued and the rest mostly finished. It fails on a plan of the queue
// figures that scans jobs (sorts over one cluster's rows of one state, which
// PostgreSQL may choose for small ranges, are fine) and logs it otherwise.
func million(b *testing.B) (registry.Store, time.Time, string) {
	dsn := freshSchema(b)
	st := openAt(b, dsn)
	now := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	seedMillion(b, dsn, now)

	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	var plan []string
	rows, err := conn.Query(context.Background(), "EXPLAIN "+postgres.QueueStatsSQL(), []string{"cl-0", "cl-1"}, now.Add(-time.Hour).UnixMilli(), int64(100))
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			b.Fatal(err)
		}
		plan = append(plan, line)
	}
	rows.Close()
	if p := strings.Join(plan, "\n"); strings.Contains(p, "Seq Scan on jobs") {
		b.Errorf("the queue figures scan jobs:\n%s", p)
	} else {
		b.Logf("plan:\n%s", p)
	}
	return st, now, "cl-0"
}

// seedMillion inserts 50 clusters and a million jobs (the triggers off: the
// counters and the feed are not what is measured), then analyzes.
func seedMillion(b *testing.B, dsn string, now time.Time) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	ms := now.UnixMilli()
	for _, q := range []string{
		"SET session_replication_role = replica",
		`INSERT INTO clusters (id, name, mode, state, lease_seconds, max_attempts, version, created_at, updated_at, registered_at)
			SELECT 'cl-' || i, 'cluster-' || lpad(i::text, 3, '0'), 'pull', 'active', 60, 5, 1, $1, $1, $1 FROM generate_series(0, 49) i`,
		`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at, claimed_at, finished_at)
			SELECT 'j-' || i, 'cl-' || (i % 50), 'apply', '\x7b7d'::bytea, s, 1, c, c,
				CASE WHEN s IN ('queued', 'canceled', 'expired') THEN NULL ELSE c + 1000 END,
				CASE WHEN s IN ('queued', 'in_progress') THEN NULL ELSE c + 5000 END
			FROM (SELECT i, $1 - (1000000 - i) * 2592::bigint AS c,
				CASE WHEN i >= 980000 THEN 'queued' WHEN i >= 975000 THEN 'in_progress'
					WHEN i % 100 < 90 THEN 'succeeded' WHEN i % 100 < 95 THEN 'failed'
					WHEN i % 100 < 97 THEN 'canceled' WHEN i % 100 < 99 THEN 'noop' ELSE 'expired' END AS s
				FROM generate_series(0, 999999) i) AS g`,
		"SET session_replication_role = DEFAULT",
		"ANALYZE jobs",
		"ANALYZE clusters",
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{ms}
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			b.Fatalf("%s: %v", q[:40], err)
		}
	}
}

// seedExpiredLeases inserts n in_progress jobs whose leases ended a minute
// before now, and their claims, in two statements (the triggers keep counts
// and the feed).
func seedExpiredLeases(b *testing.B, st registry.Store, clusterID string, n int, now time.Time) {
	b.Helper()
	nowMs := now.UnixMilli()
	seed(b, st, `INSERT INTO jobs (id, cluster_id, kind, target_kind, target_namespace, target_name, payload, state, attempt,
			created_at, updated_at, claim_id, claimed_at, claimed_by, lease_seconds, last_activity_at)
		SELECT 'j-reap' || lpad(i::TEXT, 20, '0'), $2, 'apply', 'ConfigMap', 'team-a', 'c' || i,
			convert_to('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"}}', 'UTF8'), 'in_progress', 1,
			$3::BIGINT - 600000, $3::BIGINT - 120000, 'fc-' || i, $3::BIGINT - 120000, 'cr-bench', 60, $3::BIGINT - 120000
		FROM generate_series(0, $1::INTEGER - 1) i`, n, clusterID, nowMs)
	seed(b, st, `INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at)
		SELECT id, 60, $1::BIGINT - 60000 FROM jobs WHERE id LIKE 'j-reap%'`, nowMs)
}

// seedFinished inserts n canceled jobs that finished at finished, each with
// one history entry, in two statements.
func seedFinished(b *testing.B, st registry.Store, clusterID string, n int, finished time.Time) {
	b.Helper()
	ms := finished.UnixMilli()
	seed(b, st, `INSERT INTO jobs (id, cluster_id, kind, target_kind, target_namespace, target_name, payload, state, attempt,
			created_at, updated_at, finished_at)
		SELECT 'j-ret' || lpad(i::TEXT, 20, '0'), $2, 'apply', 'ConfigMap', 'team-a', 'c' || i,
			convert_to('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"}}', 'UTF8'), 'canceled', 1,
			$3::BIGINT - 60000, $3::BIGINT, $3::BIGINT
		FROM generate_series(0, $1::INTEGER - 1) i`, n, clusterID, ms)
	seed(b, st, `INSERT INTO job_history (job_id, at, type, actor, attempt, state, message)
		SELECT id, finished_at, 'canceled', 'admin', 1, 'canceled', 'bench' FROM jobs WHERE id LIKE 'j-ret%'`)
}

// seed runs one statement on st's schema.
func seed(b *testing.B, st registry.Store, q string, args ...any) {
	b.Helper()
	if err := postgres.Exec(adminCtx, st.(*postgres.Store), q, args...); err != nil {
		b.Fatal(err)
	}
}
