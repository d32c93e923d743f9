package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/store/postgres"
	"github.com/tetherhq/tether/store/storetest"
)

// TestClaimMigration: a database written before job_claim (schema 16) keeps
// every lease through migration 0017: a leased job in progress reads the same
// lease end after the upgrade and is reclaimed when it ends; an unleased one
// has no claim; a finished job's stale lease column is not carried over.
func TestClaimMigration(t *testing.T) {
	ctx := context.Background()
	dsn := freshSchema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	migrateTo(t, conn, 16)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := now.UnixMilli()
	leaseEnd := now.Add(40 * time.Second)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
			mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
			VALUES ('cl-1', 'prod', '', '["*"]', '["*"]', '["*"]', 'pull', 'active', 60, 5, '[]', 1, $1, $1, $1)`, []any{ms}},
		{`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at,
			claim_id, claimed_at, claimed_by, lease_seconds, lease_expires_at, last_activity_at)
			VALUES ($3, 'cl-1', 'apply', '{}', 'in_progress', 1, $1, $1, 'fc-1', $1, 'cr-1', 60, $2, $1)`,
			[]any{ms, leaseEnd.UnixMilli(), storetest.ClaimMigrationLeased}},
		{`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at,
			claim_id, claimed_at, claimed_by, lease_seconds, last_activity_at)
			VALUES ($2, 'cl-1', 'apply', '{}', 'in_progress', 1, $1, $1, 'fc-2', $1, 'cr-1', 0, $1)`,
			[]any{ms, storetest.ClaimMigrationUnleased}},
		{`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at, lease_seconds, lease_expires_at, finished_at)
			VALUES ($3, 'cl-1', 'apply', '{}', 'succeeded', 1, $1, $1, 60, $2, $1)`,
			[]any{ms, leaseEnd.UnixMilli(), storetest.ClaimMigrationDone}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)

	st := openAt(t, dsn)
	storetest.CheckClaimMigration(t, st, leaseEnd)
}

// migrateTo brings an empty schema to version n, as a tether of that version
// would have.
func migrateTo(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	names, bodies := postgres.Migrations(n)
	for i, body := range bodies {
		if _, err := conn.Exec(ctx, body); err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations VALUES ($1, $2, 0)", i+1, names[i]); err != nil {
			t.Fatal(err)
		}
	}
}
