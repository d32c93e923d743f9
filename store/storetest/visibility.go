package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testVisibility: a job handed to one poll is hidden from the other polls of
// its cluster for the visibility window unless acked, then offered again; a
// requeue shows it at once.
func testVisibility(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod")
	var ids []string
	for range 30 {
		ids = append(ids, e.submit(a.Cluster.ID, nil).ID)
	}
	const pollers = 10
	got := make(chan []registry.Job, pollers)
	var wg sync.WaitGroup
	for range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 5)
			if err != nil {
				t.Errorf("PollJobs: %v", err)
			}
			got <- jobs
		}()
	}
	wg.Wait()
	close(got)
	seen := map[string]int{}
	for jobs := range got {
		for _, j := range jobs {
			seen[j.ID]++
		}
	}
	if len(seen) != 30 {
		t.Fatalf("%d pollers received %d distinct jobs of 30", pollers, len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("job %s was handed to %d polls inside the visibility window", id, n)
		}
	}
	if jobs, _ := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 100); len(jobs) != 0 {
		t.Fatalf("a poll inside the window got %d hidden jobs", len(jobs))
	}
	// Hiding a job is no change a watcher sees: delivering writes no feed row.
	before, _, err := e.store.ChangesLatest(e.ctx)
	wantNoErr(t, err)
	e.clock.Advance(registry.DefaultVisibilityWindow)
	delivered, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 100)
	wantNoErr(t, err)
	after, _, err := e.store.ChangesLatest(e.ctx)
	wantNoErr(t, err)
	if len(delivered) != 30 || after != before {
		t.Fatalf("a poll delivered %d jobs and moved the change feed from %d to %d; want 30 jobs, no feed row", len(delivered), before, after)
	}
	// Acked ones are gone for good; the rest come back after the window.
	_, err = e.reg.AckJob(e.ctx, a, ids[0])
	wantNoErr(t, err)
	e.clock.Advance(registry.DefaultVisibilityWindow)
	jobs, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 100)
	wantNoErr(t, err)
	if len(jobs) != 29 || jobs[0].ID != ids[1] {
		t.Fatalf("after the window: %d jobs (first %v), want the 29 not acked, oldest first", len(jobs), jobIDs(jobs[:min(1, len(jobs))]))
	}
	// A requeued job is offered at once, window or not.
	_, err = e.reg.RequeueJob(e.ctx, ids[0], "")
	wantNoErr(t, err)
	jobs, err = e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 100)
	wantNoErr(t, err)
	if len(jobs) != 1 || jobs[0].ID != ids[0] {
		t.Fatalf("after a requeue: %v, want the requeued job", jobIDs(jobs))
	}

	// So is a job the reaper put back in the queue when its lease ran out
	// inside the window: its agent is gone, and nobody else may wait for
	// the rest of the window.
	_, tok := e.cluster("short-lease", func(s *registry.ClusterSpec) { s.Policy.LeaseSeconds = registry.MinLeaseSeconds })
	b, _ := e.register(tok, registry.CapabilityLease)
	j := e.submit(b.Cluster.ID, nil)
	if jobs, _ := e.reg.PollJobs(e.ctx, b, b.Cluster.ID, 10); len(jobs) != 1 {
		t.Fatalf("first poll: %v", jobIDs(jobs))
	}
	_, err = e.reg.AckJob(e.ctx, b, j.ID)
	wantNoErr(t, err)
	e.clock.Advance(registry.MinLeaseSeconds*time.Second + time.Second)
	rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.Requeued != 1 {
		t.Fatalf("reaper: %+v, want the job back in the queue", rep)
	}
	jobs, err = e.reg.PollJobs(e.ctx, b, b.Cluster.ID, 10)
	wantNoErr(t, err)
	if len(jobs) != 1 || jobs[0].ID != j.ID {
		t.Fatalf("a poll right after the reaper requeued a job: %v, want the job", jobIDs(jobs))
	}
}
