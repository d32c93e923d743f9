package storetest

import (
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
)

// benchReap measures the reaper over 100,000 in_progress jobs whose leases
// expired: it seeds them (not timed) and times one Reaper.RunOnce, which
// requeues them batch by batch with history and audit entries. Reports
// seconds per 100k. It makes one pass whatever b.N (a pass is the figure),
// so that the whole suite at -benchtime 100x takes one pass, not a hundred.
func benchReap(b *testing.B, h Bench) {
	if h.SeedExpiredLeases == nil {
		b.Skip("the store seeds no expired leases")
	}
	const n = 100_000
	b.StopTimer()
	st, reg, c := maintenanceRegistry(b, h)
	h.SeedExpiredLeases(b, st, c.ID, n, reg.Now())
	b.StartTimer()
	start := time.Now()
	rep, err := registry.NewReaper(reg, registry.ReaperConfig{}).RunOnce(benchCtx)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil || rep.Requeued != n {
		b.Fatalf("reaper: %+v, %v; want %d requeued", rep, err, n)
	}
	b.ReportMetric(elapsed.Seconds(), "s/100k")
	reg.Close()
	st.Close()
}

// benchRetention deletes 100,000 jobs finished past retention (each with a
// history entry) in batches of 1,000 as the retention service does, and
// reports the total and the longest batch: how long the writer was held at
// most. One pass whatever b.N, as benchReap.
func benchRetention(b *testing.B, h Bench) {
	if h.SeedFinished == nil {
		b.Skip("the store seeds no finished jobs")
	}
	const n = 100_000
	b.StopTimer()
	st, reg, c := maintenanceRegistry(b, h)
	now := reg.Now()
	h.SeedFinished(b, st, c.ID, n, now.Add(-40*24*time.Hour))
	b.StartTimer()
	start := time.Now()
	var longest time.Duration
	total := 0
	for {
		t0 := time.Now()
		k, err := st.JobsPrune(benchCtx, registry.JobsPruneParams{State: registry.JobCanceled,
			FinishedBefore: now.Add(-registry.DefaultJobRetention), Limit: registry.DefaultRetentionBatch})
		longest = max(longest, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		total += k
		if k < registry.DefaultRetentionBatch {
			break
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if total != n {
		b.Fatalf("pruned %d, want %d", total, n)
	}
	b.ReportMetric(elapsed.Seconds(), "s/100k")
	b.ReportMetric(float64(longest.Microseconds())/1000, "ms/longest-batch")
	reg.Close()
	st.Close()
}

// benchQueueHealthMillion reads queue health over a million jobs on 50
// clusters: the whole fleet, as the overview does, and one cluster, as its
// detail does.
func benchQueueHealthMillion(b *testing.B, h Bench) {
	if h.Million == nil {
		b.Skip("the store seeds no million jobs")
	}
	st, now, clusterID := h.Million(b)
	clock := clocktest.New()
	clock.Set(now)
	reg := registry.New(st, registry.Config{Clock: clock})
	defer reg.Close()
	b.Run("fleet", func(b *testing.B) {
		for b.Loop() {
			if _, err := reg.FleetQueueHealth(benchCtx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
	b.Run("cluster", func(b *testing.B) {
		for b.Loop() {
			if _, err := reg.QueueHealth(benchCtx, clusterID); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
}

// maintenanceRegistry is a registry over a fresh store with one cluster
// that allows every namespace.
func maintenanceRegistry(b *testing.B, h Bench) (registry.Store, *registry.Registry, *registry.Cluster) {
	b.Helper()
	st := h.New(b)
	reg := registry.New(st, registry.Config{})
	c, _, err := reg.CreateCluster(benchCtx, registry.ClusterSpec{Name: "bench", AllowedNamespaces: []string{"*"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	return st, reg, c
}
