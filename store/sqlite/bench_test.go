package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/benchseed"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
	"github.com/tetherhq/tether/store/storetest"
)

// BenchmarkStore runs storetest's benchmark suite on SQLite, each store in
// a file of its own.
func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, storetest.Bench{
		New:               func(b *testing.B) registry.Store { return openAt(b, filepath.Join(b.TempDir(), "tether.db")) },
		SeedExpiredLeases: seedExpiredLeases,
		SeedFinished:      seedFinished,
		Million:           million,
	})
}

// million opens a copy of benchseed's million-job fleet (50 clusters),
// built once per process.
func million(b *testing.B) (registry.Store, time.Time, string) {
	path := benchseed.Cached(b, benchseed.Config{Clusters: 50, Jobs: 1_000_000})
	return openAt(b, path), benchseed.DefaultNow, benchseed.ClusterID(0)
}

// seedExpiredLeases inserts n in_progress jobs whose leases ended a minute
// before now, and their claims, in two statements (the triggers keep counts
// and the feed).
func seedExpiredLeases(b *testing.B, st registry.Store, clusterID string, n int, now time.Time) {
	b.Helper()
	db := seedDB(b, st)
	defer db.Close()
	nowMs := now.UnixMilli()
	_, err := db.Exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)
		INSERT INTO jobs (id, cluster_id, kind, target_kind, target_namespace, target_name, payload, state, attempt,
			created_at, updated_at, claim_id, claimed_at, claimed_by, lease_seconds, last_activity_at)
		SELECT printf('j-reap%020d', i), ?, 'apply', 'ConfigMap', 'team-a', 'c' || i,
			'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"}}', 'in_progress', 1,
			? - 600000, ? - 120000, 'fc-' || i, ? - 120000, 'cr-bench', 60, ? - 120000 FROM c`,
		n, clusterID, nowMs, nowMs, nowMs, nowMs)
	if err != nil {
		b.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at)
		SELECT id, 60, ? - 60000 FROM jobs WHERE id LIKE 'j-reap%'`, nowMs)
	if err != nil {
		b.Fatal(err)
	}
}

// seedFinished inserts n canceled jobs that finished at finished, each with
// one history entry, in two statements.
func seedFinished(b *testing.B, st registry.Store, clusterID string, n int, finished time.Time) {
	b.Helper()
	db := seedDB(b, st)
	defer db.Close()
	ms := finished.UnixMilli()
	if _, err := db.Exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)
		INSERT INTO jobs (id, cluster_id, kind, target_kind, target_namespace, target_name, payload, state, attempt,
			created_at, updated_at, finished_at)
		SELECT printf('j-ret%020d', i), ?, 'apply', 'ConfigMap', 'team-a', 'c' || i,
			'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"}}', 'canceled', 1,
			? - 60000, ?, ? FROM c`, n, clusterID, ms, ms, ms); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO job_history (job_id, at, type, actor, attempt, state, message)
		SELECT id, finished_at, 'canceled', 'admin', 1, 'canceled', 'bench' FROM jobs WHERE id LIKE 'j-ret%'`); err != nil {
		b.Fatal(err)
	}
}

// seedDB opens st's database file beside it, for statements that seed rows
// in bulk.
func seedDB(b *testing.B, st registry.Store) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+st.(*sqlite.Store).Path()+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		b.Fatal(err)
	}
	return db
}
