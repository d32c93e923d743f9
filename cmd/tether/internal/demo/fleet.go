// Package demo is a simulated fleet for `tether demo`: clusters whose agents
// register through the real HTTP API and work through jobs that a producer
// submits at a steady rate. Some agents misbehave on purpose, so that every
// view of the console has something to show: one dies mid-job holding a
// lease (the reaper reclaims the job), one dies without a lease (its job
// stays stuck for on-call), one goes silent, one reports a Degraded
// condition, one hits a conflict.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Behaviour is how a simulated agent acts.
type Behaviour string

const (
	Healthy       Behaviour = "healthy"
	DiesWithLease Behaviour = "dies-with-lease"    // acks a job, then vanishes: the reaper reclaims it
	DiesNoLease   Behaviour = "dies-without-lease" // acks a job, then vanishes: the job is stuck
	GoesSilent    Behaviour = "goes-silent"        // stops heartbeating and polling
	Degraded      Behaviour = "degraded"           // reports Ready=False, Degraded=True
	Conflicted    Behaviour = "conflicts"          // some applies end in conflict
)

// behaviours, in the order clusters get them; beyond these, clusters are healthy.
var behaviours = []Behaviour{Healthy, DiesWithLease, DiesNoLease, GoesSilent, Degraded, Conflicted}

var clusterNames = []string{"prod-eu-1", "prod-us-1", "staging-eu", "edge-lab", "prod-ap-1", "dev-shared", "prod-eu-2", "ci-runners", "staging-us", "edge-store-7"}

// Config configures a fleet.
type Config struct {
	Registry *registry.Registry
	// ServerURL is where the simulated agents reach tether.
	ServerURL string
	Clusters  int          // default 6
	Rate      float64      // jobs per second, default 1
	Logger    *slog.Logger // default discards
	// Speed divides every delay of the simulation (tests use large values).
	Speed float64
}

// Fleet is a running simulation.
type Fleet struct {
	cfg      Config
	log      *slog.Logger
	clusters []*registry.Cluster
	agents   []*simAgent

	submitted atomicCounter
}

// New creates the fleet's clusters (with real registration tokens); Run
// starts its agents and producer.
func New(ctx context.Context, cfg Config) (*Fleet, error) {
	if cfg.Clusters <= 0 {
		cfg.Clusters = 6
	}
	if cfg.Clusters > len(clusterNames) {
		return nil, fmt.Errorf("the demo simulates at most %d clusters", len(clusterNames))
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 1
	}
	if cfg.Speed <= 0 {
		cfg.Speed = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{cfg: cfg, log: cfg.Logger}
	ctx = registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "demo"})
	for i := range cfg.Clusters {
		b := Healthy
		if i < len(behaviours) {
			b = behaviours[i]
		}
		spec := registry.ClusterSpec{
			Name:                      clusterNames[i],
			Organization:              []string{"acme", "globex", "initech"}[i%3],
			Labels:                    labelsFor(clusterNames[i]),
			AllowedNamespaces:         []string{"team-a", "team-b", "shared"},
			AllowedCatalogEntries:     catalogIDs(),
			AllowedOperationTemplates: []string{"backup.velero", "restore.velero"},
			Policy:                    registry.Policy{LeaseSeconds: 30, MaxAttempts: 3},
		}
		c, err := cfg.Registry.GetCluster(ctx, spec.Name)
		var tok *registry.IssuedToken
		if err == nil {
			// A --db reused from an earlier demo: a fresh token re-registers.
			tok, err = cfg.Registry.IssueToken(ctx, c.ID, 0)
		} else {
			c, tok, err = cfg.Registry.CreateCluster(ctx, spec, 0)
		}
		if err != nil {
			return nil, fmt.Errorf("create demo cluster %s: %w", spec.Name, err)
		}
		f.clusters = append(f.clusters, c)
		f.agents = append(f.agents, &simAgent{fleet: f, cluster: c, behaviour: b, token: tok.Secret.Reveal()})
	}
	return f, nil
}

// Submitted is how many jobs the producer has submitted.
func (f *Fleet) Submitted() int64 { return f.submitted.load() }

// Run runs the agents and the producer until ctx ends.
func (f *Fleet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, a := range f.agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.run(ctx)
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		f.produce(ctx)
	}()
	go func() {
		defer wg.Done()
		f.rollout(ctx)
	}()
	wg.Wait()
	return nil
}

// sleep waits d (divided by the speed) or until ctx ends; false when ctx ended.
func (f *Fleet) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(time.Duration(float64(d) / f.cfg.Speed))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// jitter returns d ± 50%.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d+1)
}

type atomicCounter struct {
	mu sync.Mutex
	n  int64
}

func (c *atomicCounter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *atomicCounter) load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
