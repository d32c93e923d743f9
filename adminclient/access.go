package adminclient

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Who the token is, its registration tokens and agent credentials, the
// admin tokens, and tether's CA: the API's access resources.

// Identity is who an admin token is (GET /whoami).
type Identity struct {
	Actor string `json:"actor"`
	Role  string `json:"role"` // viewer, operator or admin
	Org   string `json:"org"`  // empty: every organization
}

// Whoami returns who the client's token is: a refused token is an *Error
// here, before anything else is asked.
func (c *Client) Whoami(ctx context.Context, opts ...CallOption) (*Identity, error) {
	var out Identity
	return &out, c.call(ctx, request{method: http.MethodGet, path: "/whoami", out: &out}, opts)
}

// SetClusterPaused pauses a cluster's queue (its agent gets no job,
// submissions still queue) or resumes it.
func (c *Client) SetClusterPaused(ctx context.Context, cluster string, paused bool, why string, opts ...CallOption) (*Cluster, error) {
	action := "resume"
	if paused {
		action = "pause"
	}
	var out Cluster
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("clusters", cluster, action), body: reason(why), out: &out}, opts)
}

// ListTokens returns a page of a cluster's registration tokens, or of every
// cluster's when cluster is empty (Token, the secret, is never shown again).
func (c *Client) ListTokens(ctx context.Context, cluster string, limit int, cursor string, opts ...CallOption) (*Page[RegistrationToken], error) {
	p := "/registration-tokens"
	if cluster != "" {
		p = path("clusters", cluster, "registration-tokens")
	}
	var out Page[RegistrationToken]
	return &out, c.call(ctx, request{method: http.MethodGet, path: p, query: pageQuery(limit, cursor), out: &out}, opts)
}

