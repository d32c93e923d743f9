package postgres_test

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
)

// TestIdempotencyAcrossReplicas: submissions with one key through two
// replicas at once make one job: with a new key, with the key of a job that
// finished (they all answer it), and once that key expired (one takes it).
func TestIdempotencyAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("a concurrency test")
	}
	dsn := freshSchema(t)
	clock := clocktest.New()
	keys := registry.NewKeyFile(filepath.Join(t.TempDir(), "tether.key"))
	var regs []*registry.Registry
	for range 2 {
		reg := registry.New(openAt(t, dsn), registry.Config{Clock: clock, Keyring: keys})
		t.Cleanup(reg.Close)
		regs = append(regs, reg)
	}
	c, a := agentFor(t, regs[0], "prod")
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-a"}}`)
	race := func() (map[string]bool, int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		ids, made := map[string]bool{}, 0
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j, created, err := regs[i%2].SubmitJob(adminCtx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: payload, IdempotencyKey: "deploy-1"})
				if err != nil {
					t.Errorf("submission through replica %d: %v", i%2, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				ids[j.ID] = true
				if created {
					made++
				}
			}()
		}
		wg.Wait()
		return ids, made
	}
	ids, made := race()
	if len(ids) != 1 || made != 1 {
		t.Fatalf("a new key through two replicas: jobs %v, %d created; want one", ids, made)
	}
	var first string
	for id := range ids {
		first = id
	}
	claim, err := regs[1].AckJob(adminCtx, a, first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regs[1].ReportResult(adminCtx, a, first, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded}); err != nil {
		t.Fatal(err)
	}
	if ids, made = race(); len(ids) != 1 || !ids[first] || made != 0 {
		t.Fatalf("a finished job's key through two replicas: jobs %v, %d created; want %s alone", ids, made, first)
	}
	clock.Advance(registry.DefaultIdempotencyRetention)
	if ids, made = race(); len(ids) != 1 || ids[first] || made != 1 {
		t.Fatalf("an expired key through two replicas: jobs %v, %d created; want one new job", ids, made)
	}
}
