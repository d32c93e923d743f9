package storetest

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/registry"
)

// testIdempotency: an idempotency key answers its job for the retention
// window from the job's creation whatever the job's state, and for as long
// as the job is open; a replay with another request is refused; concurrent
// submissions with one key make one job.
func testIdempotency(t *testing.T, newStore NewStore) {
	submit := func(e *env, clusterID, key string, mod func(*registry.JobSubmission)) (*registry.Job, bool, error) {
		s := registry.JobSubmission{ClusterID: clusterID, Kind: registry.KindApply, Payload: json.RawMessage(applyPayload), IdempotencyKey: key}
		if mod != nil {
			mod(&s)
		}
		return e.reg.SubmitJob(e.ctx, s)
	}
	replay := func(t *testing.T, e *env, clusterID, key string, want *registry.Job) {
		t.Helper()
		j, created, err := submit(e, clusterID, key, nil)
		wantNoErr(t, err)
		if created || j.ID != want.ID {
			t.Fatalf("replay of key %q: created=%v job %s, want job %s", key, created, j.ID, want.ID)
		}
	}

	t.Run("OpenJob", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		first, created, err := submit(e, a.Cluster.ID, "applicationinstance/team-a/nc@7", nil)
		wantNoErr(t, err)
		if !created {
			t.Fatal("the first submission with a key was not created")
		}
		replay(t, e, a.Cluster.ID, "applicationinstance/team-a/nc@7", first)
		// An open job holds its key past the window, however long it waits.
		e.clock.Advance(3 * registry.DefaultIdempotencyRetention)
		replay(t, e, a.Cluster.ID, "applicationinstance/team-a/nc@7", first)
		// Another cluster's key is another key.
		other, _ := e.agent("staging")
		j, created, err := submit(e, other.Cluster.ID, "applicationinstance/team-a/nc@7", nil)
		wantNoErr(t, err)
		if !created || j.ID == first.ID {
			t.Fatalf("another cluster's submission with the key: created=%v job %s", created, j.ID)
		}
	})

	t.Run("FinishedJobWithinTheWindow", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		for _, outcome := range []registry.Outcome{registry.OutcomeSucceeded, registry.OutcomeFailed} {
			key := "deploy-" + string(outcome)
			first, _, err := submit(e, a.Cluster.ID, key, nil)
			wantNoErr(t, err)
			e.finish(a, first.ID, outcome)
			e.clock.Advance(registry.DefaultIdempotencyRetention - time.Millisecond)
			j, created, err := submit(e, a.Cluster.ID, key, nil)
			wantNoErr(t, err)
			if created || j.ID != first.ID || !j.State.Terminal() {
				t.Fatalf("replay after the job %s: created=%v job %s (%s), want the original %s as it ended", outcome, created, j.ID, j.State, first.ID)
			}
			// The window runs from the job's creation: then the key is free.
			e.clock.Advance(time.Millisecond)
			next, created, err := submit(e, a.Cluster.ID, key, nil)
			wantNoErr(t, err)
			if !created || next.ID == first.ID {
				t.Fatalf("submission once the key expired: created=%v job %s", created, next.ID)
			}
			replay(t, e, a.Cluster.ID, key, next) // and it answers the new job
		}
		if n := e.counts(a.Cluster.ID); n[registry.JobQueued] != 2 || n[registry.JobSucceeded] != 1 || n[registry.JobFailed] != 1 {
			t.Fatalf("job counts %v, want 2 queued, 1 succeeded, 1 failed", n)
		}
	})

	t.Run("AnotherRequestIsRefused", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		first, _, err := submit(e, a.Cluster.ID, "deploy-9", nil)
		wantNoErr(t, err)
		// The same JSON, spaced and ordered otherwise, is the same request.
		var v map[string]any
		wantNoErr(t, json.Unmarshal([]byte(applyPayload), &v))
		respaced, _ := json.MarshalIndent(v, "", "    ")
		j, created, err := submit(e, a.Cluster.ID, "deploy-9", func(s *registry.JobSubmission) { s.Payload = respaced })
		wantNoErr(t, err)
		if created || j.ID != first.ID {
			t.Fatalf("replay with the payload spaced otherwise: created=%v job %s", created, j.ID)
		}
		others := []struct {
			name string
			mod  func(*registry.JobSubmission)
		}{
			{"payload", func(s *registry.JobSubmission) {
				s.Payload = json.RawMessage(strings.Replace(applyPayload, `"nc"`, `"nc2"`, 1))
			}},
			{"kind", func(s *registry.JobSubmission) {
				s.Kind, s.Payload = registry.KindDelete, json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)
			}},
		}
		for _, state := range []string{"open", "finished"} {
			if state == "finished" {
				e.finish(a, first.ID, registry.OutcomeSucceeded)
			}
			for _, o := range others {
				_, _, err := submit(e, a.Cluster.ID, "deploy-9", o.mod)
				wantCode(t, err, registry.CodeConflict)
				if !strings.Contains(err.Error(), `"deploy-9"`) || !strings.Contains(err.Error(), first.ID) {
					t.Fatalf("another %s with the key of a job %s: %v, want the key and the job named", o.name, state, err)
				}
			}
		}
		if n := e.counts(a.Cluster.ID); n[registry.JobQueued] != 0 || n[registry.JobSucceeded] != 1 {
			t.Fatalf("job counts %v, want the one job", n)
		}
	})

	t.Run("SealedPayload", func(t *testing.T) {
		e := newEnv(t, newStore)
		key, err := jwe.GenerateX25519()
		wantNoErr(t, err)
		c, tok := e.cluster("prod", nil)
		_, err = e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), PublicKey: []byte(key.Public().JWK())})
		wantNoErr(t, err)
		_, err = e.reg.ModifyCluster(e.ctx, c.ID, func(s *registry.ClusterSpec) error { s.Policy.RequireEncryptedPayloads = true; return nil })
		wantNoErr(t, err)
		first, _, err := submit(e, c.ID, "sealed", nil)
		wantNoErr(t, err)
		if !first.PayloadSealed {
			t.Fatal("the payload was not sealed")
		}
		replay(t, e, c.ID, "sealed", first)
		_, _, err = submit(e, c.ID, "sealed", func(s *registry.JobSubmission) {
			s.Payload = json.RawMessage(strings.Replace(applyPayload, `"nc"`, `"nc2"`, 1))
		})
		wantCode(t, err, registry.CodeConflict)
		if strings.Contains(err.Error(), "nc2") || strings.Contains(err.Error(), "nextcloud") {
			t.Fatalf("the refusal shows a payload: %v", err)
		}
	})

	t.Run("DeletedJobKeepsItsKey", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		first, _, err := submit(e, a.Cluster.ID, "deploy-3", nil)
		wantNoErr(t, err)
		e.finish(a, first.ID, registry.OutcomeSucceeded)
		_, err = e.reg.DeleteJob(e.ctx, first.ID, "cleanup")
		wantNoErr(t, err)
		_, _, err = submit(e, a.Cluster.ID, "deploy-3", nil)
		wantCode(t, err, registry.CodeConflict)
		if !strings.Contains(err.Error(), first.ID) || !strings.Contains(err.Error(), "deleted") {
			t.Fatalf("replay of a deleted job's key: %v, want it to say the job was deleted", err)
		}
		e.clock.Advance(registry.DefaultIdempotencyRetention)
		j, created, err := submit(e, a.Cluster.ID, "deploy-3", nil)
		wantNoErr(t, err)
		if !created || j.ID == first.ID {
			t.Fatalf("submission once the deleted job's key expired: created=%v job %s", created, j.ID)
		}
	})

	t.Run("RetryTakesTheKey", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		first, _, err := submit(e, a.Cluster.ID, "deploy-5", nil)
		wantNoErr(t, err)
		e.finish(a, first.ID, registry.OutcomeFailed)
		replay(t, e, a.Cluster.ID, "deploy-5", first)
		retry, err := e.reg.RetryJob(e.ctx, first.ID, "")
		wantNoErr(t, err)
		replay(t, e, a.Cluster.ID, "deploy-5", retry)
		e.finish(a, retry.ID, registry.OutcomeFailed)
		// The retry's window runs from the retry.
		e.clock.Advance(registry.DefaultIdempotencyRetention - time.Millisecond)
		replay(t, e, a.Cluster.ID, "deploy-5", retry)
	})

	t.Run("Concurrent", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		// race submits n at once with the key and returns the jobs they got
		// and how many were created.
		race := func(key string) (map[string]bool, int) {
			const n = 16
			var wg sync.WaitGroup
			var mu sync.Mutex
			ids, made := map[string]bool{}, 0
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					j, created, err := submit(e, a.Cluster.ID, key, nil)
					if err != nil {
						t.Errorf("concurrent submission: %v", err)
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
		// A new key.
		ids, made := race("concurrent")
		if len(ids) != 1 || made != 1 {
			t.Fatalf("concurrent submissions with a new key: jobs %v, %d created; want one", ids, made)
		}
		var first string
		for id := range ids {
			first = id
		}
		// The key of a finished job, within the window.
		e.finish(a, first, registry.OutcomeSucceeded)
		if ids, made = race("concurrent"); len(ids) != 1 || !ids[first] || made != 0 {
			t.Fatalf("concurrent replays of a finished job's key: jobs %v, %d created; want %s alone", ids, made, first)
		}
		// An expired key, taken over by one of them.
		e.clock.Advance(registry.DefaultIdempotencyRetention)
		if ids, made = race("concurrent"); len(ids) != 1 || ids[first] || made != 1 {
			t.Fatalf("concurrent submissions with an expired key: jobs %v, %d created; want one new job", ids, made)
		}
	})

	t.Run("OpenJobsOnly", func(t *testing.T) {
		// A negative retention keeps keys for open jobs only, as before.
		e := newEnv(t, newStore)
		reg := registry.New(e.store, registry.Config{Clock: e.clock, IdempotencyRetention: -1})
		t.Cleanup(reg.Close)
		a, _ := e.agent("prod")
		s := registry.JobSubmission{ClusterID: a.Cluster.ID, Kind: registry.KindApply, Payload: json.RawMessage(applyPayload), IdempotencyKey: "k"}
		first, _, err := reg.SubmitJob(e.ctx, s)
		wantNoErr(t, err)
		again, created, err := reg.SubmitJob(e.ctx, s)
		wantNoErr(t, err)
		if created || again.ID != first.ID {
			t.Fatalf("open job's key: created=%v job %s", created, again.ID)
		}
		e.finish(a, first.ID, registry.OutcomeSucceeded)
		next, created, err := reg.SubmitJob(e.ctx, s)
		wantNoErr(t, err)
		if !created || next.ID == first.ID {
			t.Fatalf("finished job's key without retention: created=%v job %s", created, next.ID)
		}
	})

	t.Run("Pruned", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		var old []*registry.Job
		for _, key := range []string{"a", "b", "c", "d", "e"} {
			j, _, err := submit(e, a.Cluster.ID, key, nil)
			wantNoErr(t, err)
			e.finish(a, j.ID, registry.OutcomeSucceeded)
			old = append(old, j)
		}
		e.clock.Advance(time.Hour)
		recent, _, err := submit(e, a.Cluster.ID, "recent", nil)
		wantNoErr(t, err)
		e.clock.Advance(registry.DefaultIdempotencyRetention - 30*time.Minute)
		// Batches of two exercise the loop; jobs are kept forever here.
		ret := registry.NewRetention(e.reg, registry.RetentionConfig{Jobs: -1, Audit: -1, WebhookDeliveries: -1, BatchSize: 2})
		rep, err := ret.RunOnce(e.ctx)
		wantNoErr(t, err)
		if rep.IdempotencyKeys != 5 || rep.Total() != 5 {
			t.Fatalf("retention deleted %+v, want the 5 expired keys", rep)
		}
		replay(t, e, a.Cluster.ID, "recent", recent)
		for _, j := range old {
			next, created, err := submit(e, a.Cluster.ID, j.IdempotencyKey, nil)
			wantNoErr(t, err)
			if !created || next.ID == j.ID {
				t.Fatalf("a pruned key answered job %s", next.ID)
			}
		}
		if rep, err = ret.RunOnce(e.ctx); err != nil || rep.IdempotencyKeys != 0 {
			t.Fatalf("second run deleted %+v (%v), want nothing", rep, err)
		}
	})
}
