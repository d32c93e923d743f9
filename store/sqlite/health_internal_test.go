package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueueStatsPlan: every branch of the queue figures is an index search
// (no scan of jobs, no sort), so they cost the same over a million finished
// jobs as over none.
func TestQueueStatsPlan(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.readers.QueryContext(ctx, "EXPLAIN QUERY PLAN "+queueStatsSQL, "c", int64(0), 100)
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
		plan = append(plan, detail)
	}
	searches := 0
	for _, line := range plan {
		if strings.HasPrefix(line, "SCAN jobs") || strings.Contains(line, "TEMP B-TREE") {
			t.Errorf("plan step %q reads more than an index range:\n%s", line, strings.Join(plan, "\n"))
		}
		if strings.HasPrefix(line, "SEARCH jobs USING") && strings.Contains(line, "jobs_cluster_state") {
			searches++
		}
	}
	if searches != 7 { // oldest, ended, and one per claimed state
		t.Errorf("%d searches of jobs_cluster_state, want 7:\n%s", searches, strings.Join(plan, "\n"))
	}
}
