package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestErrorFilterPlan: the count of the jobs that ran out of attempts
// (failed with lease_expired: the stuck reason the console counts at start
// and every 5 s) and their list are one search of the partial index of the
// jobs with an error (migration 0027), the state bound as a parameter: no
// read of every failed job's error.
func TestErrorFilterPlan(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	where, args := jobFilter(registry.JobListParams{States: []registry.JobState{registry.JobFailed}, Error: registry.ErrorLeaseExpired}, nil)
	for _, q := range []string{
		"SELECT COUNT(*) FROM jobs" + where,
		"SELECT " + jobCols + " FROM jobs" + where + " ORDER BY created_at DESC, id DESC LIMIT 100",
	} {
		rows, err := st.readers.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			// The claim's columns are one primary-key lookup each per row read.
			if strings.HasPrefix(detail, "CORRELATED SCALAR SUBQUERY") || strings.HasPrefix(detail, "SEARCH job_claim USING PRIMARY KEY") {
				continue
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if len(plan) != 1 || !strings.Contains(plan[0], "USING") || !strings.Contains(plan[0], "INDEX jobs_error (error=? AND state=?)") {
			t.Errorf("%s\nplan is not one search of jobs_error by error and state:\n%s", q, strings.Join(plan, "\n"))
		}
	}
}
