package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

func TestTokenIssueListRevoke(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "tokens")

	// Table output: the secret once, with the note and the command.
	res := ok(t, db, "token", "issue", "tokens", "--ttl", "2d")
	i := strings.Index(res.stdout, "tether_reg_")
	if i < 0 {
		t.Fatalf("got no token in the output\n%s", res)
	}
	second := strings.Fields(res.stdout[i:])[0]
	if n := strings.Count(res.stdout, second); n != 1 {
		t.Errorf("got the token %d times, want once\n%s", n, res)
	}
	if !strings.Contains(res.stdout, "will not be shown again") || !strings.Contains(res.stdout, "tether agent register --server URL --token - --state-dir DIR") {
		t.Errorf("got output without the one-time note and the register command\n%s", res)
	}

	// JSON output: the same fields as cluster create.
	before := time.Now()
	third := okJSON[adminclient.RegistrationToken](t, db, "token", "issue", c.ClusterID, "--ttl", "90m")
	if third.ClusterID != c.ClusterID || !strings.HasPrefix(third.Token, "tether_reg_") || !strings.HasPrefix(third.ID, "rt-") {
		t.Errorf("got %+v, want clusterId, id and a tether_reg_ token, as the admin API answers", third)
	}
	if want := before.Add(90 * time.Minute); third.ExpiresAt.Before(want.Add(-time.Minute)) || third.ExpiresAt.After(want.Add(time.Minute)) {
		t.Errorf("got expiresAt %s, want about %s", third.ExpiresAt, want)
	}

	// Issuing voids the older unused tokens; only the newest is usable.
	tokens := readTokens(t, db, "tokens")
	if len(tokens) != 3 {
		t.Fatalf("got %d tokens, want 3", len(tokens))
	}
	if tokens[0].ID != third.ID || tokens[0].State != registry.TokenActive {
		t.Errorf("got newest token %s %s, want %s active", tokens[0].ID, tokens[0].State, third.ID)
	}
	for _, tk := range tokens[1:] {
		if tk.State != registry.TokenRevoked || tk.RevokeReason != registry.TokenRevokedSuperseded {
			t.Errorf("got older token %s %s (%s), want revoked as superseded", tk.ID, tk.State, tk.RevokeReason)
		}
	}
	table := ok(t, db, "token", "list").stdout
	for _, want := range []string{"STATE", third.ID, "active", "revoked", "superseded", "tokens"} {
		if !strings.Contains(table, want) {
			t.Errorf("got token list without %q\n%s", want, table)
		}
	}
	for _, secret := range []string{c.RegistrationToken, second, third.Token} {
		assertSecretAbsent(t, db, secret, "tokens")
	}

	// Revoke by id.
	out := ok(t, db, "token", "revoke", third.ID, "--reason", "leaked in chat").stdout
	if !strings.Contains(out, "Revoked registration token "+third.ID) {
		t.Errorf("got %q, want it to confirm the revocation", out)
	}
	if tk := readTokens(t, db, "tokens")[0]; tk.State != registry.TokenRevoked || tk.RevokeReason != registry.TokenRevokedByAdmin {
		t.Errorf("got %s (%s), want revoked by an admin", tk.State, tk.RevokeReason)
	}
	// The admin's reason is in the audit trail.
	audit := okJSON[[]registry.AuditEntry](t, db, "audit", "--action", registry.AuditTokenRevoke)
	if len(audit) != 1 || audit[0].TargetID != third.ID || audit[0].Reason != "leaked in chat" {
		t.Errorf("got audit %+v, want the revocation of %s with its reason", audit, third.ID)
	}
	wantError(t, cli(t, db, "token", "revoke", third.ID), exitError, "already revoked")
	wantError(t, cli(t, db, "token", "revoke", "rt-nope"), exitError, `no registration token has the id "rt-nope"`)
	reg := openRegistry(t, db)
	if _, err := reg.Register(context.Background(), registry.RegisterParams{Token: third.Token}); registry.ErrorCode(err) != registry.CodeRegistrationTokenInvalid {
		t.Errorf("got %v registering with a revoked token, want registration_token_invalid", err)
	}

	// A redeemed token shows as used, with the credential it issued.
	fourth := okJSON[adminclient.RegistrationToken](t, db, "token", "issue", "tokens")
	agent, _ := registerAgent(t, reg, fourth.Token)
	if tk := readTokens(t, db, "tokens")[0]; tk.State != registry.TokenUsed || tk.CredentialID != agent.Credential.ID {
		t.Errorf("got %s with credential %q, want used by %s", tk.State, tk.CredentialID, agent.Credential.ID)
	}
	if table := ok(t, db, "token", "list", "tokens").stdout; !strings.Contains(table, "used") || !strings.Contains(table, agent.Credential.ID) {
		t.Errorf("got token list without the used token's credential\n%s", table)
	}
	wantError(t, cli(t, db, "token", "revoke", fourth.ID), exitError, "already used")
}

func TestTokenTTLBounds(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "ttl")
	wantError(t, cli(t, db, "token", "issue", "ttl", "--ttl", "30s"), exitError, "token lifetime 30s must be between")
	wantError(t, cli(t, db, "token", "issue", "ttl", "--ttl", "8d"), exitError, "token lifetime")
	wantError(t, cli(t, db, "token", "issue", "nope"), exitError, `no cluster has the id or name "nope"`)
	wantError(t, cli(t, db, "cluster", "create", "--name", "ttl2", "--token-ttl", "10d"), exitError, "token lifetime")
	// The refused create made nothing.
	if list := okJSON[[]registry.Cluster](t, db, "cluster", "list"); len(list) != 1 {
		t.Errorf("got %d clusters, want 1 (a refused create makes none)", len(list))
	}
}
