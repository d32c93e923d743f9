package registry

import (
	"context"
	"time"
)

// CredentialStore is the part of Store that keeps agents' credentials.
// Every method that writes is atomic, as Store's are.
type CredentialStore interface {
	CredentialGet(ctx context.Context, id string) (*Credential, error)
	// CredentialList returns a cluster's credentials, newest first.
	CredentialList(ctx context.Context, clusterID string) ([]Credential, error)
	// CredentialRotate inserts p.New and marks p.OldID superseded, cutting its
	// full access to p.OldExpiresAt (never extending it), provided the old
	// credential is unrevoked, not yet superseded (a credential rotates once)
	// and may still rotate at p.Now. CodeConflict if it was already rotated,
	// CodeUnauthorized otherwise.
	CredentialRotate(ctx context.Context, p CredentialRotateParams) error
	// CredentialRestrict cuts the access windows of a cluster's live
	// credentials (or of one) to the given times, never extending them, and
	// optionally marks them revoked. It returns how many it changed.
	CredentialRestrict(ctx context.Context, p CredentialRestrictParams) (int, error)
}

type CredentialRotateParams struct {
	OldID        string
	Now          time.Time
	OldExpiresAt time.Time
	New          Credential
	Audit        AuditEntry
}

type CredentialRestrictParams struct {
	ClusterID    string
	CredentialID string // empty: every live credential of the cluster
	Now          time.Time
	ExpiresAt    time.Time
	RotateUntil  time.Time
	RotateAfter  time.Time // zero: unchanged
	Revoke       bool
	Reason       string
	Audit        AuditEntry
}
