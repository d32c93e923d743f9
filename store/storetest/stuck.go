package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testStuck checks the stuck queries (registry.StuckJobQueries: job list
// --stuck, GET /jobs?stuck=true, the console's stuck tab) over the store:
// their sets are disjoint, one reason each, so a search word the reason
// holds is satisfied by it. On the console's stuck tab /silent found
// nothing although the WHY column said it.
func testStuck(t *testing.T, newStore NewStore) {
	t.Run("SearchReasons", func(t *testing.T) {
		e := newEnv(t, newStore)
		edge, _ := e.agent("edge-lab") // no lease
		legacy, _ := e.agent("legacy-dc")
		prod, _ := e.agent("prod-us", registry.CapabilityLease)
		ack := func(a *registry.Agent, id string) {
			t.Helper()
			_, err := e.reg.AckJob(e.ctx, a, id)
			wantNoErr(t, err)
		}
		silentEdge := e.submit(edge.Cluster.ID, nil).ID
		ack(edge, silentEdge)
		e.submit(edge.Cluster.ID, nil) // queued on a live cluster: not stuck
		runLegacy := e.submit(legacy.Cluster.ID, nil).ID
		ack(legacy, runLegacy)
		queuedLegacy := e.submit(legacy.Cluster.ID, nil).ID
		expiredProd := e.submit(prod.Cluster.ID, nil).ID
		ack(prod, expiredProd)
		queuedProd := e.submit(prod.Cluster.ID, nil).ID
		newDC, _ := e.cluster("new-dc", nil) // pending: no agent registered
		queuedNew := e.submit(newDC.ID, nil).ID
		e.clock.Advance(11 * time.Minute)
		e.heartbeat(edge) // edge-lab is live; prod-us is silent
		_, err := e.reg.SetClusterEnabled(e.ctx, legacy.Cluster.ID, false, "decommissioning")
		wantNoErr(t, err)
		clusters, err := e.reg.ListClusters(e.ctx, registry.ClusterListParams{})
		wantNoErr(t, err)
		now := e.clock.Now()
		unreachable := registry.UnreachableClusters(clusters, now)

		for _, c := range []struct {
			search string
			states []registry.JobState
			want   []string
		}{
			{"", nil, []string{silentEdge, runLegacy, queuedLegacy, expiredProd, queuedProd, queuedNew}},
			// no lease, silent; queued, cluster silent (not the disabled
			// cluster's silent job, nor the expired lease on prod-us)
			{"silent", nil, []string{silentEdge, queuedProd}},
			{"cluster", nil, []string{runLegacy, queuedLegacy, queuedProd, queuedNew}},
			{"pending", nil, []string{queuedNew}},
			{"DISABLED", nil, []string{runLegacy, queuedLegacy}},
			{"lease", nil, []string{silentEdge, expiredProd}},
			{"silent edge-lab", nil, []string{silentEdge}},
			{"expired prod-us", nil, []string{expiredProd}},
			{"silent legacy-dc", nil, nil},
			{"cluster", []registry.JobState{registry.JobQueued}, []string{queuedLegacy, queuedProd, queuedNew}},
			{"pending", []registry.JobState{registry.JobInProgress}, nil},
			{"silent nowhere-known", nil, nil},
		} {
			base := registry.JobListParams{Search: c.search, States: c.states}
			found, err := e.reg.ListStuckJobs(e.ctx, base)
			wantNoErr(t, err)
			var got []string
			for _, j := range found {
				got = append(got, j.ID)
			}
			q := registry.StuckJobQueries(base, unreachable, now)
			n := 0
			for _, p := range q.Sets {
				m, err := e.reg.CountJobs(e.ctx, p)
				wantNoErr(t, err)
				n += m
			}
			slices.Sort(got)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) || n != len(want) {
				t.Errorf("stuck, search %q, states %v: listed %v, counted %d; want %v", c.search, c.states, got, n, want)
			}
		}
		// Each set holds the jobs of its reason, by Diagnose.
		q := registry.StuckJobQueries(registry.JobListParams{}, unreachable, now)
		for i, p := range q.Sets {
			jobs, err := e.reg.ListJobs(e.ctx, p)
			wantNoErr(t, err)
			for _, j := range jobs {
				c, err := e.reg.GetCluster(e.ctx, j.ClusterID)
				wantNoErr(t, err)
				if got := j.Diagnose(c, now); got != q.Reasons[i] {
					t.Errorf("job %s in the %q set is stuck as %q", j.ID, q.Reasons[i], got)
				}
			}
		}
	})
}
