package server_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
)

// testSSHKey is a fresh Ed25519 public key in authorized_keys form.
func testSSHKey(t *testing.T, comment string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " " + comment
}

// The admin API gives admin identities SSH keys and takes them away, as
// the CLI does: admins only, bad keys refused saying why, a key held twice
// refused.
func TestAdminAPISSHKeys(t *testing.T) {
	e := newEnv(t)
	root := e.adminToken("root", registry.RoleAdmin, "")
	op := e.adminToken("op", registry.RoleOperator, "")
	key := testSSHKey(t, "alice@laptop")

	resp := e.api("POST", "/admin-tokens", root, map[string]any{"name": "alice", "role": "operator", "sshKeys": []string{key}})
	resp.want(t, 201)
	created := decodeAs[struct {
		SSHKeys []registry.SSHKey `json:"sshKeys"`
	}](t, resp)
	if len(created.SSHKeys) != 1 || created.SSHKeys[0].Comment != "alice@laptop" || !strings.HasPrefix(created.SSHKeys[0].Fingerprint, "SHA256:") {
		t.Fatalf("created with keys %+v", created.SSHKeys)
	}
	wantAPIError(t, e.api("POST", "/admin-tokens", root, map[string]any{"name": "bob", "role": "viewer", "sshKeys": []string{key}}), 409, "conflict")
	wantAPIError(t, e.api("POST", "/admin-tokens", root, map[string]any{"name": "bob", "role": "viewer", "sshKeys": []string{"ssh-dss AAAA"}}), 400, "invalid", "authorized_keys form")

	wantAPIError(t, e.api("PATCH", "/admin-tokens/alice", op, map[string]any{"sshKeys": []string{}}), 403, "forbidden")
	wantAPIError(t, e.api("PATCH", "/admin-tokens/alice", root, map[string]any{}), 400, "invalid")
	wantAPIError(t, e.api("PATCH", "/admin-tokens/nobody", root, map[string]any{"sshKeys": []string{}}), 404, "not_found")
	resp = e.api("PATCH", "/admin-tokens/alice", root, map[string]any{"sshKeys": []string{}})
	resp.want(t, 200)
	edited := decodeAs[registry.AdminToken](t, resp)
	if len(edited.SSHKeys) != 0 {
		t.Fatalf("keys left after taking them away: %+v", edited.SSHKeys)
	}
}
