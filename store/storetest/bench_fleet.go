package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// benchClusterHeartbeat measures agents' ClusterHeartbeat events, a fleet's
// most frequent write at scale (every agent, every 30 s: 1,667 a second for
// 50,000 agents), from concurrent agents of a thousand clusters, each
// heartbeat a different cluster's, as a fleet's are. Each stores the event
// and the cluster's status (and their change-feed rows). Reports
// heartbeats/s (and WAL bytes per heartbeat).
func benchClusterHeartbeat(b *testing.B, h Bench) {
	const clusters = 1000
	reg := registry.New(h.New(b), registry.Config{})
	b.Cleanup(reg.Close)
	agents := make([]*registry.Agent, clusters)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				_, tok, err := reg.CreateCluster(benchCtx, registry.ClusterSpec{Name: fmt.Sprintf("edge-%04d", i), AllowedNamespaces: []string{"default"}}, 0)
				if err != nil {
					b.Error(err)
					continue
				}
				cred, err := reg.Register(benchCtx, registry.RegisterParams{Token: tok.Secret.Reveal()})
				if err != nil {
					b.Error(err)
					continue
				}
				if agents[i], err = reg.Authenticate(benchCtx, cred.Token.Reveal(), registry.AuthAny); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range clusters {
		work <- i
	}
	close(work)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	ready := []registry.Condition{{Type: "Ready", Status: "True", Reason: "AgentRunning"}}
	var walStart float64
	if h.WALBytes != nil {
		walStart = h.WALBytes(b)
	}
	elapsed := roundRobin(b, clusters, func(i int) error {
		a := agents[i]
		_, err := reg.AppendEvents(benchCtx, a, "", []registry.Event{{
			Kind:        registry.EventClusterHeartbeat,
			ResourceRef: registry.ResourceRef{APIVersion: "ops.vworkspace.io/v1alpha1", Kind: "Cluster", Name: a.Cluster.ID},
			Conditions:  ready, Timestamp: time.Now(),
		}})
		return err
	})
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "heartbeats/s")
	if h.WALBytes != nil {
		b.ReportMetric((h.WALBytes(b)-walStart)/float64(b.N), "WAL-B/heartbeat")
	}
}
