package registry

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"time"

	"github.com/tetherhq/tether/internal/jobsig"
)

// DefaultSigningKeyOverlap is how long a rotated-out payload-signing key stays
// in the cluster's key set, so that agents holding jobs signed with it can
// still verify them.
const DefaultSigningKeyOverlap = 7 * 24 * time.Hour

// AuditSigningKeyRotate: an admin rotated a cluster's payload-signing key.
const AuditSigningKeyRotate = "cluster.signing_key_rotate"

func newSigningKeyID() string { return "sk-" + newULID() }

// newSigningKey generates an Ed25519 key for the cluster, its private half
// (the seed) sealed by the Keyring and bound to the key's id.
func (r *Registry) newSigningKey(clusterID string, now time.Time) (SigningKey, error) {
	if r.cfg.Keyring == nil {
		return SigningKey{}, Errorf(CodeUnavailable, "this tether has no key file, so it cannot keep payload-signing keys; its admin must start it with --key-file")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return SigningKey{}, err
	}
	id := newSigningKeyID()
	sealed, err := r.cfg.Keyring.Seal(priv.Seed(), []byte(id))
	if err != nil {
		return SigningKey{}, err
	}
	return SigningKey{ID: id, ClusterID: clusterID, PublicKey: pub, SealedPrivate: sealed, CreatedAt: now}, nil
}

// CurrentSigningKey returns the cluster's current payload-signing key,
// creating it on first use (of concurrent first uses, one key wins).
func (r *Registry) CurrentSigningKey(ctx context.Context, clusterID string) (*SigningKey, error) {
	keys, err := r.store.SigningKeys(ctx, clusterID, r.Now())
	if err != nil {
		return nil, err
	}
	if len(keys) > 0 && keys[0].RetiredAt.IsZero() {
		return &keys[0], nil
	}
	k, err := r.newSigningKey(clusterID, r.Now())
	if err != nil {
		return nil, err
	}
	return r.store.SigningKeyEnsure(ctx, k)
}

// SigningKeySet returns the cluster's payload-signing public keys as JWKs,
// each with its endorsement: the current key first (created if the cluster
// has none yet), then the rotated-out keys still inside their overlap.
func (r *Registry) SigningKeySet(ctx context.Context, clusterID string) ([]JWK, error) {
	if _, err := r.CurrentSigningKey(ctx, clusterID); err != nil {
		return nil, err
	}
	return r.storedKeySet(ctx, clusterID)
}

func (r *Registry) storedKeySet(ctx context.Context, clusterID string) ([]JWK, error) {
	keys, err := r.store.SigningKeys(ctx, clusterID, r.Now())
	if err != nil {
		return nil, err
	}
	out := make([]JWK, 0, len(keys))
	for i := range keys {
		out = append(out, keys[i].JWK())
	}
	return out, nil
}

// signer is a cluster's current signing key, opened: a poll opens it once
// for its whole batch.
type signer struct {
	kid  string
	priv ed25519.PrivateKey
}

// currentSigner opens the cluster's current key (created on first use).
func (r *Registry) currentSigner(ctx context.Context, clusterID string) (*signer, error) {
	k, err := r.CurrentSigningKey(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	priv, err := r.openSigningKey(k)
	if err != nil {
		return nil, err
	}
	return &signer{kid: k.ID, priv: priv}, nil
}

func (r *Registry) openSigningKey(k *SigningKey) (ed25519.PrivateKey, error) {
	if r.cfg.Keyring == nil {
		return nil, Errorf(CodeUnavailable, "this tether has no key file, so it cannot open payload-signing key %s; its admin must start it with --key-file", k.ID)
	}
	seed, err := r.cfg.Keyring.Open(k.SealedPrivate, []byte(k.ID))
	if err != nil {
		return nil, err
	}
	if len(seed) != ed25519.SeedSize {
		return nil, Errorf(CodeInternal, "signing key %s is damaged", k.ID)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// SignClusterPayload signs payload with the cluster's current key in the
// legacy format (v1: standard base64 Ed25519 over the payload's JCS form
// alone) and returns the signature and the key's id.
func (r *Registry) SignClusterPayload(ctx context.Context, clusterID string, payload []byte) (signature, keyID string, err error) {
	s, err := r.currentSigner(ctx, clusterID)
	if err != nil {
		return "", "", err
	}
	sig, err := SignPayload(s.priv, payload)
	if err != nil {
		return "", "", err
	}
	return sig, s.kid, nil
}

// RotateSigningKey gives the cluster a new payload-signing key: new jobs are
// signed with it, and the old key stays in the key set for overlap (0: the
// default) so that jobs signed before the rotation still verify. The old
// key endorses the new one (key continuity: an agent that trusts the old
// key learns to trust the new one from the key set, and from nothing else);
// a rotation that cannot open the old key to endorse is refused rather than
// strand the agents. Admin only, audited.
func (r *Registry) RotateSigningKey(ctx context.Context, clusterIDOrName string, overlap time.Duration) (*SigningKey, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	if overlap < 0 {
		return nil, Errorf(CodeInvalid, "the overlap must not be negative")
	}
	if overlap == 0 {
		overlap = DefaultSigningKeyOverlap
	}
	c, err := r.GetCluster(ctx, clusterIDOrName)
	if err != nil {
		return nil, err
	}
	now := r.Now()
	keys, err := r.store.SigningKeys(ctx, c.ID, now)
	if err != nil {
		return nil, err
	}
	k, err := r.newSigningKey(c.ID, now)
	if err != nil {
		return nil, err
	}
	var retire string
	if len(keys) > 0 && keys[0].RetiredAt.IsZero() {
		old := &keys[0]
		priv, err := r.openSigningKey(old)
		if err != nil {
			return nil, Errorf(ErrorCode(err), "cannot rotate: the current key %s must endorse its successor and does not open: %s", old.ID, ErrorMessage(err))
		}
		retire = old.ID
		k.EndorsedBy, k.Endorsement = old.ID, jobsig.Endorse(priv, c.ID, k.ID, k.PublicKey)
	}
	until := now.Add(overlap)
	err = r.store.SigningKeyRotate(ctx, SigningKeyRotateParams{
		New: k, Retire: retire, Now: now, OverlapUntil: until,
		Audit: r.auditEntry(ctx, AuditSigningKeyRotate, c.ID, "signing_key", k.ID, "the previous key verifies until "+until.UTC().Format(time.RFC3339)),
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// PublishedSigningKeys is the key set an agent sees (GET /api/agent/keys):
// for a cluster that requires signed payloads, SigningKeySet (its key is
// created on first use); for one that does not, only the keys it already
// has, so that asking creates nothing.
func (r *Registry) PublishedSigningKeys(ctx context.Context, c *Cluster) ([]JWK, error) {
	if c.Policy.RequireSignedPayloads {
		return r.SigningKeySet(ctx, c.ID)
	}
	return r.storedKeySet(ctx, c.ID)
}
