package registry

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"time"
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

// SigningKeySet returns the cluster's payload-signing public keys as JWKs:
// the current key first (created if the cluster has none yet), then the
// rotated-out keys still inside their overlap.
func (r *Registry) SigningKeySet(ctx context.Context, clusterID string) ([]JWK, error) {
	if _, err := r.CurrentSigningKey(ctx, clusterID); err != nil {
		return nil, err
	}
	keys, err := r.store.SigningKeys(ctx, clusterID, r.Now())
	if err != nil {
		return nil, err
	}
	out := make([]JWK, 0, len(keys))
	for _, k := range keys {
		out = append(out, Ed25519JWK(k.ID, k.PublicKey))
	}
	return out, nil
}

// SignClusterPayload signs payload with the cluster's current key: the
// job's signature (standard base64 Ed25519 over the payload's JCS form) and
// signatureKeyId.
func (r *Registry) SignClusterPayload(ctx context.Context, clusterID string, payload []byte) (signature, keyID string, err error) {
	k, err := r.CurrentSigningKey(ctx, clusterID)
	if err != nil {
		return "", "", err
	}
	seed, err := r.cfg.Keyring.Open(k.SealedPrivate, []byte(k.ID))
	if err != nil {
		return "", "", err
	}
	if len(seed) != ed25519.SeedSize {
		return "", "", Errorf(CodeInternal, "signing key %s is damaged", k.ID)
	}
	sig, err := SignPayload(ed25519.NewKeyFromSeed(seed), payload)
	if err != nil {
		return "", "", err
	}
	return sig, k.ID, nil
}

// RotateSigningKey gives the cluster a new payload-signing key: new jobs are
// signed with it, and the old key stays in the key set for overlap (0: the
// default) so that jobs signed before the rotation still verify. Admin only,
// audited.
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
	k, err := r.newSigningKey(c.ID, now)
	if err != nil {
		return nil, err
	}
	until := now.Add(overlap)
	err = r.store.SigningKeyRotate(ctx, SigningKeyRotateParams{
		New: k, Now: now, OverlapUntil: until,
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
	keys, err := r.store.SigningKeys(ctx, c.ID, r.Now())
	if err != nil {
		return nil, err
	}
	out := make([]JWK, 0, len(keys))
	for _, k := range keys {
		out = append(out, Ed25519JWK(k.ID, k.PublicKey))
	}
	return out, nil
}
