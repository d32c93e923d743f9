package benchseed

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/postgres"
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
	// The search index holds the seeded jobs: a rare word is read through it.
	found, err := reg.ListJobs(ctx, registry.JobListParams{Search: "app-9999", Limit: 5})
	if err != nil || len(found) != 1 || found[0].ID != JobID(9999) {
		t.Fatalf("search for app-9999: %+v, %v", found, err)
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

// KeptPostgres fills a schema with the fleet's shape (the counters
// included), and a second call finds it.
func TestKeptPostgres(t *testing.T) {
	server := pgtest.DSN(t)
	cfg := Config{Clusters: 3, Jobs: 10000, Now: DefaultNow.Add(time.Millisecond * time.Duration(time.Now().UnixNano()%1000000))}
	dsn := KeptPostgres(t, server, cfg)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), server)
		if err == nil {
			conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{fmt.Sprintf("tether_benchseed_v%d_%dc_%dj_%d", Version, cfg.Clusters, cfg.Jobs, cfg.Now.Unix())}.Sanitize()+" CASCADE")
			conn.Close(context.Background())
		}
	})
	if again := KeptPostgres(t, server, cfg); again != dsn {
		t.Fatalf("second call: %s, want %s", again, dsn)
	}
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counts, err := st.JobCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var total, queued int64
	for _, c := range counts {
		total += c.Count
		if c.State == registry.JobQueued {
			queued += c.Count
		}
	}
	if total != 10000 || queued != 200 {
		t.Errorf("counters: %d jobs, %d queued; want 10000 and 200", total, queued)
	}
}
