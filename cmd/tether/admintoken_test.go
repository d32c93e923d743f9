package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestAdminTokenCLI(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	issued := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "ci-deployer", "--role", "operator", "--org", "payments", "--expires", "90d")
	if !strings.HasPrefix(issued.Token, "tether_adm_") || issued.Role != "operator" || issued.Org != "payments" || issued.ExpiresAt == nil {
		t.Fatalf("create -o json = %+v", issued)
	}
	if d := time.Until(*issued.ExpiresAt); d < 89*24*time.Hour || d > 91*24*time.Hour {
		t.Fatalf("expires in %s, want 90 days", d)
	}
	out := ok(t, db, "admin-token", "create", "--name", "oncall", "--role", "viewer").stdout
	if !strings.Contains(out, "shown only this once") || !strings.Contains(out, "tether_adm_") || !strings.Contains(out, "never expires") {
		t.Fatalf("create table output:\n%s", out)
	}

	list := ok(t, db, "admin-token", "list").stdout
	for _, want := range []string{"ci-deployer", "operator", "payments", "oncall", "viewer", "active"} {
		if !strings.Contains(list, want) {
			t.Fatalf("list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, issued.Token) || strings.Contains(ok(t, db, "admin-token", "list", "-o", "json").stdout, issued.Token[len(issued.Token)-32:]) {
		t.Fatal("admin-token list shows a secret")
	}

	reg := openRegistry(t, db)
	actor, err := reg.AuthenticateAdmin(context.Background(), issued.Token)
	if err != nil || actor.String() != "admin-token:ci-deployer" {
		t.Fatalf("the printed token does not authenticate: %v %v", actor, err)
	}
	ok(t, db, "admin-token", "revoke", "ci-deployer", "--reason", "leaked")
	// Another process revoked it: this registry learns it from the change
	// feed (as it learns of a revoked credential), within moments.
	eventually(t, "the revoked admin token to stop authenticating", func() bool {
		_, err := reg.AuthenticateAdmin(context.Background(), issued.Token)
		return err != nil
	})
	if audit := ok(t, db, "audit", "--action", "admin_token.").stdout; !strings.Contains(audit, "admin_token.revoke") || !strings.Contains(audit, "leaked") {
		t.Fatalf("audit:\n%s", audit)
	}

	wantError(t, cli(t, db, "admin-token", "create", "--name", "x"), exitUsage, "--role")
	wantError(t, cli(t, db, "admin-token", "create", "--name", "x", "--role", "root"), exitUsage, "root")
	wantError(t, cli(t, db, "admin-token", "create", "--name", "oncall", "--role", "viewer"), exitError, "already exists")
	wantError(t, cli(t, db, "admin-token", "create", "--name", "Bad Name", "--role", "viewer"), exitError, "lowercase")
	wantError(t, cli(t, db, "admin-token", "revoke", "ci-deployer"), exitError, "no live admin token")
}
