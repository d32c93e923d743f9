package registry

import (
	"fmt"
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

// AgentRotatedAt is when this credential's agent last rotated, as far as
// the credential records it: when the agent rotated it away (SupersededAt),
// else when the agent rotated its predecessor into it (its CreatedAt, for a
// credential with RotatedFrom). Zero: the agent has not rotated since it
// registered. Only the agent rotates (POST /api/agent/credentials/rotate);
// a forced rotation only makes it due.
func (c *Credential) AgentRotatedAt() time.Time {
	switch {
	case !c.SupersededAt.IsZero():
		return c.SupersededAt
	case c.RotatedFrom != "":
		return c.CreatedAt
	}
	return time.Time{}
}

// AgentNeverRotated reports whether a cluster's live credentials (neither
// expired nor revoked at now) show no rotation by its agent: it registered
// and has never rotated since. False when none is live. tether knows no
// more than this about an agent's schedule: the reference agent rotates
// when rotateAfter passes, the public operator only when its Cluster
// resource asks, so a forced rotation strands it at the end of the grace.
func AgentNeverRotated(creds []Credential, now time.Time) bool {
	live := false
	for i := range creds {
		switch creds[i].State(now) {
		case CredentialExpired, CredentialRevoked:
			continue
		}
		live = true
		if !creds[i].AgentRotatedAt().IsZero() {
			return false
		}
	}
	return live
}

// NeverRotatedWarning is what a forced rotation of cluster c warns of when
// AgentNeverRotated: its credentials stop working at stopsAt (grace from
// now) unless the agent rotates, and nothing tether knows says it will.
// grace 0: not known (an older server did not say).
func NeverRotatedWarning(c *Cluster, grace time.Duration, stopsAt time.Time) string {
	when := "within the rotation grace it will stop working when the grace ends"
	if grace > 0 {
		when = fmt.Sprintf("within the grace (%s) it will stop working at %s", graceText(grace), stopsAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("the agent of %s (%s) has never rotated its credential; if it does not rotate %s. "+
		"An agent that rotates only when told (the public operator rotates when its Cluster resource asks) must be told; "+
		"otherwise issue it a new registration token then (tether token issue %s)", c.Name, c.ID, when, c.ID)
}

// graceText is a grace period as people write it: 24h, 90m, 45s.
func graceText(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// CredentialRefusal is why a credential tether knows (its token matched)
// was refused: expired, revoked, or due and past its rotation window. It is
// the cause of the 401 (errors.As), kept for the server's log line so that
// on-call sees whose agent is locked out; the caller gets the error's
// message, the same as for an unknown token.
type CredentialRefusal struct {
	ClusterID    string
	CredentialID string
	State        CredentialState
}

func (e *CredentialRefusal) Error() string {
	return fmt.Sprintf("credential %s of cluster %s is %s", e.CredentialID, e.ClusterID, e.State)
}

func refused(c *Credential, state CredentialState, err *Error) error {
	return &Error{Code: err.Code, Message: err.Message, Err: &CredentialRefusal{ClusterID: c.ClusterID, CredentialID: c.ID, State: state}}
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
