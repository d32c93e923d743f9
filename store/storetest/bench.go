package storetest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// What the stores' benchmarks share: they measure the same registry
// operations on each store.

// LeasedJobs submits n jobs to a's cluster and acks each with a lease (a
// must hold the lease capability); it returns their ids and claims.
func LeasedJobs(b *testing.B, ctx context.Context, reg *registry.Registry, a *registry.Agent, payload json.RawMessage, n int) (ids, claims []string) {
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

// RoundRobin runs write b.N times from 16 goroutines per CPU, with i taken
// in turn from 0 to n-1, and returns how long that took (the benchmark's
// timer covers it alone).
func RoundRobin(b *testing.B, n int, write func(i int) error) time.Duration {
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
