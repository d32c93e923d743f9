package postgres_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/postgres"
)

// TestMixedWritersDoNotDeadlock runs every kind of write at once, through two
// stores, on a few clusters that are created, registered, used, edited,
// disabled and deleted under each other's feet, with the reaper and the
// pruner running alongside. No write may fail with more than the refusals
// the races call for. Groups of writes that run side by side may deadlock
// (see writer.go) and run again; that must stay rare.
func TestMixedWritersDoNotDeadlock(t *testing.T) {
	if testing.Short() {
		t.Skip("a concurrency test")
	}
	dsn := freshSchema(t)
	stores := []*postgres.Store{openAt(t, dsn), openAt(t, dsn)}
	clock := clocktest.New()
	keys := filepath.Join(t.TempDir(), "tether.key")
	var regs []*registry.Registry
	for _, st := range stores {
		reg := registry.New(st, registry.Config{Clock: clock, Keyring: registry.NewKeyFile(keys)})
		t.Cleanup(reg.Close)
		regs = append(regs, reg)
	}
	names := []string{"alpha", "beta", "gamma"}
	spec := func(name string) registry.ClusterSpec {
		return registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"team-a"}, Policy: registry.Policy{LeaseSeconds: 30, MaxAttempts: 3}}
	}
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)

	var mu sync.Mutex
	var unexpected []error
	ops := 0
	check := func(what string, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		ops++
		switch registry.ErrorCode(err) {
		case "":
			return true
		case registry.CodeInternal, registry.CodeUnavailable:
			unexpected = append(unexpected, fmt.Errorf("%s: %w", what, err))
		}
		return false
	}

	const rounds = 30
	var wg sync.WaitGroup
	worker := func(n int, f func(reg *registry.Registry, r *rand.Rand, i int)) {
		for w := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), uint64(n)))
				for i := range rounds {
					f(regs[(w+i)%2], r, i)
				}
			}()
		}
	}
	// Admins.
	worker(2, func(reg *registry.Registry, r *rand.Rand, i int) {
		name := names[r.IntN(len(names))]
		_, _, err := reg.CreateCluster(adminCtx, spec(name), 0)
		check("create", err)
		_, err = reg.ModifyCluster(adminCtx, name, func(s *registry.ClusterSpec) error {
			s.AllowedNamespaces = append(s.AllowedNamespaces[:1], fmt.Sprintf("ns-%d", i))
			return nil
		})
		check("modify", err)
		if r.IntN(3) == 0 {
			_, err = reg.SetClusterEnabled(adminCtx, name, false, "")
			check("disable", err)
			_, err = reg.SetClusterEnabled(adminCtx, name, true, "")
			check("enable", err)
		}
		if r.IntN(4) == 0 {
			_, err = reg.DeleteCluster(adminCtx, name, "")
			check("delete", err)
		}
	})
	// Agents.
	worker(4, func(reg *registry.Registry, r *rand.Rand, i int) {
		name := names[r.IntN(len(names))]
		tok, err := reg.IssueToken(adminCtx, name, 0)
		if !check("issue", err) {
			return
		}
		cred, err := reg.Register(adminCtx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"lease"}})
		if !check("register", err) {
			return
		}
		a, err := reg.Authenticate(adminCtx, cred.Token.Reveal(), registry.AuthAny)
		if !check("authenticate", err) {
			return
		}
		ks := []string{"k1", "k2", "k3"}
		r.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		for range 3 {
			j, _, err := reg.SubmitJob(adminCtx, registry.JobSubmission{ClusterID: a.Cluster.ID, Kind: registry.KindDelete, Payload: payload,
				IdempotencyKey: ks[r.IntN(2)]})
			if !check("submit", err) {
				continue
			}
			c, err := reg.AckJob(adminCtx, a, j.ID)
			if !check("ack", err) {
				continue
			}
			check("status", reg.ReportStatus(adminCtx, a, j.ID, c.ClaimID, registry.StatusReport{Phase: "Working"}))
			_, err = reg.AppendEvents(adminCtx, a, "", []registry.Event{
				{Kind: registry.EventClusterHeartbeat}, {Kind: "Audit", EventKey: ks[0]}, {Kind: "Audit", EventKey: ks[1]}, {Kind: "Audit", EventKey: ks[2]},
			})
			check("events", err)
			if r.IntN(2) == 0 {
				_, err := reg.ReportResult(adminCtx, a, j.ID, c.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
				check("result", err)
			}
		}
		if r.IntN(3) == 0 {
			_, err = reg.RotateCredential(adminCtx, a)
			check("rotate", err)
		}
	})
	// On-call and the background services.
	worker(1, func(reg *registry.Registry, r *rand.Rand, i int) {
		clock.Advance(31 * time.Second)
		_, err := registry.NewReaper(reg, registry.ReaperConfig{BatchSize: 5}).RunOnce(adminCtx)
		check("reap", err)
		_, err = registry.NewPruner(reg, registry.PrunerConfig{EventsPerCluster: 5, ChangesKept: 100, ChangeRetention: time.Minute}).RunOnce(adminCtx)
		check("prune", err)
		name := names[r.IntN(len(names))]
		if r.IntN(3) == 0 {
			_, err = reg.ForceRotation(adminCtx, name, "")
			check("force rotation", err)
		}
		jobs, err := reg.ListJobs(adminCtx, registry.JobListParams{States: []registry.JobState{registry.JobInProgress}, Limit: 3})
		if check("list", err) {
			for _, j := range jobs {
				if r.IntN(2) == 0 {
					_, err = reg.RequeueJob(adminCtx, j.ID, "")
					check("requeue", err)
				} else {
					_, err = reg.CancelJob(adminCtx, j.ID, "")
					check("cancel", err)
				}
			}
		}
	})
	wg.Wait()
	for _, err := range unexpected {
		t.Error(err)
	}
	retried := postgres.Retried(stores[0]) + postgres.Retried(stores[1])
	t.Logf("%d operations, %d retried", ops, retried)
	if retried*20 > int64(ops) {
		t.Errorf("%d of %d writes were aborted (deadlocks) and retried: more than 1 in 20", retried, ops)
	}
	// job_counts agrees with the jobs.
	for _, reg := range regs[:1] {
		counts, err := reg.JobCounts(adminCtx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			n, err := reg.CountJobs(adminCtx, registry.JobListParams{ClusterIDs: []string{c.ClusterID}, States: []registry.JobState{c.State}})
			if err != nil {
				t.Fatal(err)
			}
			if int64(n) != c.Count {
				t.Errorf("job_counts says %d %s jobs on %s, there are %d", c.Count, c.State, c.ClusterID, n)
			}
		}
	}
}
