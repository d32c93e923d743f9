package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestRetriesPlan: a job's retries (GetJob's RetriedBy) are one search of the
// partial index of retries, in the order they are shown: no scan of jobs, no
// sort, however many jobs there are.
func TestRetriesPlan(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	where, args := jobFilter(registry.JobListParams{RetryOf: "j-1"}, nil)
	rows, err := st.readers.QueryContext(ctx, "EXPLAIN QUERY PLAN SELECT "+jobCols+" FROM jobs"+where+" ORDER BY created_at, id LIMIT 100", args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
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
	if len(plan) != 1 || !strings.HasPrefix(plan[0], "SEARCH jobs USING INDEX jobs_retry_of") {
		t.Errorf("plan is not one search of jobs_retry_of:\n%s", strings.Join(plan, "\n"))
	}
}
