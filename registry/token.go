package registry

import "time"

// Registration token lifetimes.
const (
	DefaultTokenTTL = 24 * time.Hour
	MinTokenTTL     = time.Minute
	MaxTokenTTL     = 7 * 24 * time.Hour
)

// Why a token stopped being usable before it was redeemed.
const (
	TokenRevokedByAdmin    = "revoked"
	TokenRevokedSuperseded = "superseded"
)

// TokenState is derived from a token's timestamps.
type TokenState string

const (
	TokenActive  TokenState = "active"
	TokenUsed    TokenState = "used"
	TokenExpired TokenState = "expired"
	TokenRevoked TokenState = "revoked"
)

// RegistrationToken is a one-time token that lets an agent register a cluster.
// Only the hash of its secret is kept.
type RegistrationToken struct {
	ID           string    `json:"id"`
	ClusterID    string    `json:"clusterId"`
	CreatedAt    time.Time `json:"createdAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	CreatedBy    string    `json:"createdBy"`
	UsedAt       time.Time `json:"usedAt,omitzero"`
	CredentialID string    `json:"credentialId,omitempty"` // the credential its redemption issued
	RevokedAt    time.Time `json:"revokedAt,omitzero"`
	RevokeReason string    `json:"revokeReason,omitempty"`
	Hash         []byte    `json:"-"`
}

// State says whether the token can still be redeemed, and if not, why.
func (t *RegistrationToken) State(now time.Time) TokenState {
	switch {
	case !t.UsedAt.IsZero():
		return TokenUsed
	case !t.RevokedAt.IsZero():
		return TokenRevoked
	case !now.Before(t.ExpiresAt):
		return TokenExpired
	}
	return TokenActive
}

// IssuedToken is a freshly issued token with its secret: the only time the
// secret exists outside the agent that redeems it.
type IssuedToken struct {
	Token  RegistrationToken
	Secret Secret
}
