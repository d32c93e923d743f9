// Package benchseed fills a database with a large fleet fast, for
// benchmarks: the schema comes from store/sqlite (so it is the real one), and
// the rows from a few INSERT ... SELECT statements over a counter in a single
// transaction, through database/sql and modernc.org/sqlite. Only clusters and
// jobs are inserted; the schema's triggers maintain the job counters and the
// change feed, as they do for jobs submitted one by one.
//
// A million jobs take seconds rather than the minutes the registry would need
// job by job, and Cached builds each size once per process.
package benchseed

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/tetherhq/tether/store/sqlite"
)

// Config sizes a fleet.
type Config struct {
	Clusters int
	Jobs     int
	// Now is the fleet's present: jobs were created over the 30 days before
	// it, and every cluster registered at it (so none is silent yet; nothing
	// but clusters and jobs is inserted). Zero is DefaultNow.
	Now time.Time
	// Agents gives every cluster what a registered agent leaves: its used
	// registration token, its credential, and a heartbeat (Ready) a few
	// seconds before Now, as a fleet whose agents are all up.
	Agents bool
}

// DefaultNow is the present of a fleet whose Config leaves Now zero.
var DefaultNow = time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)

// The shape of the jobs, by age: the newest 2% are queued, the next 0.5% in
// progress (half of them with a lease, one in five of those expired), the rest ended:
// 90% succeeded, 5% failed (one in ten of them out of attempts, error
// lease_expired), then canceled, noop and expired.
const (
	queuedShare     = 0.02
	inProgressShare = 0.005
	window          = 30 * 24 * time.Hour
)

// ClusterID is the id of the i-th cluster of a seeded fleet.
func ClusterID(i int) string { return fmt.Sprintf("cl-bench%018d", i) }

// JobID is the id of the i-th job (the oldest is 0).
func JobID(i int) string { return fmt.Sprintf("j-bench%019d", i) }

