package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func testAdminTokens(t *testing.T, newStore NewStore) {
	t.Run("IssueAuthenticateRevoke", func(t *testing.T) {
		e := newEnv(t, newStore)
		issued, err := e.reg.CreateAdminToken(e.ctx, "ci-deployer", registry.RoleOperator, "acme", 90*24*time.Hour)
		wantNoErr(t, err)
		secret := issued.Secret.Reveal()
		if !strings.HasPrefix(secret, "tether_adm_") || issued.Token.ExpiresAt.Sub(e.clock.Now()) != 90*24*time.Hour {
			t.Fatalf("issued %q expiring %v", secret, issued.Token.ExpiresAt)
		}
		actor, err := e.reg.AuthenticateAdmin(e.ctx, secret)
		wantNoErr(t, err)
		if actor.String() != "admin-token:ci-deployer" || actor.Role != registry.RoleOperator || actor.Org != "acme" {
			t.Fatalf("actor = %+v", actor)
		}
		for _, bad := range []string{"", "tether_adm_x", secret[:len(secret)-1] + "a", strings.Replace(secret, "tether_adm_", "tether_cred_", 1)} {
			if bad == secret {
				continue
			}
			_, err := e.reg.AuthenticateAdmin(e.ctx, bad)
			wantCode(t, err, registry.CodeUnauthorized)
		}

		// Only a hash is kept: the secret is in no list, record or audit entry.
		list, err := e.reg.ListAdminTokens(e.ctx)
		wantNoErr(t, err)
		raw, _ := json.Marshal(list)
		audit, _ := json.Marshal(e.auditFor("admin_token."))
		if strings.Contains(string(raw)+string(audit), secret[len(secret)-32:]) {
			t.Fatal("the admin token's secret is stored or listed in plain text")
		}
		if len(list) != 1 || list[0].Name != "ci-deployer" || len(list[0].Hash) == 0 {
			t.Fatalf("list = %+v", list)
		}

		_, err = e.reg.CreateAdminToken(e.ctx, "ci-deployer", registry.RoleViewer, "", 0)
		wantCode(t, err, registry.CodeConflict)
		for _, c := range []struct {
			name string
			role registry.Role
			ttl  time.Duration
		}{{"Bad Name", registry.RoleViewer, 0}, {"ok", "root", 0}, {"ok", registry.RoleViewer, -time.Hour}} {
			_, err := e.reg.CreateAdminToken(e.ctx, c.name, c.role, "", c.ttl)
			wantCode(t, err, registry.CodeInvalid)
		}

		revoked, err := e.reg.RevokeAdminToken(e.ctx, "ci-deployer", "rotated")
		wantNoErr(t, err)
		if revoked.RevokedAt.IsZero() || revoked.RevokeReason != "rotated" {
			t.Fatalf("revoked = %+v", revoked)
		}
		_, err = e.reg.AuthenticateAdmin(e.ctx, secret)
		wantCode(t, err, registry.CodeUnauthorized)
		_, err = e.reg.RevokeAdminToken(e.ctx, "ci-deployer", "")
		wantCode(t, err, registry.CodeNotFound)
		// The name is free again once revoked.
		_, err = e.reg.CreateAdminToken(e.ctx, "ci-deployer", registry.RoleViewer, "", 0)
		wantNoErr(t, err)
		if got := len(e.auditFor("admin_token.create")); got != 2 {
			t.Fatalf("admin_token.create audit entries = %d", got)
		}
		if got := e.auditFor("admin_token.revoke"); len(got) != 1 || got[0].Actor != "admin:tester" {
			t.Fatalf("admin_token.revoke audit = %+v", got)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		issued, err := e.reg.CreateAdminToken(e.ctx, "short", registry.RoleViewer, "", time.Hour)
		wantNoErr(t, err)
		e.clock.Advance(time.Hour - time.Millisecond)
		_, err = e.reg.AuthenticateAdmin(e.ctx, issued.Secret.Reveal())
		wantNoErr(t, err)
		e.clock.Advance(time.Millisecond)
		_, err = e.reg.AuthenticateAdmin(e.ctx, issued.Secret.Reveal())
		wantCode(t, err, registry.CodeUnauthorized)
	})

	t.Run("RolesAndScopes", func(t *testing.T) {
		e := newEnv(t, newStore)
		op, err := e.reg.CreateAdminToken(e.ctx, "op", registry.RoleOperator, "", 0)
		wantNoErr(t, err)
		opActor, _ := e.reg.AuthenticateAdmin(e.ctx, op.Secret.Reveal())
		opCtx := registry.WithActor(context.Background(), opActor)
		_, err = e.reg.CreateAdminToken(opCtx, "escalate", registry.RoleAdmin, "", 0)
		wantCode(t, err, registry.CodeForbidden)
		_, err = e.reg.ListAdminTokens(opCtx)
		wantCode(t, err, registry.CodeForbidden)

		acmeAdmin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "acme-admin", Role: registry.RoleAdmin, Org: "acme"})
		_, err = e.reg.CreateAdminToken(acmeAdmin, "globex-spy", registry.RoleViewer, "globex", 0)
		wantCode(t, err, registry.CodeForbidden)
		scoped, err := e.reg.CreateAdminToken(acmeAdmin, "acme-ci", registry.RoleViewer, "", 0)
		wantNoErr(t, err)
		if scoped.Token.Org != "acme" {
			t.Fatalf("a token made by an acme admin has org %q, want acme", scoped.Token.Org)
		}
		list, err := e.reg.ListAdminTokens(acmeAdmin)
		wantNoErr(t, err)
		if len(list) != 1 || list[0].Name != "acme-ci" {
			t.Fatalf("the acme admin sees %d tokens, want only acme's", len(list))
		}
		_, err = e.reg.RevokeAdminToken(acmeAdmin, "op", "")
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("ExpiredTokenKeepsItsNameUntilRevoked", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, err := e.reg.CreateAdminToken(e.ctx, "nightly", registry.RoleViewer, "", time.Hour)
		wantNoErr(t, err)
		e.clock.Advance(2 * time.Hour)
		_, err = e.reg.CreateAdminToken(e.ctx, "nightly", registry.RoleViewer, "", time.Hour)
		wantCode(t, err, registry.CodeConflict) // as docs/admin-api.md says
		_, err = e.reg.RevokeAdminToken(e.ctx, "nightly", "expired")
		wantNoErr(t, err)
		_, err = e.reg.CreateAdminToken(e.ctx, "nightly", registry.RoleViewer, "", time.Hour)
		wantNoErr(t, err)
	})

	t.Run("ConcurrentRevokesOneWins", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, err := e.reg.CreateAdminToken(e.ctx, "racy", registry.RoleViewer, "", 0)
		wantNoErr(t, err)
		const n = 10
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.reg.RevokeAdminToken(e.ctx, "racy", "")
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		wins := 0
		for err := range errs {
			if err == nil {
				wins++
				continue
			}
			if c := registry.ErrorCode(err); c != registry.CodeConflict && c != registry.CodeNotFound {
				t.Fatalf("a losing revoke failed with %v", err)
			}
		}
		if wins != 1 || len(e.auditFor("admin_token.revoke")) != 1 {
			t.Fatalf("%d revokes won, want exactly 1 (and one audit entry)", wins)
		}
	})
}
