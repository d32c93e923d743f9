package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Bench is what the benchmark suite needs of a store. A backend runs the
// suite from its own tests, as it runs Run:
//
//	func BenchmarkStore(b *testing.B) {
//		storetest.Benchmark(b, storetest.Bench{New: func(b *testing.B) registry.Store { return openMyStore(b) }})
//	}
//
// The benchmarks that need a large database seeded fast (Reap, Retention,
// QueueHealthMillion) need the store's own SQL to seed it, and are skipped
// on a store that gives none.
type Bench struct {
	// New returns a fresh, empty store, closed when b ends.
	New func(b *testing.B) registry.Store
	// WALBytes, when set, returns how many bytes the database has written
	// to its log so far (the whole server's: run on a quiet one); the
	// leased-write benchmarks report it per write.
	WALBytes func(b *testing.B) float64
	// SeedExpiredLeases inserts n in_progress jobs of clusterID whose
	// leases ended a minute before now, and their claims, straight into
	// st's database (its triggers keep the counts and the feed).
	SeedExpiredLeases func(b *testing.B, st registry.Store, clusterID string, n int, now time.Time)
	// SeedFinished inserts n canceled jobs of clusterID that finished at
	// finished, each with one history entry, straight into st's database.
	SeedFinished func(b *testing.B, st registry.Store, clusterID string, n int, finished time.Time)
	// Million returns a store, closed when b ends, holding 50 clusters and
	// a million jobs submitted over the 30 days before now, 2% of them
	// queued and the rest mostly finished (internal/testing/benchseed's
	// shape), and the id of one of its clusters.
	Million func(b *testing.B) (st registry.Store, now time.Time, clusterID string)
}

// Benchmark runs the benchmark suite: the registry operations whose speed
// tether's targets name, on the store, each a sub-benchmark.
func Benchmark(b *testing.B, h Bench) {
	b.Run("Submit", func(b *testing.B) { benchSubmit(b, h) })
	b.Run("Claim", func(b *testing.B) { benchClaim(b, h) })
	b.Run("IdleLook", func(b *testing.B) { benchIdleLook(b, h) })
	b.Run("BusyLook", func(b *testing.B) { benchBusyLook(b, h) })
	b.Run("Heartbeat", func(b *testing.B) { benchHeartbeat(b, h) })
	b.Run("ClusterHeartbeat", func(b *testing.B) { benchClusterHeartbeat(b, h) })
	b.Run("StatusReport", func(b *testing.B) { benchStatusReport(b, h) })
	b.Run("Reap", func(b *testing.B) { benchReap(b, h) })
	b.Run("Retention", func(b *testing.B) { benchRetention(b, h) })
	b.Run("QueueHealthMillion", func(b *testing.B) { benchQueueHealthMillion(b, h) })
}

var benchCtx = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})

const benchPayload = `{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance",
	"metadata":{"name":"nextcloud-myteam","namespace":"org-myteam","labels":{"app.vworkspace.io/managed-by":"control-plane"}},
	"spec":{"appRef":{"catalogId":"nextcloud"},"values":{"replicas":2}}}`

// benchRegistry is a registry over a fresh store with one registered
// cluster, whose agent holds the lease capability.
func benchRegistry(b *testing.B, h Bench) (*registry.Registry, *registry.Cluster, *registry.Agent) {
	b.Helper()
	return agentRegistry(b, h, registry.Config{}, "bench", []string{"lease"})
}

// lookRegistry is benchRegistry with the visibility window on, as serve
// runs it (a look is a write that hides what it hands out), and an agent
// without leases.
func lookRegistry(b *testing.B, h Bench) (*registry.Registry, *registry.Cluster, *registry.Agent) {
	b.Helper()
	return agentRegistry(b, h, registry.Config{VisibilityWindow: 30 * time.Second}, "look", nil)
}

// agentRegistry is a registry with cfg over a fresh store, with one
// cluster, named name, whose agent registered with caps.
func agentRegistry(b *testing.B, h Bench, cfg registry.Config, name string, caps []string) (*registry.Registry, *registry.Cluster, *registry.Agent) {
	b.Helper()
	reg := registry.New(h.New(b), cfg)
	b.Cleanup(reg.Close)
	c, tok, err := reg.CreateCluster(benchCtx, registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"org-myteam"},
		AllowedCatalogEntries: []string{"nextcloud"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	cred, err := reg.Register(benchCtx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: caps})
	if err != nil {
		b.Fatal(err)
	}
	a, err := reg.Authenticate(benchCtx, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		b.Fatal(err)
	}
	return reg, c, a
}

// submitMany submits n jobs from 16 concurrent producers (one at a time,
// each would be a commit of its own: minutes of setup for a long run), and
// returns their ids.
func submitMany(b *testing.B, reg *registry.Registry, sub registry.JobSubmission, n int) []string {
	b.Helper()
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				j, _, err := reg.SubmitJob(benchCtx, sub)
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = j.ID
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return ids
}

// leasedJobs submits n jobs to a's cluster and acks each with a lease (a
// must hold the lease capability); it returns their ids and claims.
func leasedJobs(b *testing.B, ctx context.Context, reg *registry.Registry, a *registry.Agent, payload json.RawMessage, n int) (ids, claims []string) {
	b.Helper()
	sub := registry.JobSubmission{ClusterID: a.Cluster.ID, Kind: registry.KindApply, Payload: payload}
	ids, claims = make([]string, n), make([]string, n)
	for i := range ids {
		j, _, err := reg.SubmitJob(ctx, sub)
		if err != nil {
			b.Fatal(err)
		}
		claim, err := reg.AckJob(ctx, a, j.ID)
		if err != nil {
			b.Fatal(err)
		}
		if claim.LeaseExpiresAt.IsZero() {
			b.Fatal("the ack took no lease")
		}
		ids[i], claims[i] = j.ID, claim.ClaimID
	}
	return ids, claims
}

// roundRobin runs write b.N times from 16 goroutines per CPU, with i taken
// in turn from 0 to n-1, and returns how long that took (the benchmark's
// timer covers it alone).
func roundRobin(b *testing.B, n int, write func(i int) error) time.Duration {
	var next atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := write(int(next.Add(1) % int64(n))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	return elapsed
}
