package postgres_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/internal/testing/benchseed"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// seedJobs opens a store on a fresh schema and fills it with n jobs over 50
// clusters, in the shape of internal/testing/benchseed's fleet (ids, names app-N,
// namespaces ns-N, states and errors by age), by one INSERT ... SELECT.
func seedJobs(t testing.TB, n int) (*postgres.Store, *pgx.Conn, string) {
	t.Helper()
	dsn := freshSchema(t)
	st := openAt(t, dsn)
	conn := admin(t, dsn)
	now := benchseed.DefaultNow.UnixMilli()
	step := (30 * 24 * time.Hour).Milliseconds() / int64(n)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
			mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
		SELECT 'cl-bench' || lpad(i::TEXT, 18, '0'), 'cluster-' || lpad(i::TEXT, 3, '0'), 'bench', '["*"]', '["*"]', '["*"]',
			'pull', 'active', 60, 5, '[]', 1, 0, 0, 0 FROM generate_series(0, 49) i`,
		`INSERT INTO jobs (id, cluster_id, kind, target_kind, target_namespace, target_name, payload, state, attempt,
			created_at, updated_at, submitted_by, outcome, error, finished_at)
		SELECT 'j-bench' || lpad(i::TEXT, 19, '0'), 'cl-bench' || lpad((i % 50)::TEXT, 18, '0'), 'apply', 'Deployment',
			'ns-' || (i % 50), 'app-' || i, '\x7b7d', s, 1, c, c + 5000, 'admin:bench',
			CASE WHEN s IN ('succeeded', 'failed') THEN s ELSE '' END,
			CASE s WHEN 'failed' THEN (CASE WHEN i % 10 = 0 THEN 'lease_expired' ELSE 'ImagePullBackOff' END)
				WHEN 'canceled' THEN 'canceled' WHEN 'expired' THEN 'expired' ELSE '' END,
			CASE WHEN s IN ('queued', 'in_progress') THEN NULL ELSE c + 5000 END
		FROM (SELECT i, ` + strconv.FormatInt(now, 10) + ` - (` + strconv.Itoa(n) + ` - i::BIGINT) * ` + strconv.FormatInt(step, 10) + ` AS c,
			CASE WHEN i >= ` + strconv.Itoa(n*98/100) + ` THEN 'queued' WHEN i % 100 < 90 THEN 'succeeded'
				WHEN i % 100 < 95 THEN 'failed' WHEN i % 100 < 97 THEN 'canceled' WHEN i % 100 < 99 THEN 'noop' ELSE 'expired' END AS s
			FROM generate_series(0, ` + strconv.Itoa(n-1) + `) i) j`,
		`ANALYZE jobs`, `ANALYZE clusters`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return st, conn, dsn
}

// TestSearchPlan: a rare search word (issue 30: app-99999 read every job)
// is looked up through jobs_search, and its page read from its few jobs by
// primary key, whatever the planner makes of the ILIKE's row count.
func TestSearchPlan(t *testing.T) {
	st, conn, _ := seedJobs(t, 20000)
	ctx := context.Background()
	rows, err := conn.Query(ctx, "EXPLAIN "+postgres.SearchProbe, "%app-9999%", 2001)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "\n"); !strings.Contains(p, "jobs_search") {
		t.Errorf("a rare word is not looked up through jobs_search:\n%s", p)
	}
	for search, want := range map[string]int{"app-9999": 1, "APP-1999": 11, "ns-7 failed": 0, "lease_expired": 100, "ap": 100} {
		jobs, err := st.JobList(ctx, registry.JobListParams{Search: search})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != want {
			t.Errorf("%q: %d jobs, want %d", search, len(jobs), want)
		}
	}
}

// BenchmarkJobSearch measures the first page of the jobs filtered by a
// word, over $TETHER_BENCH_JOBS jobs (200,000 by default), with jobs_search
// and then without it (as where pg_trgm is not available, and as before
// migration 0023).
func BenchmarkJobSearch(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("TETHER_BENCH_JOBS")); err == nil && v > 0 {
		n = v
	}
	st, conn, dsn := seedJobs(b, n)
	run := func(index string, st *postgres.Store) {
		for _, word := range []string{"app-99999", "app-1", "lease_expired", "cluster-007", "zzz", "app-1x", "ImagePullBackOffx", "bench0000000000000199999"} {
			b.Run(index+"/"+word, func(b *testing.B) {
				for b.Loop() {
					if _, err := st.JobList(context.Background(), registry.JobListParams{Search: word, Limit: 100}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	run("index", st)
	if _, err := conn.Exec(context.Background(), "DROP INDEX jobs_search"); err != nil {
		b.Fatal(err)
	}
	run("noindex", openAt(b, dsn))
}
