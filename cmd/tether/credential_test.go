package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

type affected struct {
	ClusterID string `json:"clusterId"`
	Affected  int    `json:"affected"`
}

func TestCredentialListRotateRevoke(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "creds")
	reg := openRegistry(t, db)
	ctx := context.Background()
	agent, bearer := registerAgent(t, reg, c.RegistrationToken, "hmac", "lease")

	creds := okJSON[[]credentialView](t, db, "credential", "list", "creds")
	if len(creds) != 1 {
		t.Fatalf("got %d credentials, want 1", len(creds))
	}
	cr := creds[0]
	if cr.ID != agent.Credential.ID || cr.State != registry.CredentialActive || !cr.Signed || !slices.Equal(cr.Capabilities, []string{"hmac", "lease"}) {
		t.Errorf("got %+v, want %s active, signed, with hmac and lease", cr, agent.Credential.ID)
	}
	if cr.ExpiresAt.IsZero() || cr.RotateAfter.IsZero() || !cr.RotateAfter.Before(cr.ExpiresAt) {
		t.Errorf("got expiresAt %s and rotateAfter %s, want both set, rotate-after first", cr.ExpiresAt, cr.RotateAfter)
	}
	table := ok(t, db, "credential", "list", c.ClusterID).stdout
	for _, want := range []string{"STATE", "ROTATE AFTER", "GRACE", agent.Credential.ID, "active", "hmac,lease", "signed"} {
		if !strings.Contains(table, want) {
			t.Errorf("got credential list without %q\n%s", want, table)
		}
	}
	assertSecretAbsent(t, db, bearer, "creds")

	// Forced rotation: due now, working until the grace ends, so that an
	// agent that never rotates on a 401 (the public operator) is not cut
	// off at once.
	got := okJSON[affected](t, db, "credential", "rotate", "creds", "--reason", "routine")
	if got.Affected != 1 || got.ClusterID != c.ClusterID {
		t.Errorf("got %+v, want 1 credential of %s", got, c.ClusterID)
	}
	if cr := okJSON[[]credentialView](t, db, "credential", "list", "creds")[0]; cr.State != registry.CredentialActive || cr.RotateAfter.After(time.Now()) {
		t.Errorf("got %s rotating after %s, want active and due after a forced rotation", cr.State, cr.RotateAfter)
	}
	if table := ok(t, db, "credential", "list", "creds").stdout; !strings.Contains(table, "rotation due; works until in 24h") {
		t.Errorf("got credential list without the grace it has left\n%s", table)
	}
	if _, err := reg.Authenticate(ctx, bearer, registry.AuthAny); err != nil {
		t.Errorf("got %v using a force-rotated credential inside its grace, want it to work", err)
	}
	rotating, err := reg.Authenticate(ctx, bearer, registry.AuthRotate)
	if err != nil {
		t.Fatalf("got %v authenticating to rotate, want the rotation allowed", err)
	}
	fresh, err := reg.RotateCredential(ctx, rotating)
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	creds = okJSON[[]credentialView](t, db, "credential", "list", "creds")
	if len(creds) != 2 || creds[0].ID != fresh.Credential.ID || creds[0].State != registry.CredentialActive {
		t.Errorf("got %+v, want the rotated credential newest and active", creds)
	}

	// Revocation is immediate.
	out := ok(t, db, "credential", "revoke", "creds", "--reason", "compromised").stdout
	if !strings.Contains(out, "Revoked") || !strings.Contains(out, "tether token issue") {
		t.Errorf("got %q, want it to say what was revoked and how the agent gets back", out)
	}
	for _, cr := range okJSON[[]credentialView](t, db, "credential", "list", "creds") {
		if cr.ID == fresh.Credential.ID && cr.State != registry.CredentialRevoked {
			t.Errorf("got %s %s, want revoked", cr.ID, cr.State)
		}
	}
	if _, err := reg.Authenticate(ctx, fresh.Token.Reveal(), registry.AuthAny); registry.ErrorCode(err) != registry.CodeUnauthorized {
		t.Errorf("got %v with a revoked credential, want unauthorized", err)
	}
	if got := okJSON[affected](t, db, "credential", "revoke", "creds"); got.Affected != 0 {
		t.Errorf("got %d revoked again, want 0", got.Affected)
	}
	if out := ok(t, db, "credential", "rotate", "creds").stdout; !strings.Contains(out, "no live credentials") {
		t.Errorf("got %q, want it to say there was nothing to rotate", out)
	}
	audit := okJSON[[]registry.AuditEntry](t, db, "audit", "--cluster", "creds", "--action", "credential.")
	var actions []string
	for _, e := range audit {
		actions = append(actions, e.Action)
	}
	for _, want := range []string{registry.AuditCredentialForce, registry.AuditCredentialRotate, registry.AuditCredentialRevoke} {
		if !slices.Contains(actions, want) {
			t.Errorf("got audit actions %v, want %s among them", actions, want)
		}
	}
	wantError(t, cli(t, db, "credential", "list", "nope"), exitError, `no cluster has the id or name "nope"`)
}

