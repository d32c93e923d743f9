package registry

import (
	"context"
	"time"
)

// KeyStore is the part of Store that keeps per-cluster signing keys and agent public keys (issue 10).
// Every method that writes is atomic, as Store's are.
type KeyStore interface {
	// SealedSecretsExist reports whether anything sealed with the key file
	// is stored: a live credential's HMAC key, a webhook's secret, a
	// signing key or a sealed job payload.
	SealedSecretsExist(ctx context.Context) (bool, error)
	// SignatureRecord remembers a signature until expiresAt and reports
	// whether it was new: false when it was already remembered and has not
	// expired at now (a replay), whichever replica saw it first. Concurrent
	// records of one signature: exactly one is new.
	SignatureRecord(ctx context.Context, key []byte, expiresAt, now time.Time) (fresh bool, err error)
	// SignaturesPrune forgets signatures that expired before before.
	SignaturesPrune(ctx context.Context, before time.Time) (int, error)

	// SigningKeyEnsure stores key as its cluster's current payload-signing
	// key unless the cluster already has one, and returns the current key
	// (key or the existing one). Of concurrent ensures exactly one key wins.
	SigningKeyEnsure(ctx context.Context, key SigningKey) (*SigningKey, error)
	// SigningKeyRotate retires the cluster's current key (kept for
	// verification until p.OverlapUntil) and makes p.New current, with its
	// audit entry, atomically. The current key must be p.Retire (none when
	// p.Retire is empty): p.New's endorsement is that key's, so a rotation
	// that lost a race to another is CodeConflict, never stored. CodeNotFound
	// when the cluster does not exist.
	SigningKeyRotate(ctx context.Context, p SigningKeyRotateParams) error
	// SigningKeys returns the cluster's current key and the retired keys
	// whose overlap has not ended at now: current first, then newest first.
	SigningKeys(ctx context.Context, clusterID string, now time.Time) ([]SigningKey, error)
}

// SigningKey is a cluster's Ed25519 key for signing job payloads. The
// private half is sealed by the Keyring (bound to the key id).
type SigningKey struct {
	ID            string
	ClusterID     string
	PublicKey     []byte // ed25519.PublicKey
	SealedPrivate []byte
	CreatedAt     time.Time
	RetiredAt     time.Time // zero: the current key
	ExpiresAt     time.Time // retired keys: the end of their overlap
	// EndorsedBy and Endorsement: the key this one replaced, and its
	// signature introducing this one (internal/jobsig). Empty for a
	// cluster's first key and for keys made before key continuity.
	EndorsedBy  string
	Endorsement string
}

// SigningKeyRotateParams is SigningKeyRotate's input.
type SigningKeyRotateParams struct {
	New SigningKey
	// Retire is the id of the current key New replaces (and is endorsed
	// by); empty when the cluster has no key yet.
	Retire       string
	Now          time.Time
	OverlapUntil time.Time
	Audit        AuditEntry
}
