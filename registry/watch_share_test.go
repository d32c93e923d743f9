package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// countingStore counts the reads the watch makes per change.
type countingStore struct {
	registry.Store
	jobGets, pages atomic.Int64
}

func (s *countingStore) JobGet(ctx context.Context, id string) (*registry.Job, error) {
	s.jobGets.Add(1)
	return s.Store.JobGet(ctx, id)
}

func (s *countingStore) ChangesSince(ctx context.Context, after int64, limit int) ([]registry.Change, error) {
	s.pages.Add(1)
	return s.Store.ChangesSince(ctx, after, limit)
}

// Watchers of one process share their store reads: twenty watchers
// following ten new jobs load each job about once, not twenty times, and
// each gets every job, in its own copy.
func TestWatchersShareFeedReads(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counted := &countingStore{Store: st}
	reg := registry.New(counted, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
	defer reg.Close()
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	c, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "shared", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	since, err := reg.LatestSeq(admin)
	if err != nil {
		t.Fatal(err)
	}
	const watchers, jobs = 20, 10
	ctx, cancel := context.WithTimeout(admin, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	got := make([][]*registry.Job, watchers)
	for w := range watchers {
		events, err := reg.Watch(ctx, registry.WatchParams{Since: since, Kinds: []registry.EntityKind{registry.EntityJob}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range events {
				if ev.Job == nil {
					continue
				}
				if ev.Job.State == "changed-by-watcher" {
					t.Errorf("watcher %d received a job another watcher changed: the records are shared", w)
				}
				got[w] = append(got[w], ev.Job)
				ev.Job.State = "changed-by-watcher" // a consumer may change what it holds
				if len(got[w]) == jobs {
					return
				}
			}
		}()
	}
	for range jobs {
		if _, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply,
			Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for w := range watchers {
		if len(got[w]) != jobs {
			t.Fatalf("watcher %d saw %d of %d jobs", w, len(got[w]), jobs)
		}
	}
	if n := counted.jobGets.Load(); n > 3*jobs {
		t.Errorf("%d watchers loaded %d jobs %d times: the loads are not shared", watchers, jobs, n)
	}
	t.Logf("%d watchers, %d jobs: %d job loads, %d feed pages read", watchers, jobs, counted.jobGets.Load(), counted.pages.Load())
}
