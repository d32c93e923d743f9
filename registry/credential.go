package registry

import (
	"slices"
	"time"
)

// Credential lifetimes.
const (
	DefaultCredentialTTL = 30 * 24 * time.Hour
	DefaultRotateAfter   = 7 * 24 * time.Hour
	// DefaultRotationGrace is how long a credential keeps working after its
	// agent rotated it (the public operator keeps using the old token from some
	// components until it restarts), and how long an expired or force-rotated
	// credential may still call rotate.
	DefaultRotationGrace = 24 * time.Hour
)

// CredentialState is derived from a credential's timestamps.
type CredentialState string

const (
	CredentialActive     CredentialState = "active"      // full access
	CredentialGrace      CredentialState = "grace"       // superseded by a rotation; full access until ExpiresAt
	CredentialRotateOnly CredentialState = "rotate_only" // expired or force-rotated: may only rotate, until RotateUntil
	CredentialExpired    CredentialState = "expired"
	CredentialRevoked    CredentialState = "revoked"
)

// Credential is a cluster's long-lived agent credential: a bearer token (its
// hash), optionally an HMAC key (sealed by the Keyring), and the capabilities
// negotiated at registration, inherited on rotation.
//
// Access is two windows: every endpoint until ExpiresAt, rotate only until
// RotateUntil. Rotation, forced rotation and revocation just move them.
type Credential struct {
	ID           string    `json:"id"`
	ClusterID    string    `json:"clusterId"`
	Capabilities []string  `json:"capabilities"`
	CreatedAt    time.Time `json:"createdAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	RotateAfter  time.Time `json:"rotateAfter"`
	RotateUntil  time.Time `json:"rotateUntil"`
	RotatedFrom  string    `json:"rotatedFrom,omitempty"`
	SupersededAt time.Time `json:"supersededAt,omitzero"` // when the agent rotated it
	RevokedAt    time.Time `json:"revokedAt,omitzero"`
	RevokeReason string    `json:"revokeReason,omitempty"`
	Hash         []byte    `json:"-"`
	SealedHMAC   []byte    `json:"-"`
	// ClientCertificate is the certificate tether's CA issued with this
	// credential, when the agent sent a CSR. The stores insert it with the
	// credential; ListCredentials fills it in.
	ClientCertificate *ClientCertificate `json:"clientCertificate,omitempty"`
}

// HasCapability reports whether the credential negotiated c.
func (c *Credential) HasCapability(capability string) bool {
	return slices.Contains(c.Capabilities, capability)
}

// Signed reports whether writes with this credential must carry an HMAC.
// BelowPolicy returns the capabilities p requires that c lacks (none: nil).
// Such a credential keeps working until it expires, but its next rotation
// must add them.
func (c *Credential) BelowPolicy(p Policy) []string {
	var missing []string
	for _, req := range p.RequiredCapabilities {
		if !c.HasCapability(req) {
			missing = append(missing, req)
		}
	}
	return missing
}

func (c *Credential) Signed() bool { return c.HasCapability(CapabilityHMAC) }

// State says what the credential may do at now.
func (c *Credential) State(now time.Time) CredentialState {
	switch {
	case !c.RevokedAt.IsZero():
		return CredentialRevoked
	case now.Before(c.ExpiresAt) && !c.SupersededAt.IsZero():
		return CredentialGrace
	case now.Before(c.ExpiresAt):
		return CredentialActive
	case now.Before(c.RotateUntil):
		return CredentialRotateOnly
	}
	return CredentialExpired
}

// IssuedCredential is a new credential with its secrets, returned once to the
// agent that registered or rotated.
type IssuedCredential struct {
	Credential Credential
	Cluster    Cluster
	Token      Secret
	HMACKey    Secret // base64url without padding; empty unless hmac was negotiated
	// GraceUntil is, after a rotation, when the previous credential stops working.
	GraceUntil time.Time
	// ClientCertificate (PEM) and CABundle (PEM): issued when the agent sent
	// a CSR (see ca.go).
	ClientCertificate []byte
	CABundle          []byte
}

// ErrRotatedOnce is the refusal of a second rotation of one credential. The
// successor's token cannot be answered again: only its hash is kept.
func ErrRotatedOnce(id string, at time.Time) error {
	return Errorf(CodeConflict, "credential %s was already rotated at %s, and a credential rotates once (so that a leaked or replayed old token mints nothing); "+
		"use the token that rotation returned; it is not kept and cannot be shown again, so if it was lost, issue the cluster a new registration token",
		id, at.UTC().Format(time.RFC3339))
}
