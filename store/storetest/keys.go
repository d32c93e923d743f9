package storetest

import (
	"crypto/ed25519"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/jobsig"
	"github.com/tetherhq/tether/registry"
)

// testSigningKeys: a cluster's payload-signing key is created once, signs
// payloads anyone can verify with the published JWK, and rotates with an
// overlap during which the old key stays in the key set.
func testSigningKeys(t *testing.T, newStore NewStore) {
	t.Run("CreatedOnceConcurrently", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		const n = 8
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k, err := e.reg.CurrentSigningKey(e.ctx, c.ID)
				if err != nil {
					t.Errorf("CurrentSigningKey: %v", err)
					return
				}
				ids[i] = k.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("concurrent first uses made different keys: %v", ids)
			}
		}
		set, err := e.reg.SigningKeySet(e.ctx, c.ID)
		wantNoErr(t, err)
		if len(set) != 1 || set[0].Kid != ids[0] {
			t.Fatalf("key set %+v, want the one key %s", set, ids[0])
		}
		_, err = e.reg.CurrentSigningKey(e.ctx, "cl-nope")
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("SignVerifyRotateOverlap", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		payload := []byte(applyPayload)
		sig1, kid1, err := e.reg.SignClusterPayload(e.ctx, c.ID, payload)
		wantNoErr(t, err)
		verify := func(sig, kid string) error {
			set, err := e.reg.SigningKeySet(e.ctx, c.ID)
			wantNoErr(t, err)
			for _, k := range set {
				if k.Kid == kid {
					pub, err := k.Ed25519PublicKey()
					wantNoErr(t, err)
					return registry.VerifyPayload(pub, payload, sig)
				}
			}
			return errors.New("key " + kid + " not in the set")
		}
		wantNoErr(t, verify(sig1, kid1))

		_, err = e.reg.RotateSigningKey(e.ctx, "prod", time.Hour)
		wantNoErr(t, err)
		sig2, kid2, err := e.reg.SignClusterPayload(e.ctx, c.ID, payload)
		wantNoErr(t, err)
		if kid2 == kid1 {
			t.Fatal("after rotation jobs are still signed with the old key")
		}
		set, err := e.reg.SigningKeySet(e.ctx, c.ID)
		wantNoErr(t, err)
		if len(set) != 2 || set[0].Kid != kid2 || set[1].Kid != kid1 {
			t.Fatalf("key set %v, want new %s then old %s", set, kid2, kid1)
		}
		wantNoErr(t, verify(sig1, kid1)) // a job signed before the rotation still verifies
		wantNoErr(t, verify(sig2, kid2))
		if len(e.auditFor(registry.AuditSigningKeyRotate)) != 1 {
			t.Fatal("the rotation was not audited")
		}

		e.clock.Advance(time.Hour + time.Second)
		set, err = e.reg.SigningKeySet(e.ctx, c.ID)
		wantNoErr(t, err)
		if len(set) != 1 || set[0].Kid != kid2 {
			t.Fatalf("after the overlap the key set is %v, want only %s", set, kid2)
		}
		if err := verify(sig1, kid1); err == nil {
			t.Fatal("a retired key still verifies after its overlap")
		}
		// A signature by another key does not verify.
		other, otherPriv, err := ed25519.GenerateKey(nil)
		wantNoErr(t, err)
		forged, err := registry.SignPayload(otherPriv, payload)
		wantNoErr(t, err)
		if err := verify(forged, kid2); !errors.Is(err, registry.ErrPayloadSignatureInvalid) {
			t.Fatalf("forged signature: got %v (key %x)", err, other[:4])
		}
		_, err = e.reg.RotateSigningKey(e.ctx, "nope", 0)
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("RotationEndorsesTheNextKey", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		first, err := e.reg.CurrentSigningKey(e.ctx, c.ID)
		wantNoErr(t, err)
		if first.EndorsedBy != "" || first.Endorsement != "" {
			t.Fatalf("a cluster's first key is endorsed by %q", first.EndorsedBy)
		}
		// Concurrent rotations: every key that became current is endorsed
		// by the key it replaced, so the chain from the first key is whole.
		const n = 6
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.reg.RotateSigningKey(e.ctx, c.ID, 24*time.Hour); err != nil && registry.ErrorCode(err) != registry.CodeConflict {
					t.Errorf("RotateSigningKey: %v", err)
				}
			}()
		}
		wg.Wait()
		set, err := e.reg.SigningKeySet(e.ctx, c.ID)
		wantNoErr(t, err)
		if len(set) < 2 || set[len(set)-1].Kid != first.ID {
			t.Fatalf("key set %+v, want rotated keys then the first %s", set, first.ID)
		}
		for i := 0; i+1 < len(set); i++ {
			k, prev := set[i], set[i+1]
			if k.EndorsedBy != prev.Kid {
				t.Fatalf("key %s is endorsed by %q, want the key it replaced, %s (set %+v)", k.Kid, k.EndorsedBy, prev.Kid, set)
			}
			prevPub, err := prev.Ed25519PublicKey()
			wantNoErr(t, err)
			pub, err := k.Ed25519PublicKey()
			wantNoErr(t, err)
			wantNoErr(t, jobsig.VerifyEndorsement(prevPub, c.ID, k.Kid, pub, k.Endorsement))
			if jobsig.VerifyEndorsement(prevPub, "cl-other", k.Kid, pub, k.Endorsement) == nil {
				t.Fatal("an endorsement verifies for another cluster")
			}
		}
		if got := len(e.auditFor(registry.AuditSigningKeyRotate)); got != len(set)-1 {
			t.Fatalf("%d rotations audited, %d keys rotated in", got, len(set)-1)
		}
		// A rotation that read a key another rotation has retired since
		// (its new key endorsed by that key) is a conflict, never stored.
		now := e.clock.Now()
		stale := registry.SigningKeyRotateParams{
			New:    registry.SigningKey{ID: "sk-stale", ClusterID: c.ID, PublicKey: make([]byte, 32), SealedPrivate: []byte("x"), CreatedAt: now, EndorsedBy: first.ID},
			Retire: first.ID, Now: now, OverlapUntil: now.Add(time.Hour),
			Audit: registry.AuditEntry{At: now, Actor: "test", Action: registry.AuditSigningKeyRotate, ClusterID: c.ID},
		}
		wantCode(t, e.store.SigningKeyRotate(e.ctx, stale), registry.CodeConflict)
		stale.Retire = ""
		wantCode(t, e.store.SigningKeyRotate(e.ctx, stale), registry.CodeConflict)
		if after, _ := e.reg.SigningKeySet(e.ctx, c.ID); len(after) != len(set) || after[0].Kid != set[0].Kid {
			t.Fatalf("a refused rotation changed the key set: %+v", after)
		}
	})

	t.Run("SealedAndCounted", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		k, err := e.reg.CurrentSigningKey(e.ctx, c.ID)
		wantNoErr(t, err)
		if len(k.SealedPrivate) <= ed25519.SeedSize || len(k.PublicKey) != ed25519.PublicKeySize {
			t.Fatalf("stored key: %d sealed bytes, %d public bytes", len(k.SealedPrivate), len(k.PublicKey))
		}
		sealed, err := e.store.SealedSecretsExist(e.ctx)
		wantNoErr(t, err)
		if !sealed {
			t.Fatal("a sealed signing key does not count as a sealed secret: a lost key file would go unnoticed")
		}
	})
}
