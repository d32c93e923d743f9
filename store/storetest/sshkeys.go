package storetest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
)

// newSSHKey returns a fresh Ed25519 public key in authorized_keys form
// (with comment) and in wire form.
func newSSHKey(t *testing.T, comment string) (line string, wire []byte) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	wantNoErr(t, err)
	k, err := ssh.NewPublicKey(pub)
	wantNoErr(t, err)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " " + comment, k.Marshal()
}

func testSSHKeys(t *testing.T, newStore NewStore) {
	t.Run("KeysOpenTheirIdentityAndAreAudited", func(t *testing.T) {
		e := newEnv(t, newStore)
		alice, aliceWire := newSSHKey(t, "alice@laptop")
		issued, err := e.reg.IssueAdminToken(e.ctx, registry.AdminTokenSpec{Name: "alice", Role: registry.RoleOperator, Org: "acme", SSHKeys: []string{alice, alice}})
		wantNoErr(t, err)
		if len(issued.Token.SSHKeys) != 1 || issued.Token.SSHKeys[0].Comment != "alice@laptop" || !strings.HasPrefix(issued.Token.SSHKeys[0].Fingerprint, "SHA256:") {
			t.Fatalf("issued keys = %+v", issued.Token.SSHKeys)
		}
		id, err := e.reg.AuthenticateSSHKey(e.ctx, aliceWire)
		wantNoErr(t, err)
		if id.Actor.String() != "ssh:alice" || id.Actor.Role != registry.RoleOperator || id.Actor.Org != "acme" || id.TokenID != issued.Token.ID {
			t.Fatalf("identity = %+v", id)
		}
		// Kept by the store as given (both read paths).
		got, err := e.store.AdminTokenGet(e.ctx, issued.Token.ID)
		wantNoErr(t, err)
		if len(got.SSHKeys) != 1 || got.SSHKeys[0] != issued.Token.SSHKeys[0] {
			t.Fatalf("stored keys = %+v, want %+v", got.SSHKeys, issued.Token.SSHKeys)
		}
		if a := e.auditFor("admin_token.create"); len(a) != 1 || !strings.Contains(a[0].Reason, issued.Token.SSHKeys[0].Fingerprint) {
			t.Fatalf("create audit = %+v", a)
		}

		// An unknown key, and a key that is not one, authenticate nobody.
		_, otherWire := newSSHKey(t, "mallory")
		_, err = e.reg.AuthenticateSSHKey(e.ctx, otherWire)
		wantCode(t, err, registry.CodeUnauthorized)
		_, err = e.reg.AuthenticateSSHKey(e.ctx, []byte("junk"))
		wantCode(t, err, registry.CodeUnauthorized)

		// Replacing the keys: the old one no longer opens it.
		second, secondWire := newSSHKey(t, "alice@desktop")
		edited, err := e.reg.SetAdminTokenSSHKeys(e.ctx, "alice", []string{second})
		wantNoErr(t, err)
		if len(edited.SSHKeys) != 1 || edited.SSHKeys[0].Comment != "alice@desktop" {
			t.Fatalf("edited = %+v", edited.SSHKeys)
		}
		_, err = e.reg.AuthenticateSSHKey(e.ctx, aliceWire)
		wantCode(t, err, registry.CodeUnauthorized)
		_, err = e.reg.AuthenticateSSHKey(e.ctx, secondWire)
		wantNoErr(t, err)
		if a := e.auditFor("admin_token.ssh_keys"); len(a) != 1 || a[0].Actor != "admin:tester" || !strings.Contains(a[0].Reason, edited.SSHKeys[0].Fingerprint) {
			t.Fatalf("ssh_keys audit = %+v", a)
		}
		list, err := e.reg.ListAdminTokens(e.ctx)
		wantNoErr(t, err)
		if len(list) != 1 || len(list[0].SSHKeys) != 1 || list[0].SSHKeys[0] != edited.SSHKeys[0] {
			t.Fatalf("listed = %+v", list)
		}

		// Revoked or expired: refused.
		_, err = e.reg.RevokeAdminToken(e.ctx, "alice", "left")
		wantNoErr(t, err)
		_, err = e.reg.AuthenticateSSHKey(e.ctx, secondWire)
		wantCode(t, err, registry.CodeUnauthorized)
		_, err = e.reg.SetAdminTokenSSHKeys(e.ctx, "alice", nil)
		wantCode(t, err, registry.CodeNotFound)

		bob, bobWire := newSSHKey(t, "bob")
		_, err = e.reg.IssueAdminToken(e.ctx, registry.AdminTokenSpec{Name: "bob", Role: registry.RoleViewer, TTL: time.Hour, SSHKeys: []string{bob}})
		wantNoErr(t, err)
		_, err = e.reg.AuthenticateSSHKey(e.ctx, bobWire)
		wantNoErr(t, err)
		e.clock.Advance(time.Hour)
		_, err = e.reg.AuthenticateSSHKey(e.ctx, bobWire)
		wantCode(t, err, registry.CodeUnauthorized)
	})

	t.Run("AKeyOpensOneIdentity", func(t *testing.T) {
		e := newEnv(t, newStore)
		k, _ := newSSHKey(t, "shared")
		_, err := e.reg.IssueAdminToken(e.ctx, registry.AdminTokenSpec{Name: "one", Role: registry.RoleViewer, SSHKeys: []string{k}})
		wantNoErr(t, err)
		_, err = e.reg.IssueAdminToken(e.ctx, registry.AdminTokenSpec{Name: "two", Role: registry.RoleAdmin, SSHKeys: []string{k}})
		wantCode(t, err, registry.CodeConflict)
		_, err = e.reg.CreateAdminToken(e.ctx, "two", registry.RoleAdmin, "", 0)
		wantNoErr(t, err)
		_, err = e.reg.SetAdminTokenSSHKeys(e.ctx, "two", []string{k})
		wantCode(t, err, registry.CodeConflict)
		// Its own key again is no conflict.
		_, err = e.reg.SetAdminTokenSSHKeys(e.ctx, "one", []string{k})
		wantNoErr(t, err)
	})

	t.Run("BadKeysAreRefusedSayingWhy", func(t *testing.T) {
		e := newEnv(t, newStore)
		good, _ := newSSHKey(t, "")
		for _, c := range []struct{ line, want string }{
			{"not a key", "authorized_keys form"},
			{"-----BEGIN OPENSSH PRIVATE KEY-----", "private key"},
			{`from="10.0.0.1" ` + good, "options"},
			{good + "\n" + strings.Repeat("x", 0), ""},
		} {
			_, err := e.reg.IssueAdminToken(e.ctx, registry.AdminTokenSpec{Name: "k", Role: registry.RoleViewer, SSHKeys: []string{c.line}})
			if c.want == "" {
				wantNoErr(t, err)
				_, err = e.reg.RevokeAdminToken(e.ctx, "k", "")
				wantNoErr(t, err)
				continue
			}
			wantCode(t, err, registry.CodeInvalid)
			if !strings.Contains(registry.ErrorMessage(err), c.want) {
				t.Errorf("%q: %v, want it to say %q", c.line, err, c.want)
			}
		}
		var many []string
		for range registry.MaxSSHKeysPerIdentity + 1 {
			k, _ := newSSHKey(t, "")
			many = append(many, k)
		}
		_, err := e.reg.IssueAdminToken(e.ctx, registry.AdminTokenSpec{Name: "many", Role: registry.RoleViewer, SSHKeys: many})
		wantCode(t, err, registry.CodeInvalid)
		// Only an admin sets keys, and only within its organization.
		_, err = e.reg.CreateAdminToken(e.ctx, "globex-op", registry.RoleOperator, "globex", 0)
		wantNoErr(t, err)
		op := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorSSH, Name: "op", Role: registry.RoleOperator})
		_, err = e.reg.SetAdminTokenSSHKeys(op, "globex-op", []string{good})
		wantCode(t, err, registry.CodeForbidden)
		acme := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "acme", Role: registry.RoleAdmin, Org: "acme"})
		_, err = e.reg.SetAdminTokenSSHKeys(acme, "globex-op", []string{good})
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("OpenSessionsEndWhenTheIdentityStopsWorking", func(t *testing.T) {
		e := newEnv(t, newStore)
		k, wire := newSSHKey(t, "")
		_, err := e.reg.IssueAdminToken(e.ctx, registry.AdminTokenSpec{Name: "carol", Role: registry.RoleViewer, SSHKeys: []string{k}})
		wantNoErr(t, err)
		id, err := e.reg.AuthenticateSSHKey(e.ctx, wire)
		wantNoErr(t, err)
		held, release := e.reg.WhileSSHIdentityWorks(context.Background(), id)
		defer release()
		_, err = e.reg.SetAdminTokenSSHKeys(e.ctx, "carol", nil) // the key taken away
		wantNoErr(t, err)
		select {
		case <-held.Done():
			wantCode(t, context.Cause(held), registry.CodeUnauthorized)
		case <-time.After(10 * time.Second):
			t.Fatal("a session whose key was taken away goes on")
		}
	})

	t.Run("HostKeyIsSealedAndShared", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, _, err := e.reg.SSHHostKeyFingerprint(e.ctx)
		wantCode(t, err, registry.CodeNotFound)
		// Replicas starting together agree on one key.
		const n = 4
		signers := make([]ssh.Signer, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				s, err := e.reg.SSHHostSigner(e.ctx)
				if err != nil {
					t.Error(err)
					return
				}
				signers[i] = s
			})
		}
		wg.Wait()
		_, fp, err := e.reg.SSHHostKeyFingerprint(e.ctx)
		wantNoErr(t, err)
		for _, s := range signers {
			if s == nil || ssh.FingerprintSHA256(s.PublicKey()) != fp || s.PublicKey().Type() != ssh.KeyAlgoED25519 {
				t.Fatalf("a replica presents another host key than %s", fp)
			}
		}
		stored, err := e.store.SSHHostKeyGet(e.ctx)
		wantNoErr(t, err)
		page, err := e.store.SealedPage(e.ctx, registry.SealedSSHHostKey, "", 10)
		wantNoErr(t, err)
		if len(page) != 1 || page[0].ID != stored.ID || len(stored.SealedPrivate) <= ed25519.SeedSize {
			t.Fatalf("the host key's private half is not kept sealed: %d sealed values", len(page))
		}
	})
}
