package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
)

// writeSSHPublicKey writes a fresh Ed25519 public key file (authorized_keys
// form) and returns its path and fingerprint.
func writeSSHPublicKey(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".pub")
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " " + name + "@laptop\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ssh.FingerprintSHA256(k)
}

// admin-token create --ssh-key-file and admin-token edit give an identity
// the keys that open the console over SSH, and say what they did.
func TestAdminTokenSSHKeys(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	laptop, laptopFP := writeSSHPublicKey(t, dir, "alice")
	desktop, desktopFP := writeSSHPublicKey(t, dir, "desk")

	created := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "alice", "--role", "operator", "--ssh-key-file", laptop)
	if len(created.SSHKeys) != 1 || created.SSHKeys[0].Fingerprint != laptopFP || created.SSHKeys[0].Comment != "alice@laptop" {
		t.Fatalf("created with keys %+v, want %s", created.SSHKeys, laptopFP)
	}
	res := ok(t, db, "admin-token", "create", "--name", "bob", "--role", "viewer", "--ssh-key-file", desktop)
	if !strings.Contains(res.stdout, "open the console as ssh:bob") || !strings.Contains(res.stdout, desktopFP) {
		t.Errorf("create does not say which keys open the console:\n%s", res.stdout)
	}
	// A key opens one identity only.
	wantError(t, cli(t, db, "admin-token", "create", "--name", "carol", "--role", "viewer", "--ssh-key-file", laptop), exitError, "already belongs to another admin identity")

	// A private key is refused without being echoed.
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	privFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(privFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	res = cli(t, db, "admin-token", "create", "--name", "carol", "--role", "viewer", "--ssh-key-file", privFile)
	wantError(t, res, exitError, "private key")
	if strings.Contains(res.stderr, "MC4CAQ") {
		t.Errorf("the private key was echoed: %s", res.stderr)
	}

	wantError(t, cli(t, db, "admin-token", "edit", "alice"), exitUsage, "--ssh-key-file", "--no-ssh-keys")
	wantError(t, cli(t, db, "admin-token", "edit", "alice", "--ssh-key-file", laptop, "--no-ssh-keys"), exitUsage)
	wantError(t, cli(t, db, "admin-token", "edit", "alice", "--ssh-key-file", filepath.Join(dir, "missing.pub")), exitUsage, "missing.pub")

	// Replaced: the laptop's key is free again, bob's is not.
	wantError(t, cli(t, db, "admin-token", "edit", "alice", "--ssh-key-file", desktop), exitError, "already belongs")
	second, secondFP := writeSSHPublicKey(t, dir, "phone")
	res = ok(t, db, "admin-token", "edit", "alice", "--ssh-key-file", second)
	if !strings.Contains(res.stdout, secondFP) || strings.Contains(res.stdout, laptopFP) {
		t.Errorf("edit output:\n%s", res.stdout)
	}
	tokens := okJSON[[]registry.AdminToken](t, db, "admin-token", "list")
	for _, tok := range tokens {
		if tok.Name == "alice" && (len(tok.SSHKeys) != 1 || tok.SSHKeys[0].Fingerprint != secondFP) {
			t.Errorf("alice lists keys %+v, want only %s", tok.SSHKeys, secondFP)
		}
	}
	if list := ok(t, db, "admin-token", "list"); !strings.Contains(list.stdout, "SSH KEYS") {
		t.Errorf("list does not count SSH keys:\n%s", list.stdout)
	}
	res = ok(t, db, "admin-token", "edit", "alice", "--no-ssh-keys")
	if !strings.Contains(res.stdout, "holds no SSH keys") {
		t.Errorf("--no-ssh-keys output:\n%s", res.stdout)
	}
	edits := 0
	for _, e := range okJSON[[]registry.AuditEntry](t, db, "audit", "--action", "admin_token.ssh_keys") {
		if e.Action == registry.AuditAdminTokenSSHKeys {
			edits++
		}
	}
	if edits != 2 {
		t.Errorf("audited %d SSH key edits, want 2", edits)
	}

	// No host key before the first serve --ssh-listen.
	wantError(t, cli(t, db, "ssh", "host-key"), exitError, "no SSH host key yet")
}
