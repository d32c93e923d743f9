package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/postgres"
)

// BenchmarkQueueHealthMillion reads queue health over a million jobs on 50
// clusters, submitted over 30 days, 2% queued and the rest mostly finished:
// the whole fleet (the overview) and one cluster (its detail). It fails on
// a plan that scans jobs (sorts over one cluster's rows of one state, which
// PostgreSQL may choose for small ranges, are fine) and logs it otherwise.
func BenchmarkQueueHealthMillion(b *testing.B) {
	dsn := freshSchema(b)
	st := openAt(b, dsn)
	now := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	seedMillion(b, dsn, now)
	clock := clocktest.New()
	clock.Set(now)
	reg := registry.New(st, registry.Config{Clock: clock})
	defer reg.Close()

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

	b.Run("fleet", func(b *testing.B) {
		for b.Loop() {
			if _, err := reg.FleetQueueHealth(adminCtx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
	b.Run("cluster", func(b *testing.B) {
		for b.Loop() {
			if _, err := reg.QueueHealth(adminCtx, "cl-0"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
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
