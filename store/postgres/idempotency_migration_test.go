package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/store/storetest"
)

// TestIdempotencyKeyMigration: migration 0020 carries over the keys of open
// jobs and of the jobs created in the last day (see the SQLite store's).
func TestIdempotencyKeyMigration(t *testing.T) {
	ctx := context.Background()
	dsn := freshSchema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	migrateTo(t, conn, 19)
	now := time.Now().UTC().Truncate(time.Millisecond)
	ms := now.UnixMilli()
	if _, err := conn.Exec(ctx, `INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
		mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
		VALUES ('cl-1', 'prod', '', '["*"]', '["*"]', '["*"]', 'pull', 'active', 60, 5, '[]', 1, $1, $1, $1)`, ms); err != nil {
		t.Fatal(err)
	}
	for _, j := range storetest.IdempotencyMigrationJobs {
		at := now.Add(-j.Age).UnixMilli()
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, cluster_id, kind, payload, idempotency_key, state, attempt, created_at, updated_at)
			VALUES ($1, 'cl-1', 'apply', '{}', $2, $3, 1, $4, $4)`, j.ID, j.Key, j.State, at); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	storetest.CheckIdempotencyMigration(t, openAt(t, dsn), now)
}
