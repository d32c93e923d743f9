package benchseed

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/store/postgres"
)

// KeptPostgres is Kept on the PostgreSQL server at server (a URL DSN): the
// fleet lives in a schema of its own named after Version and cfg, built once
// and reused by later runs; it returns a DSN whose search_path is that
// schema. The rows have the shape Create gives SQLite; they are inserted with
// the triggers off and the job counters filled from them, so that the change
// feed holds none of them (as after a fold of a long-running fleet's).
func KeptPostgres(tb testing.TB, server string, cfg Config) string {
	tb.Helper()
	if cfg.Now.IsZero() {
		cfg.Now = DefaultNow
	}
	ctx := context.Background()
	schema := fmt.Sprintf("tether_benchseed_v%d_%dc_%dj_%d", Version, cfg.Clusters, cfg.Jobs, cfg.Now.Unix())
	u, err := url.Parse(server)
	if err != nil || !strings.Contains(server, "://") {
		tb.Fatalf("benchseed: %s is not a postgres:// URL", server)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dsn := u.String()

	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	// pg_trgm (the word filter's index, migration 0023) is created in the
	// schema first on the search path when it is missing: in a test's, it
	// and every index built on it, this fleet's included, would go when
	// that schema is dropped. Made in public first, it stays.
	_, _ = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
	// A schema is complete once it holds the marker table, made last, and
	// (where pg_trgm is) the word filter's index.
	var done bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'benchseed_done')
		AND (NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')
			OR EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_search'))`, schema).Scan(&done); err != nil {
		tb.Fatal(err)
	}
	if done {
		return dsn
	}
	start := time.Now()
	for _, s := range []string{"DROP SCHEMA IF EXISTS " + schema + " CASCADE", "CREATE SCHEMA " + schema} {
		if _, err := conn.Exec(ctx, s); err != nil {
			tb.Fatal(err)
		}
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	st.Close()

	now := cfg.Now.UnixMilli()
	n := int64(cfg.Jobs)
	step := window.Milliseconds() / max(1, n)
	queuedFrom := n - int64(float64(n)*queuedShare)
	progressFrom := queuedFrom - int64(float64(n)*inProgressShare)
	tx, err := conn.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, s := range []struct {
		what string
		sql  string
		args []any
	}{
		{"search path", "SET LOCAL search_path TO " + schema, nil},
		{"triggers off", "SET LOCAL session_replication_role = replica", nil},
		{"clusters", `INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
				mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
			SELECT 'cl-bench' || lpad(i::TEXT, 18, '0'), 'cluster-' || lpad(i::TEXT, 3, '0'), 'bench', '["*"]', '["*"]', '["*"]',
				'pull', 'active', 60, 5, '[]', 1, $2::BIGINT - 2592000000, $2::BIGINT - 2592000000, $2::BIGINT
			FROM generate_series(0, $1::INT - 1) i`, []any{cfg.Clusters, now}},
		{"jobs", `INSERT INTO jobs (id, cluster_id, kind, intent, target_kind, target_namespace, target_name, payload, idempotency_key,
				state, attempt, created_at, updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by, lease_seconds,
				last_activity_at, phase, outcome, error, result, finished_at)
			SELECT 'j-bench' || lpad(i::TEXT, 19, '0'), 'cl-bench' || lpad((i % $7::INT)::TEXT, 18, '0'), 'apply', '', 'Deployment',
				'ns-' || (i % 50), 'app-' || i,
				convert_to('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app-' || i || '","namespace":"ns-' || (i % 50) || '"},"spec":{"replicas":2}}', 'UTF8'),
				'', state,
				CASE WHEN state = 'failed' AND i % 10 = 0 THEN 5 ELSE 1 END,
				created,
				CASE WHEN state IN ('queued', 'in_progress') THEN created ELSE created + 5000 END,
				NULL, 'admin:bench',
				CASE WHEN state = 'in_progress' THEN 'fc-' || lpad(i::TEXT, 20, '0') END,
				CASE WHEN state = 'in_progress' THEN created + 1000 END,
				CASE WHEN state = 'in_progress' THEN 'cr-bench' END,
				CASE WHEN state = 'in_progress' AND leased THEN 60 ELSE 0 END,
				CASE WHEN state = 'in_progress' THEN created + 1000 END,
				CASE WHEN state = 'in_progress' THEN 'Applying' ELSE '' END,
				CASE WHEN state IN ('queued', 'in_progress', 'canceled', 'expired') THEN '' ELSE state END,
				CASE state WHEN 'failed' THEN (CASE WHEN i % 10 = 0 THEN 'lease_expired' ELSE 'ImagePullBackOff' END)
					WHEN 'canceled' THEN 'canceled' WHEN 'expired' THEN 'expired' ELSE '' END,
				NULL,
				CASE WHEN state IN ('queued', 'in_progress') THEN NULL ELSE created + 5000 END
			FROM (SELECT i, $2::BIGINT - ($3::BIGINT - i) * $4::BIGINT AS created,
				CASE WHEN i >= $5 THEN 'queued' WHEN i >= $6 THEN 'in_progress'
					WHEN i % 100 < 90 THEN 'succeeded' WHEN i % 100 < 95 THEN 'failed'
					WHEN i % 100 < 97 THEN 'canceled' WHEN i % 100 < 99 THEN 'noop' ELSE 'expired' END AS state,
				i % 2 = 0 AS leased
				FROM generate_series(0, $1::BIGINT - 1) i) s`,
			[]any{n, now, n, step, queuedFrom, progressFrom, cfg.Clusters}},
		{"job claims", `INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at)
			SELECT id, lease_seconds, CASE WHEN substr(id, 8)::BIGINT % 10 = 0 THEN $1::BIGINT - 60000 ELSE $1::BIGINT + 30000 END
			FROM jobs WHERE state = 'in_progress' AND lease_seconds > 0`, []any{now}},
		{"job counts", `INSERT INTO job_counts (cluster_id, state, n) SELECT cluster_id, state, count(*) FROM jobs GROUP BY cluster_id, state`, nil},
		{"marker", "CREATE TABLE benchseed_done ()", nil},
	} {
		if _, err := tx.Exec(ctx, s.sql, s.args...); err != nil {
			tb.Fatalf("benchseed: %s: %v", s.what, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
	for _, s := range []string{"ANALYZE " + schema + ".jobs", "ANALYZE " + schema + ".clusters", "ANALYZE " + schema + ".job_claim"} {
		if _, err := conn.Exec(ctx, s); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Logf("benchseed: %d clusters and %d jobs in %s, kept in schema %s", cfg.Clusters, cfg.Jobs, time.Since(start).Round(time.Millisecond), schema)
	return dsn
}
