package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestSearchPlan: a rare search word (issue 30: app-99999 took 3.2 s over a
// million jobs) is read through the trigram index, by rowid, never by a scan
// of jobs; a word under 3 characters, which no trigram serves, still scans.
// storetest's SearchIndex proves both give the answers of the LIKE.
func TestSearchPlan(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	plan := func(search string) string {
		p := registry.JobListParams{Search: search}
		indexed, err := st.indexedWords(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		where, args := jobFilter(p, indexed)
		rows, err := st.readers.QueryContext(ctx, "EXPLAIN QUERY PLAN SELECT id FROM jobs"+where+" ORDER BY created_at DESC, id DESC LIMIT 100", args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return strings.Join(out, "\n")
	}
	if p := plan("app-99999"); !strings.Contains(p, "SCAN job_search VIRTUAL TABLE") || !strings.Contains(p, "SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)") ||
		strings.Contains(p, "SCAN jobs") {
		t.Errorf("a rare word is not read through job_search:\n%s", p)
	}
	if p := plan("ap"); strings.Contains(p, "job_search") {
		t.Errorf("a word of 2 characters asks the trigram index:\n%s", p)
	}
}
