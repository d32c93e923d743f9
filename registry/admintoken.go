package registry

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// AdminToken lets a program or a person reach the admin API with a role (and
// optionally an organization scope). Only a hash of its secret is kept.
type AdminToken struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Role         Role      `json:"role"`
	Org          string    `json:"org,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	CreatedBy    string    `json:"createdBy"`
	ExpiresAt    time.Time `json:"expiresAt,omitzero"` // zero: never
	RevokedAt    time.Time `json:"revokedAt,omitzero"`
	RevokeReason string    `json:"revokeReason,omitempty"`
	// SSHKeys are the public keys that open the console over SSH as this
	// identity (tether serve --ssh-listen); none: it cannot.
	SSHKeys []SSHKey `json:"sshKeys,omitempty"`
	Hash    []byte   `json:"-"`
}

// AdminTokenState says whether a token still works.
type AdminTokenState string

const (
	AdminTokenActive  AdminTokenState = "active"
	AdminTokenExpired AdminTokenState = "expired"
	AdminTokenRevoked AdminTokenState = "revoked"
)

// State is the token's state at now.
func (t *AdminToken) State(now time.Time) AdminTokenState {
	switch {
	case !t.RevokedAt.IsZero():
		return AdminTokenRevoked
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return AdminTokenExpired
	}
	return AdminTokenActive
}

// Actor is who the token acts as.
func (t *AdminToken) Actor() Actor {
	return Actor{Kind: ActorAdminToken, Name: t.Name, Role: t.Role, Org: t.Org}
}

// IssuedAdminToken is a new admin token with its secret: the only time the
// secret exists outside the caller's hands.
type IssuedAdminToken struct {
	Token  AdminToken
	Secret Secret
}

// Admin token limits.
const (
	adminTokenPrefix      = "tether_adm_"
	MaxAdminTokenTTL      = 5 * 365 * 24 * time.Hour
	AuditAdminTokenIssue  = "admin_token.create"
	AuditAdminTokenRevoke = "admin_token.revoke"
)

var adminTokenName = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)

func newAdminTokenID() string { return "at-" + newULID() }

// CreateAdminToken issues a token named name with role (and, when org is set,
// confined to that organization's clusters), valid for ttl (zero: until
// revoked). An organization-scoped admin creates tokens of its own
// organization only.
func (r *Registry) CreateAdminToken(ctx context.Context, name string, role Role, org string, ttl time.Duration) (*IssuedAdminToken, error) {
	return r.IssueAdminToken(ctx, AdminTokenSpec{Name: name, Role: role, Org: org, TTL: ttl})
}

// AdminTokenSpec is what IssueAdminToken issues.
type AdminTokenSpec struct {
	Name string
	Role Role
	Org  string
	TTL  time.Duration // zero: until revoked
	// SSHKeys are authorized_keys lines (ParseSSHKeys) that open the
	// console over SSH as this identity.
	SSHKeys []string
}

// IssueAdminToken is CreateAdminToken with every field of the spec.
func (r *Registry) IssueAdminToken(ctx context.Context, spec AdminTokenSpec) (*IssuedAdminToken, error) {
	name, role, org, ttl := spec.Name, spec.Role, spec.Org, spec.TTL
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	name, org = strings.TrimSpace(name), strings.TrimSpace(org)
	if !adminTokenName.MatchString(name) {
		return nil, Errorf(CodeInvalid, "admin token name %q must be 1 to 63 lowercase letters, digits, '.', '_' or '-', starting and ending with a letter or digit", name)
	}
	if !role.Valid() {
		return nil, Errorf(CodeInvalid, "role %q is not one of viewer, operator, admin", role)
	}
	if ttl < 0 || ttl > MaxAdminTokenTTL {
		return nil, Errorf(CodeInvalid, "expiry %s must be between 0 (never) and %s", ttl, MaxAdminTokenTTL)
	}
	if scope := orgScope(ctx); scope != "" {
		if org != "" && org != scope {
			return nil, Errorf(CodeForbidden, "%s may only create tokens of organization %q, not %q", ActorFrom(ctx), scope, org)
		}
		org = scope
	}
	if len(org) > 100 || strings.ContainsFunc(org, isControl) {
		return nil, Errorf(CodeInvalid, "organization %q must be at most 100 printable characters", org)
	}
	keys, err := ParseSSHKeys(spec.SSHKeys)
	if err != nil {
		return nil, err
	}
	if err := r.sshKeysFree(ctx, "", keys); err != nil {
		return nil, err
	}
	now := r.Now()
	t := AdminToken{ID: newAdminTokenID(), Name: name, Role: role, Org: org, CreatedAt: now, CreatedBy: ActorFrom(ctx).String(), SSHKeys: keys}
	if ttl > 0 {
		t.ExpiresAt = now.Add(ttl)
	}
	secret := newBearer(adminTokenPrefix, t.ID)
	t.Hash = hashSecret(secret.Reveal())
	scope := "every organization"
	if org != "" {
		scope = "organization " + org
	}
	what := "admin-token:" + name + " with role " + string(role) + " over " + scope
	if len(keys) > 0 {
		what += " and SSH keys " + sshKeyFingerprints(keys)
	}
	err = r.store.AdminTokenCreate(ctx, AdminTokenCreateParams{
		Token: t,
		Audit: r.auditEntry(ctx, AuditAdminTokenIssue, "", "admin_token", t.ID, what),
	})
	if err != nil {
		return nil, err
	}
	return &IssuedAdminToken{Token: t, Secret: secret}, nil
}

// ListAdminTokens returns the admin tokens the actor may see: all of them, or
// those of its organization.
func (r *Registry) ListAdminTokens(ctx context.Context) ([]AdminToken, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	all, err := r.store.AdminTokenList(ctx)
	if err != nil {
		return nil, err
	}
	scope := orgScope(ctx)
	out := all[:0]
	for _, t := range all {
		if scope == "" || t.Org == scope {
			out = append(out, t)
		}
	}
	return out, nil
}

// RevokeAdminToken revokes the unrevoked token with this name (or id).
func (r *Registry) RevokeAdminToken(ctx context.Context, nameOrID, reason string) (*AdminToken, error) {
	tokens, err := r.ListAdminTokens(ctx)
	if err != nil {
		return nil, err
	}
	ref := strings.TrimSpace(nameOrID)
	var target *AdminToken
	for i := range tokens {
		t := &tokens[i]
		if t.ID == ref || (t.Name == ref && t.RevokedAt.IsZero()) {
			target = t
			break
		}
	}
	if target == nil {
		return nil, Errorf(CodeNotFound, "no live admin token is named %q (tether admin-token list shows them)", ref)
	}
	now := r.Now()
	// The feed evicts it too; this caller's next request must already be
	// refused.
	defer r.cache.evictAdminTokens()
	return r.store.AdminTokenRevoke(ctx, AdminTokenRevokeParams{
		ID: target.ID, Now: now, Reason: reason,
		Audit: r.auditEntry(ctx, AuditAdminTokenRevoke, "", "admin_token", target.ID, reason),
	})
}

// AuthenticateAdmin returns the actor an admin API bearer token acts as.
// Every failure is the same CodeUnauthorized, whatever the cause.
func (r *Registry) AuthenticateAdmin(ctx context.Context, bearer string) (Actor, error) {
	id, ok := parseBearer(adminTokenPrefix, "at-", bearer)
	if !ok {
		return Actor{}, errAdminUnauthorized
	}
	var t *AdminToken
	var err error
	if r.hub.start() == nil {
		t, err = r.cache.adminToken(ctx, r.store, id) // every admin API request reads it
	} else {
		t, err = r.store.AdminTokenGet(ctx, id)
	}
	if ErrorCode(err) == CodeNotFound {
		return Actor{}, errAdminUnauthorized
	}
	if err != nil {
		return Actor{}, err
	}
	if !equalHash(t.Hash, hashSecret(bearer)) || t.State(r.Now()) != AdminTokenActive {
		return Actor{}, errAdminUnauthorized
	}
	return t.Actor(), nil
}

var errAdminUnauthorized = Errorf(CodeUnauthorized, "admin token unknown, expired or revoked: check the token (a copy of what tether admin-token create printed), or have an admin issue a new one")

// IsAdminToken reports whether a bearer string is shaped like an admin token
// (the agent API refuses one with a message that says so).
func IsAdminToken(bearer string) bool { return strings.HasPrefix(bearer, adminTokenPrefix) }

// adminRecheckInterval is how often a request held by an admin token checks
// it again without being told of a change: for its expiry (a time, not a
// change), and while the change feed is not being followed. A check is a
// cache lookup while the feed is followed.
const adminRecheckInterval = time.Second

// WhileAdminTokenWorks returns a context for a request held open by bearer
// (a ?wait= on a job, a watch stream) that ends once bearer no longer
// authenticates: revoked, by this process or another sharing the store, or
// expired. Its cause (context.Cause) is then AuthenticateAdmin's
// CodeUnauthorized error. A revocation is noticed as soon as the change
// feed delivers it (the hub wakes the holders up); expiry, and a revocation
// while the feed is not followed, within adminRecheckInterval. A store that
// fails to answer ends nothing: only a refusal does.
func (r *Registry) WhileAdminTokenWorks(ctx context.Context, bearer string) (context.Context, context.CancelFunc) {
	return r.whileWorks(ctx, func(ctx context.Context) error {
		_, err := r.AuthenticateAdmin(ctx, bearer)
		return err
	})
}
