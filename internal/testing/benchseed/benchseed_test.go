package benchseed

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/sqlite"
)

func TestCreate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tether.db")
	if err := Create(ctx, path, Config{Clusters: 3, Jobs: 10000}); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := clocktest.New()
	clock.Set(DefaultNow)
	reg := registry.New(st, registry.Config{Clock: clock})
	defer reg.Close()

	counts := map[registry.JobState]int64{}
	var total int64
	list, err := reg.JobCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		counts[c.State] += c.Count
		total += c.Count
	}
	if total != 10000 || counts[registry.JobQueued] != 200 || counts[registry.JobInProgress] != 50 || counts[registry.JobSucceeded] == 0 || counts[registry.JobFailed] == 0 {
		t.Errorf("the triggers counted %v (total %d)", counts, total)
	}
	jobs, err := reg.ListJobs(ctx, registry.JobListParams{States: []registry.JobState{registry.JobQueued}, Limit: 5})
	if err != nil || len(jobs) != 5 || jobs[0].ID != JobID(9999) || jobs[0].Target.Name != "app-9999" || len(jobs[0].Payload) == 0 {
		t.Fatalf("newest queued jobs: %+v, %v", jobs, err)
	}
	clusters, err := reg.ListClusters(ctx, registry.ClusterListParams{})
	if err != nil || len(clusters) != 3 || clusters[0].ID != ClusterID(0) || clusters[0].Silent(DefaultNow) {
		t.Fatalf("clusters: %+v, %v", clusters, err)
	}
	exhausted, err := reg.CountJobs(ctx, registry.JobListParams{States: []registry.JobState{registry.JobFailed}, Error: registry.ErrorLeaseExpired})
	if err != nil || exhausted == 0 {
		t.Errorf("no job ran out of attempts: %d, %v", exhausted, err)
	}
	expired, err := reg.CountJobs(ctx, registry.JobListParams{States: []registry.JobState{registry.JobInProgress}, LeaseExpiredBefore: DefaultNow})
	if err != nil || expired == 0 {
		t.Errorf("no lease expired: %d, %v", expired, err)
	}
	if seq, err := reg.LatestSeq(ctx); err != nil || seq < 10003 {
		t.Errorf("the change feed ends at %d (%v), want a change per cluster and job", seq, err)
	}
}
