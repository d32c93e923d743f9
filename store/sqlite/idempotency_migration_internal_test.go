package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/store/storetest"
)

// TestIdempotencyKeyMigration: migration 0020 carries over the keys of open
// jobs and of the jobs created in the last day, so that a producer's retry
// right after the upgrade answers the job it made before.
func TestIdempotencyKeyMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	db := migratedTo(t, path, 19)
	now := time.Now().UTC().Truncate(time.Millisecond)
	ms := now.UnixMilli()
	if _, err := db.ExecContext(ctx, `INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
		mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
		VALUES ('cl-1', 'prod', '', '["*"]', '["*"]', '["*"]', 'pull', 'active', 60, 5, '[]', 1, ?, ?, ?)`, ms, ms, ms); err != nil {
		t.Fatal(err)
	}
	for _, j := range storetest.IdempotencyMigrationJobs {
		at := now.Add(-j.Age).UnixMilli()
		if _, err := db.ExecContext(ctx, `INSERT INTO jobs (id, cluster_id, kind, payload, idempotency_key, state, attempt, created_at, updated_at)
			VALUES (?, 'cl-1', 'apply', '{}', ?, ?, 1, ?, ?)`, j.ID, j.Key, j.State, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("upgrading schema 19: %v", err)
	}
	defer st.Close()
	storetest.CheckIdempotencyMigration(t, st, now)
}
