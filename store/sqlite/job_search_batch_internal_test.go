package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestSearchIndexPerBatch: a batch's new jobs join the search index in one
// statement before it commits (job_search.go). A job inserted and then
// changed in the same batch is indexed as changed, once; one inserted and
// deleted is not indexed; a request that fails after its insert leaves
// nothing in the index when the batch is run again request by request; and
// FTS5 finds its index sound.
func TestSearchIndexPerBatch(t *testing.T) {
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	s, err := Open(ctx, filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _, err := registry.New(s, registry.Config{}).CreateCluster(ctx, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"*"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_800_000_000_000).UTC()
	insert := func(tx *txn, id, name string) error {
		_, _, err := tx.insertJob(registry.JobInsertParams{
			Job: registry.Job{ID: id, ClusterID: c.ID, Kind: registry.KindApply, Payload: []byte(`{}`), State: registry.JobQueued,
				Attempt: 1, CreatedAt: now, UpdatedAt: now, Target: registry.Target{Kind: "ConfigMap", Namespace: "default", Name: name}},
			History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted, Actor: "admin:test"},
			Audit:   registry.AuditEntry{At: now, Actor: "admin:test", Action: registry.AuditJobSubmit, ClusterID: c.ID, TargetKind: "job", TargetID: id},
		})
		return err
	}
	boom := errors.New("failed after its insert")
	errText := "zeta-failure"
	reqs := []func(*txn) error{
		func(tx *txn) error {
			if err := insert(tx, "j-alpha", "alpha-one"); err != nil {
				return err
			}
			if err := insert(tx, "j-gamma", "gamma-three"); err != nil {
				return err
			}
			_, err := tx.exec("DELETE FROM jobs WHERE id = 'j-gamma'")
			return err
		},
		func(tx *txn) error {
			// The job another request of the batch inserted, changed.
			_, applied, err := tx.updateJob(registry.JobUpdateParams{ID: "j-alpha", FromStates: []registry.JobState{registry.JobQueued},
				Set: registry.JobSet{Now: now, State: registry.JobFailed, Outcome: registry.OutcomeFailed, Error: &errText, FinishedAt: now}})
			if err == nil && !applied {
				err = errors.New("the update did not apply")
			}
			return err
		},
		func(tx *txn) error {
			if err := insert(tx, "j-delta", "delta-four"); err != nil {
				return err
			}
			return boom
		},
		func(tx *txn) error { return insert(tx, "j-beta", "beta-two") },
	}
	// The writer runs them as one batch: they are queued while it is held
	// in the request before them.
	held, release := make(chan struct{}), make(chan struct{})
	blocker := &writeRequest{ctx: ctx, done: make(chan error, 1), fn: func(*txn) error {
		close(held)
		<-release
		return nil
	}}
	s.queue <- blocker
	<-held
	batch := make([]*writeRequest, len(reqs))
	for i, fn := range reqs {
		batch[i] = &writeRequest{ctx: ctx, fn: fn, done: make(chan error, 1)}
		s.queue <- batch[i]
	}
	close(release)
	if err := <-blocker.done; err != nil {
		t.Fatal(err)
	}
	for i, req := range batch {
		if err := <-req.done; (i == 2) != errors.Is(err, boom) {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	find := func(word string) []string {
		rows, err := s.query(ctx, "SELECT jobs.id FROM job_search JOIN jobs ON jobs.rowid = job_search.rowid WHERE job_search MATCH ? ORDER BY jobs.id", matchPhrase(word))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
		}
		return got
	}
	for word, want := range map[string][]string{
		"zeta-fail": {"j-alpha"}, "alpha-one": {"j-alpha"}, "beta-two": {"j-beta"}, "gamma": nil, "delta": nil, "apply": {"j-alpha", "j-beta"},
	} {
		if got := find(word); !slices.Equal(got, want) {
			t.Errorf("the index finds %q in %v, want %v", word, got, want)
		}
	}
	// A later change of the job replaces its entry: nothing of the old one
	// is left to find.
	omega := "omega-failure"
	if _, _, err := s.JobUpdate(ctx, registry.JobUpdateParams{ID: "j-alpha", Set: registry.JobSet{Now: now, Error: &omega}}); err != nil {
		t.Fatal(err)
	}
	for word, want := range map[string][]string{"zeta-fail": nil, "omega-fail": {"j-alpha"}, "alpha-one": {"j-alpha"}} {
		if got := find(word); !slices.Equal(got, want) {
			t.Errorf("the index finds %q in %v, want %v", word, got, want)
		}
	}
	if err := s.write(ctx, func(tx *txn) error {
		_, err := tx.exec("INSERT INTO job_search (job_search, rank) VALUES ('integrity-check', 0)")
		return err
	}); err != nil {
		t.Fatalf("FTS5's integrity check: %v", err)
	}
}
