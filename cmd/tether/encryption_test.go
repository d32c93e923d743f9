package main

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/registry"
)

// Encrypted payloads from the CLI: a public key from a JWK or PEM file,
// --encrypt-payloads refused without one, a job's sealed payload withheld
// by job get and job list, and shown by job get --show-payload, which the
// audit trail records.
func TestClusterEncryptPayloads(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()

	wantError(t, cli(t, db, "cluster", "create", "--name", "nokey", "--encrypt-payloads"), exitError, "no public key", "--public-key-file")
	createCluster(t, db, "enc", "--namespaces", "apps")
	wantError(t, cli(t, db, "cluster", "edit", "enc", "--encrypt-payloads"), exitError, "no public key", "--public-key-file")

	// A private key in the file is refused, naming the flag.
	key, err := jwe.GenerateX25519()
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := key.MarshalPrivateJWK()
	privFile := filepath.Join(dir, "priv.jwk")
	if err := os.WriteFile(privFile, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	wantError(t, cli(t, db, "cluster", "edit", "enc", "--public-key-file", privFile), exitError, "--public-key-file", "private key")

	// A PEM public key (X25519, PKIX) and encryption on, in one edit.
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(x.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(dir, "pub.pem")
	if err := os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, db, "cluster", "edit", "enc", "--public-key-file", pemFile, "--encrypt-payloads", "--sign-payloads")
	c := okJSON[registry.Cluster](t, db, "cluster", "get", "enc", "-o", "json")
	if !c.Policy.RequireEncryptedPayloads || c.PublicKey.Curve() != "X25519" {
		t.Fatalf("cluster policy %+v key %s, want encryption on with the X25519 key", c.Policy, c.PublicKey)
	}
	if out := ok(t, db, "cluster", "get", "enc").stdout; !strings.Contains(out, "encrypted to the public key") || !strings.Contains(out, "X25519 "+c.PublicKey.KeyID()) {
		t.Errorf("cluster get does not show the posture and the key:\n%s", out)
	}
	// The key cannot be removed while encryption is on.
	wantError(t, cli(t, db, "cluster", "edit", "enc", "--public-key-file", ""), exitError, "no public key")

	marker := "hunter2-" + c.ID
	j := submit(t, db, "enc", "apply", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"apps"},"stringData":{"pw":"`+marker+`"}}`)
	for _, args := range [][]string{{"job", "get", j.ID}, {"job", "get", j.ID, "-o", "json"}, {"job", "list", "-o", "json"}} {
		out := ok(t, db, args...).stdout
		if strings.Contains(out, marker) {
			t.Fatalf("%v shows the sealed payload:\n%s", args, out)
		}
		if !strings.Contains(out, "sealed") && !strings.Contains(out, `"payloadSealed": true`) {
			t.Errorf("%v does not say the payload is sealed:\n%s", args, out)
		}
	}
	if out := ok(t, db, "job", "get", j.ID, "--show-payload").stdout; !strings.Contains(out, marker) {
		t.Fatalf("job get --show-payload does not show it:\n%s", out)
	}
	audit := ok(t, db, "audit", "-o", "json").stdout
	if !strings.Contains(audit, registry.AuditJobPayloadViewed) || strings.Contains(audit, marker) {
		t.Fatalf("audit trail: want %s without the payload:\n%s", registry.AuditJobPayloadViewed, audit)
	}
	// Turning encryption off is allowed; the sealed job stays sealed.
	ok(t, db, "cluster", "edit", "enc", "--encrypt-payloads=false")
	if out := ok(t, db, "job", "get", j.ID, "-o", "json").stdout; strings.Contains(out, marker) {
		t.Fatal("turning encryption off unsealed a stored payload")
	}
}

// The same over --server: the key file and the toggle through the admin
// API's cluster PATCH, the withheld payload, --show-payload audited by the
// server.
func TestClusterEncryptPayloadsRemote(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	root := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "root", "--role", "admin").Token
	viewer := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "look", "--role", "viewer").Token
	createCluster(t, db, "enc", "--namespaces", "apps")
	_, addr, _ := startServe(t, db)
	home := t.TempDir()
	tokenFile, viewerFile := filepath.Join(home, "token"), filepath.Join(home, "viewer")
	for f, tok := range map[string]string{tokenFile: root, viewerFile: viewer} {
		if err := os.WriteFile(f, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}
	remote := func(tf string, args ...string) result {
		return cliWithEnv(t, "", env, append(args, "--server", "http://"+addr, "--token-file", tf)...)
	}
	key, err := jwe.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(home, "pub.jwk")
	if err := os.WriteFile(keyFile, []byte(key.Public().JWK()), 0o644); err != nil {
		t.Fatal(err)
	}
	wantError(t, remote(tokenFile, "cluster", "edit", "enc", "--encrypt-payloads"), exitError, "no public key", "--public-key-file")
	if res := remote(tokenFile, "cluster", "edit", "enc", "--public-key-file", keyFile, "--encrypt-payloads"); res.code != 0 {
		t.Fatalf("cluster edit over --server: %s", res)
	}
	if out := remote(tokenFile, "cluster", "get", "enc").stdout; !strings.Contains(out, "P-256 "+key.Public().Thumbprint()) {
		t.Fatalf("cluster get over --server does not show the key:\n%s", out)
	}
	marker := "remote-secret-" + key.Public().Thumbprint()[:8]
	res := remote(tokenFile, "job", "submit", "--cluster", "enc", "--kind", "apply", "--payload",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"apps"},"stringData":{"pw":"`+marker+`"}}`, "-o", "json")
	if res.code != 0 || strings.Contains(res.stdout, marker) {
		t.Fatalf("submit over --server: %s", res)
	}
	j := decode[submittedJob](t, res)
	if out := remote(tokenFile, "job", "get", j.ID).stdout; strings.Contains(out, marker) || !strings.Contains(out, "sealed") {
		t.Fatalf("job get over --server:\n%s", out)
	}
	wantError(t, remote(viewerFile, "job", "get", j.ID, "--show-payload"), exitError)
	if out := remote(tokenFile, "job", "get", j.ID, "--show-payload").stdout; !strings.Contains(out, marker) {
		t.Fatalf("job get --show-payload over --server:\n%s", out)
	}
	if out := remote(tokenFile, "audit", "-o", "json").stdout; !strings.Contains(out, registry.AuditJobPayloadViewed) || strings.Contains(out, marker) {
		t.Fatalf("audit over --server:\n%s", out)
	}
}