// Create makes a database at path (which must not exist) holding cfg's fleet.
func Create(ctx context.Context, path string, cfg Config) error {
	if cfg.Now.IsZero() {
		cfg.Now = DefaultNow
	}
	if cfg.Clusters < 1 {
		return fmt.Errorf("benchseed: a fleet needs at least one cluster")
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(OFF)", "foreign_keys(1)", "cache_size(-262144)"} {
		q.Add("_pragma", p)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()

	now := cfg.Now.UnixMilli()
	step := window.Milliseconds() / int64(max(1, cfg.Jobs))
	n := int64(cfg.Jobs)
	queuedFrom := n - int64(float64(n)*queuedShare)
	progressFrom := queuedFrom - int64(float64(n)*inProgressShare)
	stmts := []struct {
		what string
		sql  string
		args []any
	}{
		{"clusters", `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)
			INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
				mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
			SELECT printf('cl-bench%018d', i), printf('cluster-%03d', i), 'bench', '["*"]', '["*"]', '["*"]',
				'pull', 'active', 60, 5, '[]', 1, ? - 2592000000, ? - 2592000000, ? FROM c`,
			[]any{cfg.Clusters, now, now, now}},
		{"jobs", `WITH RECURSIVE j(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM j WHERE i + 1 < ?),
			s(i, created, state, leased) AS (
				SELECT i, ? - (? - i) * ?,
					CASE WHEN i >= ? THEN 'queued' WHEN i >= ? THEN 'in_progress'
						WHEN i % 100 < 90 THEN 'succeeded' WHEN i % 100 < 95 THEN 'failed'
						WHEN i % 100 < 97 THEN 'canceled' WHEN i % 100 < 99 THEN 'noop' ELSE 'expired' END,
					i % 2 = 0
				FROM j)
			INSERT INTO jobs (id, cluster_id, kind, intent, target_kind, target_namespace, target_name, payload, idempotency_key,
				state, attempt, created_at, updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by, lease_seconds,
				last_activity_at, phase, outcome, error, result, finished_at)
			SELECT printf('j-bench%019d', i), printf('cl-bench%018d', i % ?), 'apply', '', 'Deployment',
				printf('ns-%d', i % 50), printf('app-%d', i),
				CAST(printf('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app-%d","namespace":"ns-%d"},"spec":{"replicas":2}}', i, i % 50) AS BLOB),
				'', state,
				CASE WHEN state = 'failed' AND i % 10 = 0 THEN 5 ELSE 1 END,
				created,
				CASE WHEN state IN ('queued', 'in_progress') THEN created ELSE created + 5000 END,
				NULL, 'admin:bench',
				CASE WHEN state = 'in_progress' THEN printf('fc-%020d', i) END,
				CASE WHEN state = 'in_progress' THEN created + 1000 END,
				CASE WHEN state = 'in_progress' THEN 'cr-bench' END,
				CASE WHEN state = 'in_progress' AND leased THEN 60 ELSE 0 END,
				CASE WHEN state = 'in_progress' THEN created + 1000 ELSE NULL END,
				CASE WHEN state = 'in_progress' THEN 'Applying' ELSE '' END,
				CASE WHEN state IN ('queued', 'in_progress', 'canceled', 'expired') THEN '' ELSE state END,
				CASE state WHEN 'failed' THEN (CASE WHEN i % 10 = 0 THEN 'lease_expired' ELSE 'ImagePullBackOff' END)
					WHEN 'canceled' THEN 'canceled' WHEN 'expired' THEN 'expired' ELSE '' END,
				NULL,
				CASE WHEN state IN ('queued', 'in_progress') THEN NULL ELSE created + 5000 END
			FROM s`,
			[]any{cfg.Jobs, now, n, step, queuedFrom, progressFrom, cfg.Clusters}},
		// The store fills the search index as it writes jobs (store/sqlite
		// job_search.go); rows written here join it in one statement.
		{"search index", `INSERT INTO job_search (rowid, id, idempotency_key, target_namespace, target_name, error, kind)
			SELECT rowid, id, idempotency_key, target_namespace, target_name, error, kind FROM jobs`, nil},
		// Half the jobs in progress hold a lease (in their claim), and a
		// tenth of those ran out a minute ago.
		{"job claims", `INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at)
			SELECT id, lease_seconds, CASE WHEN CAST(substr(id, 8) AS INTEGER) % 10 = 0 THEN ? - 60000 ELSE ? + 30000 END
			FROM jobs WHERE state = 'in_progress' AND lease_seconds > 0`,
			[]any{now, now}},
	}
	if cfg.Agents {
		stmts = append(stmts, []struct {
			what string
			sql  string
			args []any
		}{
			{"registration tokens", `INSERT INTO registration_tokens (id, cluster_id, hash, created_at, expires_at, created_by, used_at, credential_id)
				SELECT 'rt-' || substr(id, 4), id, randomblob(32), ? - 60000, ? + 86400000, 'admin:bench', ? - 30000, 'cr-' || substr(id, 4) FROM clusters`,
				[]any{now, now, now}},
			{"credentials", `INSERT INTO credentials (id, cluster_id, hash, capabilities, created_at, expires_at, rotate_after, rotate_until)
				SELECT 'cr-' || substr(id, 4), id, randomblob(32), '["lease"]', ? - 30000, ? + 7776000000, ? + 5184000000, ? + 7776000000 FROM clusters`,
				[]any{now, now, now, now}},
			{"heartbeats", `INSERT INTO cluster_status (cluster_id, last_heartbeat_at, conditions, updated_at)
				SELECT id, ? - 1000 * (rowid % 30), '[{"type":"Ready","status":"True","reason":"AgentRunning"}]', ? - 1000 * (rowid % 30) FROM clusters`,
				[]any{now, now}},
		}...)
	}
	for _, s := range stmts {
		if s.what != "clusters" && cfg.Jobs == 0 && !slices.Contains(agentRows, s.what) {
			continue
		}
		if _, err := tx.ExecContext(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("benchseed: insert %s: %w", s.what, err)
		}
	}
	if cfg.Jobs > 0 {
		// One statement filled the index: FTS5 flushed it as a segment a
		// megabyte and, automatic merging being off (migration 0031),
		// merged none but in crises (16 a level). A store in service has
		// its index merged in the background (registry.SearchMerger), in
		// the same steps as here, until no level holds 4 segments.
		for {
			var before, after int64
			if err := tx.QueryRowContext(ctx, "SELECT total_changes()").Scan(&before); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO job_search (job_search, rank) VALUES ('merge', 2000)"); err != nil {
				return fmt.Errorf("benchseed: merge the search index: %w", err)
			}
			if err := tx.QueryRowContext(ctx, "SELECT total_changes()").Scan(&after); err != nil {
				return err
			}
			if after-before < 2 {
				break
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// agentRows are the statements Agents adds, run with no jobs too.
var agentRows = []string{"registration tokens", "credentials", "heartbeats"}

var (
	mu    sync.Mutex
	built = map[Config]string{}
	dirs  []string
)

// Cached returns the path of a database holding cfg's fleet, building it
// the first time a process asks for that size. Call Cleanup when the
// process is done with them (from TestMain).
func Cached(tb testing.TB, cfg Config) string {
	tb.Helper()
	if cfg.Now.IsZero() {
		cfg.Now = DefaultNow
	}
	mu.Lock()
	defer mu.Unlock()
	if path, ok := built[cfg]; ok {
		return path
	}
	dir, err := os.MkdirTemp("", "tether-benchseed-")
	if err != nil {
		tb.Fatal(err)
	}
	dirs = append(dirs, dir)
	path := filepath.Join(dir, "tether.db")
	start := time.Now()
	if err := Create(context.Background(), path, cfg); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("benchseed: %d clusters and %d jobs in %s", cfg.Clusters, cfg.Jobs, time.Since(start).Round(time.Millisecond))
	built[cfg] = path
	return path
}

// Cleanup removes every database Cached built.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	for _, d := range dirs {
		os.RemoveAll(d)
	}
	dirs, built = nil, map[Config]string{}
}

// Version is the shape of the fleets Create builds: raise it when Create
// changes what it inserts, so that Kept builds them again.
const Version = 1

// Kept returns the path of a database holding cfg's fleet that outlives the
// process: it is built once, in a directory of the system's temporary
// directory named after Version, and reused by later runs (a million jobs
// take a minute or more to seed on a small machine). Store.Open brings a kept
// database's schema up to date, as it does any database. A benchmark that
// changes the fleet must use Cached instead.
func Kept(tb testing.TB, cfg Config) string {
	tb.Helper()
	if cfg.Now.IsZero() {
		cfg.Now = DefaultNow
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("tether-benchseed-v%d", Version))
	name := fmt.Sprintf("fleet-%dc-%dj-%d", cfg.Clusters, cfg.Jobs, cfg.Now.Unix())
	if cfg.Agents {
		name += "-agents"
	}
	path := filepath.Join(dir, name+".db")
	mu.Lock()
	defer mu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	// Built beside its final name and renamed when complete, so that an
	// interrupted run leaves no half-seeded fleet for the next.
	tmp, err := os.MkdirTemp(dir, "building-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	if err := Create(context.Background(), filepath.Join(tmp, "tether.db"), cfg); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tmp, "tether.db"), path); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("benchseed: %d clusters and %d jobs in %s, kept at %s", cfg.Clusters, cfg.Jobs, time.Since(start).Round(time.Millisecond), path)
	return path
}