// A capability the cluster's policy starts requiring: the credentials below
// it are named in credential list and cluster get, until a rotation adds it.
func TestCredentialBelowPolicy(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "policy")
	reg := openRegistry(t, db)
	registerAgent(t, reg, c.RegistrationToken, "lease")
	ok(t, db, "cluster", "edit", "policy", "--require-capability", "hmac")

	cr := okJSON[[]credentialView](t, db, "credential", "list", "policy")[0]
	if !slices.Equal(cr.BelowPolicy, []string{"hmac"}) {
		t.Errorf("got belowPolicy %v, want [hmac]", cr.BelowPolicy)
	}
	for _, args := range [][]string{{"credential", "list", "policy"}, {"cluster", "get", "policy"}} {
		if out := ok(t, db, args...).stdout; !strings.Contains(out, "below policy: needs hmac") {
			t.Errorf("%v does not say the credential is below policy:\n%s", args, out)
		}
	}
}

// cluster create/edit --require-client-cert set the mTLS policy, and cluster
// get says so.
func TestClusterRequireClientCert(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok(t, db, "cluster", "create", "--name", "mtls", "--require-client-cert")
	c := okJSON[registry.Cluster](t, db, "cluster", "get", "mtls", "-o", "json")
	if !c.Policy.RequireClientCertificate || c.Policy.LeaseSeconds != registry.DefaultLeaseSeconds {
		t.Errorf("got policy %+v, want mTLS required and the default lease", c.Policy)
	}
	if out := ok(t, db, "cluster", "get", "mtls").stdout; !strings.Contains(out, "required (mTLS)") {
		t.Errorf("cluster get does not say mTLS is required:\n%s", out)
	}
	ok(t, db, "cluster", "edit", "mtls", "--require-client-cert=false")
	if c := okJSON[registry.Cluster](t, db, "cluster", "get", "mtls", "-o", "json"); c.Policy.RequireClientCertificate {
		t.Error("--require-client-cert=false did not turn mTLS off")
	}
}

// TestCredentialRotateWarnsWhenTheAgentNeverRotated: tether cannot make an
// agent rotate, so it says what it knows. A credential whose agent has not
// rotated since it registered shows "never"; a forced rotation of it warns
// that the agent will stop working at the end of the grace unless it
// rotates (the public operator rotates only when its Cluster resource
// asks). Once the agent has rotated, the list says when, and a forced
// rotation no longer warns.
func TestCredentialRotateWarnsWhenTheAgentNeverRotated(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "operator")
	reg := openRegistry(t, db)
	_, bearer := registerAgent(t, reg, c.RegistrationToken) // as the public operator: no capabilities

	table := ok(t, db, "credential", "list", "operator").stdout
	if !strings.Contains(table, "AGENT ROTATED") || !strings.Contains(table, "never") {
		t.Errorf("got credential list without its agent's rotation (never)\n%s", table)
	}
	if cr := okJSON[[]credentialView](t, db, "credential", "list", "operator")[0]; cr.AgentRotatedAt != nil {
		t.Errorf("got agentRotatedAt %v for an agent that never rotated, want null", cr.AgentRotatedAt)
	}
	if out := ok(t, db, "cluster", "get", "operator").stdout; !strings.Contains(out, "agent rotated never") {
		t.Errorf("got cluster get without 'agent rotated never'\n%s", out)
	}

	before := time.Now()
	out := ok(t, db, "credential", "rotate", "operator").stdout
	want := "Warning: the agent of operator (" + c.ClusterID + ") has never rotated its credential; if it does not rotate within the grace (24h) it will stop working at "
	_, at, found := strings.Cut(out, want)
	if !found {
		t.Fatalf("got %q, want the warning %q…", out, want)
	}
	stops, err := time.Parse(time.RFC3339, strings.Fields(at)[0][:len("2006-01-02T15:04:05Z")])
	if err != nil || stops.Before(before.Add(24*time.Hour).Truncate(time.Second)) || stops.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("got the agent stopping at %q (%v), want 24h from now", at, err)
	}
	if strings.Contains(out, "own schedule") {
		t.Errorf("got %q: tether does not know the agent's schedule", out)
	}
	if got := okJSON[credentialsChanged](t, db, "credential", "rotate", "operator"); got.Affected != 1 || !strings.Contains(got.Warning, "has never rotated its credential") || got.GraceUntil == nil {
		t.Errorf("got %+v, want the warning and graceUntil in -o json", got)
	}

	// The agent rotates: now tether knows it does.
	a, err := reg.Authenticate(context.Background(), bearer, registry.AuthRotate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RotateCredential(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	for _, cr := range okJSON[[]credentialView](t, db, "credential", "list", "operator") {
		if cr.AgentRotatedAt == nil {
			t.Errorf("got credential %s without agentRotatedAt after its agent rotated", cr.ID)
		}
	}
	if out := ok(t, db, "credential", "rotate", "operator").stdout; strings.Contains(out, "Warning") {
		t.Errorf("got %q: an agent that rotated is not warned about", out)
	}
}
