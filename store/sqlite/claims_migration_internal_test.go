package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/store/storetest"
)

// TestClaimMigration: a database written before job_claim (schema 16) keeps
// every lease through migration 0017: a leased job in progress reads the same
// lease end after the upgrade and is reclaimed when it ends; an unleased one
// has no claim; a finished job's stale lease column is not carried over.
func TestClaimMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	db := migratedTo(t, path, 16)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := now.UnixMilli()
	leaseEnd := now.Add(40 * time.Second)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
			mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
			VALUES ('cl-1', 'prod', '', '["*"]', '["*"]', '["*"]', 'pull', 'active', 60, 5, '[]', 1, ?, ?, ?)`, []any{ms, ms, ms}},
		{`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at,
			claim_id, claimed_at, claimed_by, lease_seconds, lease_expires_at, last_activity_at)
			VALUES (?, 'cl-1', 'apply', '{}', 'in_progress', 1, ?, ?, 'fc-1', ?, 'cr-1', 60, ?, ?)`,
			[]any{storetest.ClaimMigrationLeased, ms, ms, ms, leaseEnd.UnixMilli(), ms}},
		{`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at,
			claim_id, claimed_at, claimed_by, lease_seconds, last_activity_at)
			VALUES (?, 'cl-1', 'apply', '{}', 'in_progress', 1, ?, ?, 'fc-2', ?, 'cr-1', 0, ?)`,
			[]any{storetest.ClaimMigrationUnleased, ms, ms, ms, ms}},
		{`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at, lease_seconds, lease_expires_at, finished_at)
			VALUES (?, 'cl-1', 'apply', '{}', 'succeeded', 1, ?, ?, 60, ?, ?)`,
			[]any{storetest.ClaimMigrationDone, ms, ms, leaseEnd.UnixMilli(), ms}},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("upgrading schema 16: %v", err)
	}
	defer st.Close()
	storetest.CheckClaimMigration(t, st, leaseEnd)
}

// migratedTo creates a database at path with the first n migrations applied,
// as a tether of schema n left it, and returns it open: a test writes what
// that version wrote, closes it, and opens it with Open to upgrade it.
func migratedTo(t *testing.T, path string, n int) *sql.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v, name := range migrationNames()[:n] {
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO schema_migrations VALUES (?, ?, 0)", v+1, filepath.Base(name)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}
