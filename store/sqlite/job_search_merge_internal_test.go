package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestSearchIndexMergedInBackground: the writer's batches add a segment each
// to the search index and no longer merge it (migration 0031), short of
// FTS5's crisis merge at 16 segments a level; the background merger
// (registry.SearchMerger, run by tether serve) merges them in bounded steps,
// down to a few, and the index stays sound.
func TestSearchIndexMergedInBackground(t *testing.T) {
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	st, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Config{})
	c, _, err := reg.CreateCluster(ctx, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"*"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	segments := func() int {
		t.Helper()
		var n int
		if err := st.readers.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM job_search_idx`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Pages of 64 bytes (FTS5's pgsz, 4,050 by default), so that a few
	// jobs' trigrams fill several and a step of one page merges a part.
	if err := st.write(ctx, func(tx *txn) error {
		_, err := tx.exec(`INSERT INTO job_search (job_search, rank) VALUES ('pgsz', 64)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Submitted one by one: a batch, and a segment, each.
	const batches = 15
	for i := range batches {
		payload := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"default"}}`, i)
		if _, _, err := reg.SubmitJob(ctx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := segments(); n != batches {
		t.Fatalf("%d segments after %d batches: the writes merged the index (automerge on?)", n, batches)
	}

	// One page a step, one step a run: each run merges a little, and it
	// takes several to merge them all.
	m := registry.NewSearchMerger(reg, registry.SearchMergerConfig{Pages: 1, Steps: 1})
	runs := 0
	for ; runs < 100; runs++ {
		rep, err := m.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Steps == 0 {
			break
		}
	}
	if runs < 2 || runs == 100 {
		t.Fatalf("merged in %d runs of one page, want several and an end", runs)
	}
	t.Logf("%d segments merged in %d runs of one step of one page", batches, runs)
	if n := segments(); n > 3 {
		t.Errorf("%d segments once merged, want at most 3", n)
	}
	if err := st.write(ctx, func(tx *txn) error {
		_, err := tx.exec(`INSERT INTO job_search (job_search, rank) VALUES ('integrity-check', 0)`)
		return err
	}); err != nil {
		t.Errorf("integrity-check: %v", err)
	}
	for i := range batches {
		word := fmt.Sprintf("cm-%d", i)
		want := 0
		for j := range batches {
			if strings.Contains(fmt.Sprintf("cm-%d", j), word) {
				want++
			}
		}
		jobs, err := reg.ListJobs(ctx, registry.JobListParams{Search: word, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != want {
			t.Errorf("search %s found %d jobs, want %d", word, len(jobs), want)
		}
	}

	// With nothing merging it (no serve, or the merger behind), FTS5
	// still merges a level once it holds 16 segments (its crisismerge),
	// as docs/operations.md promises: the index stays within a few dozen.
	const more = 80
	for i := range more {
		payload := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late-%d","namespace":"default"}}`, i)
		if _, _, err := reg.SubmitJob(ctx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := segments(); n > 32 {
		t.Errorf("%d segments after %d more batches with nothing merging, want a few dozen at most", n, more)
	}
	if jobs, err := reg.ListJobs(ctx, registry.JobListParams{Search: "late-79", Limit: 100}); err != nil || len(jobs) != 1 {
		t.Errorf("search late-79 found %d jobs (%v), want 1", len(jobs), err)
	}
}
