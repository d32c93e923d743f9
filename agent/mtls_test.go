package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

// mtlsEnv is a tether on loopback over HTTPS that trusts its own CA for
// client certificates, as serve does: a test-made server certificate (its
// PEM in caFile, for the agent's --ca-file).
func mtlsEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	e.stop() // this test serves HTTPS itself
	if _, err := e.reg.InitCA(admin, false); err != nil {
		t.Fatal(err)
	}
	bundle, err := e.reg.CABundle(admin)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	srv := server.New(e.reg, server.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	e.url = ts.URL
	caFile := filepath.Join(e.dir, "server-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return e, caFile
}

func certSerial(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s is not PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// An agent registers with a CSR, keeps the issued certificate and key in
// its state dir (0600), and works by itself for a cluster that requires
// mTLS; a (forced) rotation renews the certificate, with a new key, and
// the agent goes on working with the new one without a restart.
func TestAgentRegistersWithCSRAndWorksWithMTLSRequired(t *testing.T) {
	e, caFile := mtlsEnv(t)
	c, tok, err := e.reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"team-a"},
		Policy: registry.Policy{LeaseSeconds: 6, MaxAttempts: 5, RequireClientCertificate: true}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "prod")
	tlsFiles := agent.TLSFiles{CAFile: caFile}
	id, err := agent.RegisterWith(context.Background(), e.url, tok.Secret.Reveal(), dir, agent.RegisterOptions{Retry: fast, TLS: tlsFiles})
	if err != nil || id != c.ID {
		t.Fatalf("RegisterWith = %q, %v", id, err)
	}
	for _, f := range []string{"client.crt", "client.key", "ca-bundle.pem"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want a file of mode 0600", f, err, fi.Mode().Perm())
		}
	}
	first := certSerial(t, filepath.Join(dir, "client.crt"))
	firstKey, _ := os.ReadFile(filepath.Join(dir, "client.key"))

	e.run(dir, `cat >/dev/null`, func(cfg *agent.Config) { cfg.TLS = tlsFiles })
	j := e.submit(c.ID, nil)
	if got := e.waitJob(j.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("with mTLS required: %s %q", got.State, got.Error)
	}

	if _, err := e.reg.ForceRotation(admin, c.ID, "renew the certificate"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for certSerial(t, filepath.Join(dir, "client.crt")) == first {
		if time.Now().After(deadline) {
			t.Fatal("the rotation did not renew the client certificate")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if k, _ := os.ReadFile(filepath.Join(dir, "client.key")); string(k) == string(firstKey) {
		t.Fatal("the renewed certificate reuses the old key")
	}
	certs, err := e.reg.ClientCertificates(admin, c.ID)
	if err != nil || len(certs) != 2 {
		t.Fatalf("issued certificates %+v, %v: want the registration's and the rotation's", certs, err)
	}
	j = e.submit(c.ID, nil)
	if got := e.waitJob(j.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("after renewal: %s %q", got.State, got.Error)
	}
}

// Without a CA the agent registers without a certificate (auto), and
// CertAlways says why it cannot.
func TestAgentRegistersWithoutCA(t *testing.T) {
	e := newEnv(t)
	_, tok, err := e.reg.CreateCluster(admin, registry.ClusterSpec{Name: "plain", Policy: registry.DefaultPolicy()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "plain")
	_, err = agent.RegisterWith(context.Background(), e.url, tok.Secret.Reveal(), dir, agent.RegisterOptions{Retry: fast, ClientCert: agent.CertAlways})
	if err == nil {
		t.Fatal("CertAlways registered without a CA")
	}
	if _, err := agent.RegisterWith(context.Background(), e.url, tok.Secret.Reveal(), dir, agent.RegisterOptions{Retry: fast}); err != nil {
		t.Fatalf("auto without a CA: %v (the refused CSR must not have used the token)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "client.crt")); err == nil {
		t.Fatal("a certificate without a CA")
	}
}
