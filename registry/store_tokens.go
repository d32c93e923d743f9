package registry

import (
	"context"
	"time"
)

// TokenStore is the part of Store that keeps registration tokens.
// Every method that writes is atomic, as Store's are.
type TokenStore interface {
	// TokenCreate inserts a registration token and voids the cluster's older
	// unused tokens (revoked, reason "superseded").
	TokenCreate(ctx context.Context, p TokenCreateParams) error
	TokenGet(ctx context.Context, id string) (*RegistrationToken, error)
	// TokenList returns a cluster's tokens, newest first; all tokens if
	// clusterID is empty.
	TokenList(ctx context.Context, clusterID string) ([]RegistrationToken, error)
	// TokenRevoke revokes an unused, unrevoked token. CodeConflict if it was
	// already used or revoked.
	TokenRevoke(ctx context.Context, p TokenRevokeParams) (*RegistrationToken, error)
	// TokenRedeem is registration. In one transaction it reads the token and
	// its cluster, runs p.Check on them (which must have no side effects: a
	// store may run it again when it retries the transaction) (an error from Check aborts and is
	// returned as is), marks the token used only if it still is unused,
	// inserts p.Credential for the token's cluster, makes the cluster Active,
	// records the negotiated capabilities in its status, and writes p.Audit.
	// Of concurrent redemptions of one token exactly one succeeds; the others
	// get the error Check returns for a used token. CodeNotFound: no such token.
	TokenRedeem(ctx context.Context, p TokenRedeemParams) (*Cluster, error)
}

type TokenCreateParams struct {
	Token RegistrationToken
	Audit AuditEntry
}

type TokenRevokeParams struct {
	ID    string
	Now   time.Time
	Audit AuditEntry
}

type TokenRedeemParams struct {
	TokenID    string
	Now        time.Time
	Check      func(*RegistrationToken, *Cluster) error
	Credential Credential // ClusterID is filled in from the token
	// PublicKey, when set, becomes the cluster's public key (the agent's
	// encryption key), in the same transaction; the record's version
	// increases when it changes.
	PublicKey AgentPublicKey
	Audit     AuditEntry // ClusterID and TargetID are filled in
}
