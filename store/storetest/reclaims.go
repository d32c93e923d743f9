package storetest

import (
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testReclaimsByCluster: the reaper says, for metrics, which clusters' leases
// expired, across batches, and the split adds up to its totals.
func testReclaimsByCluster(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	_, tokA := e.cluster("a", nil)
	_, tokB := e.cluster("b", func(s *registry.ClusterSpec) { s.Policy.MaxAttempts = 1 })
	a, _ := e.register(tokA, registry.CapabilityLease)
	b, _ := e.register(tokB, registry.CapabilityLease)
	for _, ag := range []*registry.Agent{a, a, a, b, b} {
		j := e.submit(ag.Cluster.ID, nil)
		_, err := e.reg.AckJob(e.ctx, ag, j.ID)
		wantNoErr(t, err)
	}
	e.clock.Advance(2 * time.Minute)
	// Batches of two: the counts of three batches add up.
	rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{BatchSize: 2}).RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.Requeued != 3 || rep.Failed != 2 {
		t.Fatalf("report %+v, want 3 requeued (a) and 2 failed (b, one attempt)", rep)
	}
	want := map[string]registry.ClusterReclaims{a.Cluster.ID: {Requeued: 3}, b.Cluster.ID: {Failed: 2}}
	if len(rep.ByCluster) != 2 || rep.ByCluster[a.Cluster.ID] != want[a.Cluster.ID] || rep.ByCluster[b.Cluster.ID] != want[b.Cluster.ID] {
		t.Fatalf("by cluster %+v, want %+v", rep.ByCluster, want)
	}
	// Nothing due: an empty report.
	rep, err = registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.Total() != 0 || len(rep.ByCluster) != 0 {
		t.Fatalf("second run %+v, want nothing", rep)
	}
}