// Credential is an agent's credential (its secret is never shown).
type Credential struct {
	ID           string    `json:"id"`
	ClusterID    string    `json:"clusterId"`
	Capabilities []string  `json:"capabilities"`
	CreatedAt    time.Time `json:"createdAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	RotateAfter  time.Time `json:"rotateAfter"`
	RevokedAt    time.Time `json:"revokedAt"`
}

// ListCredentials returns a page of a cluster's agent credentials.
func (c *Client) ListCredentials(ctx context.Context, cluster string, limit int, cursor string, opts ...CallOption) (*Page[Credential], error) {
	var out Page[Credential]
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("clusters", cluster, "credentials"),
		query: pageQuery(limit, cursor), out: &out}, opts)
}

// CredentialsChange is the answer of RotateCredentials and RevokeCredentials.
type CredentialsChange struct {
	// Credentials is how many live credentials were made due or revoked.
	Credentials int `json:"credentials"`
	// RotationGraceSeconds and GraceUntil (a rotation): how long, and until
	// when, the credentials keep working unless the agent rotates.
	RotationGraceSeconds int64     `json:"rotationGraceSeconds"`
	GraceUntil           time.Time `json:"graceUntil"`
	// Warning is set when the agent has never rotated a credential.
	Warning string `json:"warning"`
}

// RotateCredentials makes a cluster's live credentials due for rotation
// now: the agent rotates at its next request, or loses access after the
// grace.
func (c *Client) RotateCredentials(ctx context.Context, cluster, why string, opts ...CallOption) (*CredentialsChange, error) {
	var out CredentialsChange
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("clusters", cluster, "credentials", "rotate"),
		body: reason(why), out: &out}, opts)
}

// RevokeCredentials revokes a cluster's live credentials: its agent must
// register again.
func (c *Client) RevokeCredentials(ctx context.Context, cluster, why string, opts ...CallOption) (*CredentialsChange, error) {
	var out CredentialsChange
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("clusters", cluster, "credentials", "revoke"),
		body: reason(why), out: &out}, opts)
}

// AdminToken is an admin token's record (its secret is shown once, by
// CreateAdminToken).
type AdminToken struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Role         string    `json:"role"`
	Org          string    `json:"org"`
	CreatedAt    time.Time `json:"createdAt"`
	CreatedBy    string    `json:"createdBy"`
	ExpiresAt    time.Time `json:"expiresAt"` // zero: never
	RevokedAt    time.Time `json:"revokedAt"`
	RevokeReason string    `json:"revokeReason"`
	// SSHKeys are the public keys this identity may open the console over
	// SSH with (tether serve --ssh-listen).
	SSHKeys []SSHKey `json:"sshKeys"`
	// Token is the secret, set only in CreateAdminToken's answer.
	Token string `json:"token"`
}

// AdminTokenSpec is what CreateAdminToken takes.
type AdminTokenSpec struct {
	Name string `json:"name"`
	Role string `json:"role"`          // viewer, operator or admin
	Org  string `json:"org,omitempty"` // empty: every organization
	// Expires is how long the token lasts, as "720h" (empty: for ever).
	Expires string `json:"expires,omitempty"`
	// SSHKeys are public keys in authorized_keys form ("ssh-ed25519 AAAA...
	// alice@laptop") the identity may open the console over SSH with.
	SSHKeys []string `json:"sshKeys,omitempty"`
}

// SSHKey is one of an admin identity's SSH public keys.
type SSHKey struct {
	Fingerprint string `json:"fingerprint"` // SHA256:..., as ssh-keygen -lf prints it
	PublicKey   string `json:"publicKey"`   // authorized_keys form
	Comment     string `json:"comment"`
}

// CreateAdminToken issues an admin token; its secret (Token) is shown this
// once.
func (c *Client) CreateAdminToken(ctx context.Context, spec AdminTokenSpec, opts ...CallOption) (*AdminToken, error) {
	var out AdminToken
	return &out, c.call(ctx, request{method: http.MethodPost, path: "/admin-tokens", body: spec, out: &out}, opts)
}

// ListAdminTokens returns the admin tokens.
func (c *Client) ListAdminTokens(ctx context.Context, opts ...CallOption) ([]AdminToken, error) {
	var out Page[AdminToken]
	return out.Items, c.call(ctx, request{method: http.MethodGet, path: "/admin-tokens", out: &out}, opts)
}

// SetAdminTokenSSHKeys replaces an admin identity's SSH public keys
// (authorized_keys lines); an empty list takes them all away.
func (c *Client) SetAdminTokenSSHKeys(ctx context.Context, token string, keys []string, opts ...CallOption) (*AdminToken, error) {
	if keys == nil {
		keys = []string{}
	}
	var out AdminToken
	return &out, c.call(ctx, request{method: http.MethodPatch, path: path("admin-tokens", token),
		body: map[string][]string{"sshKeys": keys}, out: &out}, opts)
}

// RevokeAdminToken revokes an admin token by id or name and returns it.
func (c *Client) RevokeAdminToken(ctx context.Context, token, why string, opts ...CallOption) (*AdminToken, error) {
	q := url.Values{}
	setIf(q, "reason", why)
	var out AdminToken
	return &out, c.call(ctx, request{method: http.MethodDelete, path: path("admin-tokens", token), query: q, out: &out}, opts)
}

// CA is one of tether's certificate authorities, with its certificate as
// PEM.
type CA struct {
	ID           string    `json:"id"`
	CreatedAt    time.Time `json:"createdAt"`
	NotAfter     time.Time `json:"notAfter"`
	RetiredAt    time.Time `json:"retiredAt"`
	TrustedUntil time.Time `json:"trustedUntil"`
	Certificate  string    `json:"certificate"`
}

// CAs returns tether's CA, then the replaced ones still trusted; none when
// tether has no CA.
func (c *Client) CAs(ctx context.Context, opts ...CallOption) ([]CA, error) {
	var out Page[CA]
	return out.Items, c.call(ctx, request{method: http.MethodGet, path: "/ca", out: &out}, opts)
}

// InitCA creates tether's CA, or with replace a new one that replaces it
// (the old one stays trusted until its certificates expire). Admin only.
func (c *Client) InitCA(ctx context.Context, replace bool, opts ...CallOption) (*CA, error) {
	var out CA
	return &out, c.call(ctx, request{method: http.MethodPost, path: "/ca", body: map[string]bool{"replace": replace}, out: &out}, opts)
}
