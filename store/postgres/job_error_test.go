package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// TestErrorFilterPlan: the count of the jobs that ran out of attempts
// (failed with lease_expired: the stuck reason the console counts at start
// and every 5 s) reads the partial index of the jobs with an error
// (migration 0027), not every failed job, even in a generic plan (a
// prepared statement's, which knows no parameter's value).
func TestErrorFilterPlan(t *testing.T) {
	st, conn, _ := seedJobs(t, 20000)
	ctx := context.Background()
	p := registry.JobListParams{States: []registry.JobState{registry.JobFailed}, Error: registry.ErrorLeaseExpired}
	where, args := postgres.JobFilter(p)
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	// The arguments as literals, for EXPLAIN EXECUTE.
	var lits []string
	for _, a := range args {
		lits = append(lits, "'"+strings.ReplaceAll(fmt.Sprint(a), "'", "''")+"'")
	}
	for i, q := range []string{
		"SELECT COUNT(*) FROM jobs" + where,
		"SELECT id FROM jobs" + where + " ORDER BY created_at DESC, id DESC LIMIT 100",
	} {
		name := fmt.Sprintf("q%d", i)
		if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+q); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+name+"("+strings.Join(lits, ", ")+")")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "jobs_error") || !strings.Contains(p, "$1") {
			t.Errorf("%s\ndoes not read jobs_error in a generic plan:\n%s", q, p)
		}
	}
	// The seed's job i failed by lease_expired when i % 100 = 90, but for
	// the newest 2% (queued): 196 of 20000.
	if n, err := st.JobCount(ctx, p); err != nil || n != 196 {
		t.Errorf("attempts exhausted: %d (%v), want 196", n, err)
	}
}
