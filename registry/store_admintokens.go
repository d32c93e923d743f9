package registry

import (
	"context"
	"time"
)

// AdminTokenStore is the part of Store that keeps admin tokens.
// Every method that writes is atomic, as Store's are.
type AdminTokenStore interface {
	// AdminTokenCreate inserts a token and p.Audit. CodeConflict if an
	// unrevoked token has the name.
	AdminTokenCreate(ctx context.Context, p AdminTokenCreateParams) error
	AdminTokenGet(ctx context.Context, id string) (*AdminToken, error)
	// AdminTokenList returns every token, revoked ones included, newest
	// first.
	AdminTokenList(ctx context.Context) ([]AdminToken, error)
	// AdminTokenRevoke revokes an unrevoked token. CodeConflict if it was
	// already revoked.
	AdminTokenRevoke(ctx context.Context, p AdminTokenRevokeParams) (*AdminToken, error)
	// AdminTokenSetSSHKeys replaces an unrevoked token's SSH keys, with
	// p.Audit. CodeConflict if it was revoked.
	AdminTokenSetSSHKeys(ctx context.Context, p AdminTokenSSHKeysParams) (*AdminToken, error)
}

type AdminTokenSSHKeysParams struct {
	ID    string
	Keys  []SSHKey
	Audit AuditEntry
}

type AdminTokenCreateParams struct {
	Token AdminToken
	Audit AuditEntry
}

type AdminTokenRevokeParams struct {
	ID     string
	Now    time.Time
	Reason string
	Audit  AuditEntry
}
