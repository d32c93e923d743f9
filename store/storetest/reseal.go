package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/registry"
)

// testKeyRotation: tether keys rotate re-seals every kind of sealed value
// (HMAC keys, webhook secrets, signing keys, the CA's key, sealed job
// payloads) under the new primary key, in batches; everything still opens
// during and after; after retire no value is sealed with the old key, which
// the key file no longer holds.
func testKeyRotation(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	kf := e.reg.Config().Keyring.(*registry.KeyFile)
	// One of each kind, several HMAC credentials so that batches of 2 page.
	var agents []*registry.Agent
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		a, _ := e.agent(name, registry.CapabilityHMAC)
		agents = append(agents, a)
	}
	_, _, err := e.reg.CreateWebhook(e.ctx, "hook", "https://example.com/x", []string{registry.WebhookJobFinished}, "")
	wantNoErr(t, err)
	_, _, err = e.reg.RotateWebhookSecret(e.ctx, "hook", time.Hour) // a previous secret, sealed too
	wantNoErr(t, err)
	_, err = e.reg.CurrentSigningKey(e.ctx, agents[0].Cluster.ID)
	wantNoErr(t, err)
	_, err = e.reg.InitCA(e.ctx, false)
	wantNoErr(t, err)
	_, err = e.reg.SSHHostSigner(e.ctx)
	wantNoErr(t, err)
	key, err := jwe.GenerateX25519()
	wantNoErr(t, err)
	enc, _ := e.cluster("enc", func(s *registry.ClusterSpec) {
		s.PublicKey = registry.AgentPublicKey(key.Public().JWK())
		s.Policy.RequireEncryptedPayloads = true
	})
	job := e.submit(enc.ID, nil)

	everythingOpens := func(when string) {
		t.Helper()
		for _, a := range agents {
			if _, err := e.reg.HMACKey(a); err != nil {
				t.Fatalf("%s: HMAC key of %s: %v", when, a.Credential.ID, err)
			}
		}
		if _, err := e.reg.SSHHostSigner(e.ctx); err != nil {
			t.Fatalf("%s: the SSH host key: %v", when, err)
		}
		if _, _, err := e.reg.SignClusterPayload(e.ctx, agents[0].Cluster.ID, []byte(`{"a":1}`)); err != nil {
			t.Fatalf("%s: signing: %v", when, err)
		}
		if _, err := e.reg.ShowJobPayload(e.ctx, job.ID); err != nil {
			t.Fatalf("%s: sealed payload: %v", when, err)
		}
		csr, _ := NewCSR(t)
		_, tok := e.cluster("", func(s *registry.ClusterSpec) {
			s.Name = "ca-" + strings.ReplaceAll(strings.ReplaceAll(when, " ", "-"), ",", "")
		})
		if _, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), CSR: csr}); err != nil {
			t.Fatalf("%s: the CA signs: %v", when, err)
		}
	}
	everythingOpens("before")
	usage, err := e.reg.CheckKeyring(e.ctx)
	wantNoErr(t, err)
	old, err := kf.PrimaryKeyID()
	wantNoErr(t, err)
	if len(usage) != 1 || usage[old] < 9 {
		t.Fatalf("usage before rotation %v, want every value under %s", usage, old)
	}

	k, err := kf.Rotate(false)
	wantNoErr(t, err)
	if k.ID == old || k.Role != registry.KeyPrimary {
		t.Fatalf("rotate made %+v", k)
	}
	everythingOpens("rotated, not re-sealed")
	rep, err := e.reg.Reseal(e.ctx, 2)
	wantNoErr(t, err)
	for _, kind := range registry.SealedKinds {
		if rep.Resealed[kind] == 0 {
			t.Errorf("nothing of kind %s was re-sealed: %+v", kind, rep)
		}
	}
	usage, err = e.reg.SealedKeyUsage(e.ctx)
	wantNoErr(t, err)
	if len(usage) != 1 || usage[k.ID] < rep.Total {
		t.Fatalf("usage after re-seal %v (re-sealed %d)", usage, rep.Total)
	}
	again, err := e.reg.Reseal(e.ctx, 2)
	wantNoErr(t, err)
	if again.Total != 0 {
		t.Fatalf("a second re-seal changed %d values", again.Total)
	}
	if audit, _ := e.reg.ListAudit(e.ctx, registry.AuditListParams{Action: registry.AuditKeysReseal}); len(audit) != 1 {
		t.Fatalf("%d re-seal audit entries, want 1", len(audit))
	}

	removed, err := kf.Retire(usage)
	wantNoErr(t, err)
	if len(removed) != 1 || removed[0] != old {
		t.Fatalf("retired %v, want %s", removed, old)
	}
	keys, err := kf.Keys()
	wantNoErr(t, err)
	if len(keys) != 1 || keys[0].ID != k.ID {
		t.Fatalf("keys after retire %+v", keys)
	}
	// A fresh keyring over the file (another process) opens everything.
	reg2 := registry.New(e.store, registry.Config{Clock: e.clock, Keyring: registry.ExistingKeyFile(kf.Path())})
	defer reg2.Close()
	if _, err := reg2.CheckKeyring(e.ctx); err != nil {
		t.Fatalf("a new process over the retired ring: %v", err)
	}
	for _, a := range agents {
		if _, err := reg2.HMACKey(a); err != nil {
			t.Fatalf("after retire: HMAC key: %v", err)
		}
	}
	everythingOpens("after retire")

	// An old key still in use is not retired.
	k2, err := kf.Rotate(false)
	wantNoErr(t, err)
	usage, err = e.reg.SealedKeyUsage(e.ctx)
	wantNoErr(t, err)
	_, err = kf.Retire(usage)
	wantCode(t, err, registry.CodeConflict)
	_ = k2
}
