package storetest

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/registry"
)

// testEncryptedPayloads: an agent's public key is stored at register (with
// the redemption, atomically); encryption cannot be turned on without one;
// a cluster that requires encrypted payloads has its payloads stored sealed,
// withheld from reads, handed out as a JWE its agent's key opens, and shown
// on request with an audit entry.
func testEncryptedPayloads(t *testing.T, newStore NewStore) {
	newKey := func(t *testing.T) *jwe.PrivateKey {
		t.Helper()
		k, err := jwe.GenerateX25519()
		wantNoErr(t, err)
		return k
	}

	t.Run("RegisterStoresTheKey", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("prod", nil)
		key := newKey(t)
		_, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), PublicKey: []byte(`{"kty":"OKP","crv":"X25519","x":"short"}`)})
		wantCode(t, err, registry.CodeInvalid)
		if !strings.Contains(registry.ErrorMessage(err), "publicKey") {
			t.Errorf("the refusal does not name the field: %v", err)
		}
		// The malformed key cost no token: the same token registers.
		_, err = e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), PublicKey: []byte(key.Public().JWK())})
		wantNoErr(t, err)
		got, err := e.reg.GetCluster(e.ctx, c.ID)
		wantNoErr(t, err)
		if got.PublicKey.KeyID() != key.Public().Thumbprint() || got.Version != c.Version+1 {
			t.Fatalf("cluster key %s at version %d, want %s at %d", got.PublicKey.KeyID(), got.Version, key.Public().Thumbprint(), c.Version+1)
		}
		// A v1 agent sending no key leaves the cluster's key alone.
		tok2, err := e.reg.IssueToken(e.ctx, c.ID, 0)
		wantNoErr(t, err)
		e.register(tok2)
		if again, _ := e.reg.GetCluster(e.ctx, c.ID); again.PublicKey != got.PublicKey {
			t.Fatal("a registration without a key changed the cluster's key")
		}
	})

	t.Run("ConcurrentRegistrationsOneKeyWins", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("prod", nil)
		const n = 6
		keys := make([]*jwe.PrivateKey, n)
		won := make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			keys[i] = newKey(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), PublicKey: []byte(keys[i].Public().JWK())})
				won[i] = err == nil
			}()
		}
		wg.Wait()
		got, _ := e.reg.GetCluster(e.ctx, c.ID)
		winners := 0
		for i := range n {
			if won[i] {
				winners++
				if got.PublicKey.KeyID() != keys[i].Public().Thumbprint() {
					t.Fatal("the cluster holds a key other than the winning registration's")
				}
			}
		}
		if winners != 1 {
			t.Fatalf("%d registrations of one token succeeded, want 1", winners)
		}
	})

	t.Run("EncryptionNeedsAKey", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, _, err := e.reg.CreateCluster(e.ctx, registry.ClusterSpec{Name: "nokey", Policy: registry.Policy{RequireEncryptedPayloads: true}}, 0)
		wantCode(t, err, registry.CodePublicKeyRequired)
		c, _ := e.cluster("prod", nil)
		_, err = e.reg.ModifyCluster(e.ctx, c.ID, func(s *registry.ClusterSpec) error { s.Policy.RequireEncryptedPayloads = true; return nil })
		wantCode(t, err, registry.CodePublicKeyRequired)
		if !strings.Contains(registry.ErrorMessage(err), "--public-key-file") {
			t.Errorf("the refusal does not say how to set a key: %v", err)
		}
		key := newKey(t)
		got, err := e.reg.ModifyCluster(e.ctx, c.ID, func(s *registry.ClusterSpec) error {
			s.PublicKey = registry.AgentPublicKey(key.Public().JWK())
			s.Policy.RequireEncryptedPayloads = true
			return nil
		})
		wantNoErr(t, err)
		if !got.Policy.RequireEncryptedPayloads {
			t.Fatal("encryption did not turn on")
		}
		if got, _ = e.reg.GetCluster(e.ctx, c.ID); !got.Policy.RequireEncryptedPayloads || got.PublicKey == "" {
			t.Fatalf("read back %+v", got.Policy)
		}
		_, err = e.reg.ModifyCluster(e.ctx, c.ID, func(s *registry.ClusterSpec) error { s.PublicKey = ""; return nil })
		wantCode(t, err, registry.CodePublicKeyRequired)
	})

	t.Run("SealedAtRestDeliveredEncrypted", func(t *testing.T) {
		e := newEnv(t, newStore)
		key := newKey(t)
		c, tok := e.cluster("prod", nil)
		cred, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), PublicKey: []byte(key.Public().JWK())})
		wantNoErr(t, err)
		// Submitted before encryption: stored plain, handed out encrypted.
		before := e.submit(c.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "before" })
		_, err = e.reg.ModifyCluster(e.ctx, c.ID, func(s *registry.ClusterSpec) error { s.Policy.RequireEncryptedPayloads = true; return nil })
		wantNoErr(t, err)
		sealed := e.submit(c.ID, nil)
		if sealed.Payload != nil || !sealed.PayloadSealed {
			t.Fatalf("submit answered payload %s sealed=%v", sealed.Payload, sealed.PayloadSealed)
		}
		// Policy checks ran on the plaintext.
		_, _, err = e.reg.SubmitJob(e.ctx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply,
			Payload: json.RawMessage(strings.Replace(applyPayload, "team-a", "team-b", 1))})
		wantCode(t, err, registry.CodeNamespaceNotAllowed)

		for _, j := range []*registry.Job{sealed} {
			got, err := e.reg.GetJob(e.ctx, j.ID)
			wantNoErr(t, err)
			if got.Payload != nil || !got.PayloadSealed {
				t.Fatalf("GetJob shows payload %s sealed=%v", got.Payload, got.PayloadSealed)
			}
			if out, _ := json.Marshal(got); strings.Contains(string(out), "nextcloud") {
				t.Fatalf("the job's JSON shows the payload: %s", out)
			}
		}
		list, err := e.reg.ListJobs(e.ctx, registry.JobListParams{ClusterIDs: []string{c.ID}})
		wantNoErr(t, err)
		for _, j := range list {
			if j.ID == sealed.ID && (j.Payload != nil || !j.PayloadSealed) {
				t.Fatal("ListJobs shows the sealed payload")
			}
			if j.ID == before.ID && (j.PayloadSealed || j.Payload == nil) {
				t.Fatal("a job submitted before encryption was turned on is not stored as it was")
			}
		}
		exists, err := e.store.SealedSecretsExist(e.ctx)
		wantNoErr(t, err)
		if !exists {
			t.Fatal("SealedSecretsExist does not count sealed payloads")
		}

		a, err := e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		polled, err := e.reg.DeliverJobs(e.ctx, a, c.ID, 10)
		wantNoErr(t, err)
		if len(polled.Jobs) != 2 {
			t.Fatalf("polled %d jobs, want 2", len(polled.Jobs))
		}
		for _, j := range polled.Jobs {
			if j.EncryptedPayload == "" || j.Payload != nil || j.SealedPayload != nil {
				t.Fatalf("job %s handed out without encryption, or with its payload beside it", j.ID)
			}
			got, err := key.Decrypt(j.EncryptedPayload)
			wantNoErr(t, err)
			var want, have any
			_ = json.Unmarshal([]byte(applyPayload), &want)
			_ = json.Unmarshal(got, &have)
			if string(mustJSON(t, want)) != string(mustJSON(t, have)) {
				t.Fatalf("decrypted %s, want the submitted payload", got)
			}
		}

		shown, err := e.reg.ShowJobPayload(e.ctx, sealed.ID)
		wantNoErr(t, err)
		if !strings.Contains(string(shown.Payload), "nextcloud") {
			t.Fatalf("ShowJobPayload = %s", shown.Payload)
		}
		audit, err := e.reg.ListAudit(e.ctx, registry.AuditListParams{Action: registry.AuditJobPayloadViewed})
		wantNoErr(t, err)
		if len(audit) != 1 || audit[0].TargetID != sealed.ID {
			t.Fatalf("payload views audited: %+v, want one for %s", audit, sealed.ID)
		}
		if strings.Contains(audit[0].Reason, "nextcloud") {
			t.Fatal("the audit entry holds the payload")
		}
		// A job with a plain payload needs no audit to be shown.
		if _, err := e.reg.ShowJobPayload(e.ctx, before.ID); err != nil {
			t.Fatal(err)
		}
		if audit, _ = e.reg.ListAudit(e.ctx, registry.AuditListParams{Action: registry.AuditJobPayloadViewed}); len(audit) != 1 {
			t.Fatalf("%d payload views audited, want 1", len(audit))
		}
	})

	t.Run("RetryOfASealedJob", func(t *testing.T) {
		e := newEnv(t, newStore)
		key := newKey(t)
		c, _ := e.cluster("prod", func(s *registry.ClusterSpec) {
			s.PublicKey = registry.AgentPublicKey(key.Public().JWK())
			s.Policy.RequireEncryptedPayloads = true
		})
		j := e.submit(c.ID, nil)
		_, err := e.reg.CancelJob(e.ctx, j.ID, "")
		wantNoErr(t, err)
		next, err := e.reg.RetryJob(e.ctx, j.ID, "")
		wantNoErr(t, err)
		if !next.PayloadSealed || next.Payload != nil {
			t.Fatal("the retry is not sealed")
		}
		shown, err := e.reg.ShowJobPayload(e.ctx, next.ID)
		wantNoErr(t, err)
		if !strings.Contains(string(shown.Payload), "nextcloud") {
			t.Fatalf("the retry's payload is %s", shown.Payload)
		}

		// The cluster's allowlist changes, so a retry is refused by it. An
		// operator, who may retry but not see a sealed payload, is told
		// why in words that hold none of the payload (the catalog entry
		// it names); an admin, who may see it, gets the full refusal.
		_, err = e.reg.CancelJob(e.ctx, next.ID, "")
		wantNoErr(t, err)
		cur, err := e.reg.GetCluster(e.ctx, c.ID)
		wantNoErr(t, err)
		spec := cur.ClusterSpec
		spec.AllowedCatalogEntries = []string{"wordpress"}
		_, err = e.reg.UpdateCluster(e.ctx, c.ID, cur.Version, spec)
		wantNoErr(t, err)
		operator := registry.WithActor(e.ctx, registry.Actor{Kind: registry.ActorAdminToken, Name: "op", Role: registry.RoleOperator})
		_, err = e.reg.RetryJob(operator, next.ID, "")
		wantCode(t, err, registry.CodeCatalogEntryNotAllowed)
		if msg := registry.ErrorMessage(err); strings.Contains(msg, "nextcloud") || !strings.Contains(msg, "sealed") || !strings.Contains(msg, next.ID) {
			t.Fatalf("an operator's refused retry of a sealed job says %q: it must name the job and not show the payload", msg)
		}
		_, err = e.reg.RetryJob(e.ctx, next.ID, "")
		wantCode(t, err, registry.CodeCatalogEntryNotAllowed)
		if msg := registry.ErrorMessage(err); !strings.Contains(msg, "nextcloud") {
			t.Fatalf("an admin's refused retry says %q, want the catalog entry named", msg)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	wantNoErr(t, err)
	return b
}
