package storetest

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/jobsig"
	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/registry"
)

// poisonedPayload is valid JSON with no RFC 8785 form (a number out of
// range): it cannot be signed.
const poisonedPayload = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-a"},"data":{"n":1e999}}`

// insertRaw stores a queued job as it is, past every check SubmitJob makes:
// a job stored before those checks existed, or one that slipped through.
func (e *env) insertRaw(clusterID, id, payload string) {
	e.t.Helper()
	now := e.clock.Now()
	_, _, err := e.store.JobInsert(e.ctx, registry.JobInsertParams{
		Job: registry.Job{
			ID: id, ClusterID: clusterID, Kind: registry.KindApply, Payload: json.RawMessage(payload),
			State: registry.JobQueued, Attempt: 1, CreatedAt: now, UpdatedAt: now, SubmittedBy: "test",
		},
		History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted, Actor: "test", Message: "inserted raw"},
		Audit:   registry.AuditEntry{At: now, Actor: "test", Action: registry.AuditJobSubmit, ClusterID: clusterID, TargetKind: "job", TargetID: id},
	})
	wantNoErr(e.t, err)
}

// testDelivery: a poll's batch is prepared job by job. A job whose payload
// cannot be signed ends failed at once with a visible reason, and the jobs
// behind it are delivered, signed bound to their job; a job this replica
// cannot open is left queued and visible to the next poll, which another
// replica serves.
func testDelivery(t *testing.T, newStore NewStore) {
	t.Run("PoisonedJobEndsFailedTheRestIsDelivered", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("signed", func(s *registry.ClusterSpec) { s.Policy.RequireSignedPayloads = true })
		a, _ := e.register(tok)
		e.insertRaw(c.ID, "j-poisoned", poisonedPayload) // the oldest: first in the batch
		e.clock.Advance(time.Millisecond)
		var good []string
		for range 3 {
			good = append(good, e.submit(c.ID, func(s *registry.JobSubmission) { s.ExpiresIn = time.Hour }).ID)
			e.clock.Advance(time.Millisecond)
		}
		d, err := e.reg.DeliverJobs(e.ctx, a, c.ID, 10)
		wantNoErr(t, err)
		var got []string
		set, err := e.reg.SigningKeySet(e.ctx, c.ID)
		wantNoErr(t, err)
		pub, err := set[0].Ed25519PublicKey()
		wantNoErr(t, err)
		for _, j := range d.Jobs {
			got = append(got, j.ID)
			if j.SignatureKeyID != set[0].Kid || j.JobSignatureFormat != jobsig.FormatV2 || j.LegacySignature != "" {
				t.Fatalf("job %s: key %q format %q legacy %q", j.ID, j.SignatureKeyID, j.JobSignatureFormat, j.LegacySignature)
			}
			bound := jobsig.Job{ClusterID: c.ID, JobID: j.ID, Kind: string(j.Kind), ExpiresAt: j.ExpiresAt, Payload: j.Payload}
			wantNoErr(t, jobsig.VerifyJob(pub, bound, j.JobSignature))
			// Bound: the same signature does not verify for another job.
			bound.JobID = "j-other"
			if jobsig.VerifyJob(pub, bound, j.JobSignature) == nil {
				t.Fatalf("job %s's signature verifies for another job id", j.ID)
			}
		}
		if !slices.Equal(got, good) {
			t.Fatalf("delivered %v, want the good jobs %v", got, good)
		}
		if len(d.Failed) != 1 || d.Failed[0].JobID != "j-poisoned" || len(d.Deferred) != 0 {
			t.Fatalf("failed %+v deferred %+v, want j-poisoned failed", d.Failed, d.Deferred)
		}
		p := e.job("j-poisoned")
		if p.State != registry.JobFailed || !strings.HasPrefix(p.Error, registry.ErrorUndeliverablePrefix) || !strings.Contains(p.Error, "RFC 8785") {
			t.Fatalf("poisoned job: %s %q, want failed with the undeliverable reason", p.State, p.Error)
		}
		audit := e.auditFor(registry.AuditJobUndeliverable)
		if len(audit) != 1 || audit[0].TargetID != "j-poisoned" || audit[0].ClusterID != c.ID {
			t.Fatalf("undeliverable audited as %+v", audit)
		}
		// The next poll finds nothing: the good jobs are hidden, the
		// poisoned one gone from the queue.
		d, err = e.reg.DeliverJobs(e.ctx, a, c.ID, 10)
		wantNoErr(t, err)
		if len(d.Jobs)+len(d.Failed)+len(d.Deferred) != 0 {
			t.Fatalf("second poll: %+v", d)
		}
	})

	t.Run("LegacySignatureOnlyWhereAllowed", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("legacy", func(s *registry.ClusterSpec) {
			s.Policy.RequireSignedPayloads, s.Policy.AllowLegacyPayloadSignatures = true, true
		})
		if !c.Policy.AllowLegacyPayloadSignatures {
			t.Fatal("the policy did not keep allowLegacyPayloadSignatures")
		}
		a, _ := e.register(tok)
		e.submit(c.ID, nil)
		d, err := e.reg.DeliverJobs(e.ctx, a, c.ID, 10)
		wantNoErr(t, err)
		set, err := e.reg.SigningKeySet(e.ctx, c.ID)
		wantNoErr(t, err)
		pub, _ := set[0].Ed25519PublicKey()
		if len(d.Jobs) != 1 || d.Jobs[0].LegacySignature == "" || d.Jobs[0].JobSignature == "" {
			t.Fatalf("delivered %+v, want one job with both signatures", d.Jobs)
		}
		wantNoErr(t, registry.VerifyPayload(pub, d.Jobs[0].Payload, d.Jobs[0].LegacySignature))
	})

	t.Run("ReplicaWithoutTheKeyLeavesTheJobVisible", func(t *testing.T) {
		e := newEnv(t, newStore)
		key, err := jwe.GenerateX25519()
		wantNoErr(t, err)
		c, tok := e.cluster("sealed", func(s *registry.ClusterSpec) {
			s.Policy.RequireEncryptedPayloads, s.Policy.RequireSignedPayloads = true, true
			s.PublicKey = registry.AgentPublicKey(key.Public().JWK())
		})
		a, _ := e.register(tok)
		_, err = e.reg.CurrentSigningKey(e.ctx, c.ID) // made at register, over HTTP
		wantNoErr(t, err)
		sealed := e.submit(c.ID, nil)
		// A replica whose key file is another: it opens neither the sealed
		// payload nor the signing key.
		other := registry.New(e.store, registry.Config{Clock: e.clock, Keyring: registry.NewKeyFile(filepath.Join(t.TempDir(), "other.key"))})
		defer other.Close()
		d, err := other.DeliverJobs(e.ctx, a, c.ID, 10)
		wantNoErr(t, err)
		if len(d.Jobs) != 0 || len(d.Failed) != 0 || len(d.Deferred) != 1 || d.Deferred[0].JobID != sealed.ID || d.Deferred[0].Reason == "" {
			t.Fatalf("replica without the key: %+v, want the job deferred with a reason", d)
		}
		if j := e.job(sealed.ID); j.State != registry.JobQueued {
			t.Fatalf("deferred job is %s, want queued", j.State)
		}
		// Not hidden: the replica with the key delivers it at once.
		d, err = e.reg.DeliverJobs(e.ctx, a, c.ID, 10)
		wantNoErr(t, err)
		if len(d.Jobs) != 1 || d.Jobs[0].ID != sealed.ID || d.Jobs[0].EncryptedPayload == "" {
			t.Fatalf("replica with the key: %+v, want the job delivered", d)
		}
		plain, err := key.Decrypt(d.Jobs[0].EncryptedPayload)
		wantNoErr(t, err)
		set, err := e.reg.SigningKeySet(e.ctx, c.ID)
		wantNoErr(t, err)
		pub, _ := set[0].Ed25519PublicKey()
		wantNoErr(t, jobsig.VerifyJob(pub, jobsig.Job{ClusterID: c.ID, JobID: sealed.ID, Kind: string(registry.KindApply), ExpiresAt: d.Jobs[0].ExpiresAt, Payload: plain}, d.Jobs[0].JobSignature))
	})

	t.Run("UnhideLeavesALaterHidingAlone", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		j := e.submit(a.Cluster.ID, nil)
		t0 := e.clock.Now()
		first, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10)
		wantNoErr(t, err)
		if len(first) != 1 {
			t.Fatalf("polled %d jobs", len(first))
		}
		// The window passes and another poll hides it again.
		e.clock.Advance(registry.DefaultVisibilityWindow + time.Second)
		if again, _ := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10); len(again) != 1 {
			t.Fatal("the job was not offered again after its window")
		}
		// Undoing the first poll's hiding does not undo the second's.
		stale := t0.Add(registry.DefaultVisibilityWindow)
		wantNoErr(t, e.store.JobsUnhide(e.ctx, registry.JobsUnhideParams{ClusterID: a.Cluster.ID, IDs: []string{j.ID}, HiddenUntil: stale}))
		if jobs, _ := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10); len(jobs) != 0 {
			t.Fatal("unhiding with a stale time made a job hidden by a later poll visible")
		}
		wantNoErr(t, e.store.JobsUnhide(e.ctx, registry.JobsUnhideParams{ClusterID: a.Cluster.ID, IDs: []string{j.ID}, HiddenUntil: e.clock.Now().Add(registry.DefaultVisibilityWindow)}))
		if jobs, _ := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10); len(jobs) != 1 {
			t.Fatal("unhiding with the hiding's own time did not make the job visible")
		}
	})
}
