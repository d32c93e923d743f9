package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
)

// caServer is tether serving HTTPS with its own CA and no --tls-client-ca,
// on a clock that starts at the real time (certificates are checked against
// the real time by TLS) and can be moved for issuance.
type caServer struct {
	t     *testing.T
	ctx   context.Context
	app   *app
	clock *clocktest.Clock
	url   string
	roots *x509.CertPool // trusts the server's certificate
	logs  *syncBuffer
	db    string
}

func startCAServer(t *testing.T, withCA bool, tweak ...func(*serveOptions)) *caServer {
	t.Helper()
	return startCAServerOn(t, filepath.Join(t.TempDir(), "tether.db"), "", withCA, tweak...)
}

// startCAServerOn is startCAServer on the database db (a SQLite file or a
// postgres:// URL, which needs keyFile).
func startCAServerOn(t *testing.T, db, keyFile string, withCA bool, tweak ...func(*serveOptions)) *caServer {
	t.Helper()
	dir := t.TempDir()
	certFile, certKeyFile, roots := writeServerCert(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	clock := clocktest.New()
	clock.Set(time.Now())
	a, err := openApp(ctx, &globals{db: db, keyFile: keyFile}, registry.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if withCA {
		if _, err := a.reg.InitCA(adminContext(ctx), false); err != nil {
			t.Fatal(err)
		}
	}
	logs := &syncBuffer{}
	opts := serveOptions{listen: "127.0.0.1:0", tlsCert: certFile, tlsKey: certKeyFile, logOutput: logs, logFormat: "text", rate: -1}
	for _, f := range tweak {
		f(&opts)
	}
	addr, wait, err := startAgentAPI(ctx, a, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = wait()
		a.Close()
	})
	return &caServer{t: t, ctx: ctx, app: a, clock: clock, url: "https://" + addr, roots: roots, logs: logs, db: db}
}

// cluster creates a cluster (requiring mTLS when mtls) and returns its token.
func (s *caServer) cluster(name string, mtls bool) string {
	s.t.Helper()
	spec := registry.ClusterSpec{Name: name, Organization: "org", Policy: registry.DefaultPolicy()}
	spec.Policy.RequireClientCertificate = mtls
	_, tok, err := s.app.reg.CreateCluster(adminContext(s.ctx), spec, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok.Secret.Reveal()
}

// token issues a cluster another registration token.
func (s *caServer) token(name string) string {
	s.t.Helper()
	tok, err := s.app.reg.IssueToken(adminContext(s.ctx), name, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok.Secret.Reveal()
}

// httpClient trusts the server and presents cert (if any).
func (s *caServer) httpClient(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: s.roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	// No keep-alive: each request is a new handshake, with the CAs serve
	// trusts at that moment.
	return &http.Client{Timeout: waitTimeout, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// newKeyCSR makes a P-256 key and a CSR for it.
func newKeyCSR(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func tlsPair(t *testing.T, certPEM string, key *ecdsa.PrivateKey) *tls.Certificate {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair([]byte(certPEM), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	return &pair
}

// register redeems token with a CSR over HTTPS and returns the credential
// and the issued certificate with its key.
func (s *caServer) register(token string) (apiclient.Credential, *tls.Certificate) {
	s.t.Helper()
	key, csr := newKeyCSR(s.t)
	cred, err := apiclient.Register(s.ctx, s.url, token, apiclient.RegisterOptions{CSR: csr, HTTPClient: s.httpClient(nil), Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		s.t.Fatalf("register with a CSR: %v", err)
	}
	if cred.ClientCertificate == "" || !strings.Contains(cred.CABundle, "BEGIN CERTIFICATE") {
		s.t.Fatalf("register answer lacks clientCertificate or caBundle: %q / %q", cred.ClientCertificate, cred.CABundle)
	}
	return cred, tlsPair(s.t, cred.ClientCertificate, key)
}

func (s *caServer) client(cred apiclient.Credential, cert *tls.Certificate) *apiclient.Client {
	s.t.Helper()
	c, err := apiclient.New(apiclient.Config{BaseURL: s.url, Credential: cred, HTTPClient: s.httpClient(cert), Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// The mTLS matrix with certificates tether's own CA issued: serve trusts its
// CA by itself (no --tls-client-ca). A cluster that requires mTLS refuses a
// request without a certificate (401 client_certificate_required), another
// cluster's certificate (403), an expired certificate (the TLS handshake
// fails), and takes the right one; a rotation with a CSR renews it.
func TestCAIssuedCertificatesMTLSMatrix(t *testing.T) {
	t.Parallel()
	s := startCAServer(t, true)
	prodTok := s.cluster("prod", true)
	otherTok := s.cluster("other", false)
	prod, prodCert := s.register(prodTok)
	_, otherCert := s.register(otherTok)

	// The certificate names the cluster tether chose, whatever the CSR said.
	leaf, _ := x509.ParseCertificate(prodCert.Certificate[0])
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != "spiffe://tether/cluster/"+prod.ClusterID {
		t.Fatalf("issued certificate names %v, want spiffe://tether/cluster/%s", leaf.URIs, prod.ClusterID)
	}

	// An expired certificate of the right cluster: issued on a clock 60 days
	// back, so it expired 30 days ago in real time.
	s.clock.Set(time.Now().Add(-60 * 24 * time.Hour))
	_, expiredCert := s.register(s.token("prod"))
	s.clock.Set(time.Now())

	poll := func(cert *tls.Certificate) error {
		_, err := s.client(prod, cert).Poll(s.ctx, 0, 1)
		return err
	}
	if err := poll(nil); !apiclient.IsCode(err, apiclient.CodeClientCertificateRequired) {
		t.Fatalf("no certificate: %v, want 401 client_certificate_required", err)
	}
	var apiErr *apiclient.Error
	if err := poll(otherCert); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden || !strings.Contains(apiErr.Message, "names cluster") {
		t.Fatalf("another cluster's certificate: %v, want 403 naming the clusters", err)
	}
	if err := poll(expiredCert); err == nil || errors.As(err, &apiErr) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("expired certificate: %v, want the TLS handshake refused", err)
	}
	if err := poll(prodCert); err != nil {
		t.Fatalf("the right certificate: %v", err)
	}

	// Rotation with a CSR renews the certificate, and the new one works.
	key, csr := newKeyCSR(t)
	c, err := apiclient.New(apiclient.Config{BaseURL: s.url, Credential: prod, HTTPClient: s.httpClient(prodCert), Retry: apiclient.RetryPolicy{MaxAttempts: 1},
		CertificateRequest: func() (string, error) { return csr, nil }})
	if err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Minute) // less than the backdating: the renewed certificate is valid now
	next, err := c.Rotate(s.ctx)
	if err != nil {
		t.Fatalf("rotate with a CSR: %v", err)
	}
	if next.ClientCertificate == "" {
		t.Fatal("rotation answer lacks the renewed certificate")
	}
	renewed := tlsPair(t, next.ClientCertificate, key)
	newLeaf, _ := x509.ParseCertificate(renewed.Certificate[0])
	if newLeaf.SerialNumber.Cmp(leaf.SerialNumber) == 0 || !newLeaf.NotAfter.After(leaf.NotAfter) {
		t.Fatalf("rotation did not renew: serial %v notAfter %v, was %v %v", newLeaf.SerialNumber, newLeaf.NotAfter, leaf.SerialNumber, leaf.NotAfter)
	}
	if _, err := s.client(next, renewed).Poll(s.ctx, 0, 1); err != nil {
		t.Fatalf("the renewed certificate: %v", err)
	}

	// Each credential lists the certificate issued with it.
	creds, err := s.app.reg.ListCredentials(adminContext(s.ctx), "prod")
	if err != nil {
		t.Fatal(err)
	}
	withCert := 0
	for _, cr := range creds {
		if cr.ClientCertificate != nil {
			withCert++
		}
	}
	if withCert != 3 {
		t.Fatalf("%d of prod's credentials list a certificate, want 3 (register, expired register, rotation)", withCert)
	}
	serial := hex.EncodeToString(newLeaf.SerialNumber.Bytes())
	if out := ok(t, s.db, "cluster", "get", "prod").stdout; !strings.Contains(out, "client certificate (tether's CA): serial "+serial) {
		t.Errorf("cluster get does not show the newest credential's certificate %s:\n%s", serial, out)
	}
	if out := ok(t, s.db, "credential", "list", "prod").stdout; !strings.Contains(out, "serial "+serial[:8]) {
		t.Errorf("credential list does not show the certificate:\n%s", out)
	}
}

// Without a CA, a CSR is refused with a code saying so, and the token stays
// good for a registration without one. A CA created while serve runs is
// trusted without a restart (within the refresh, or at once on refresh).
func TestCSRWithoutCAThenCACreatedWhileServing(t *testing.T) {
	t.Parallel()
	s := startCAServer(t, false, func(o *serveOptions) { o.caRefresh = 20 * time.Millisecond })
	tok := s.cluster("prod", true)
	_, csr := newKeyCSR(t)
	_, err := apiclient.Register(s.ctx, s.url, tok, apiclient.RegisterOptions{CSR: csr, HTTPClient: s.httpClient(nil), Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if !apiclient.IsCode(err, apiclient.CodeNoCertificateAuthority) || !strings.Contains(err.Error(), "tether ca init") {
		t.Fatalf("CSR without a CA: %v, want no_certificate_authority saying how to create one", err)
	}
	if _, err := s.app.reg.InitCA(adminContext(s.ctx), false); err != nil {
		t.Fatal(err)
	}
	cred, cert := s.register(tok) // the same token: the refusal did not use it
	// Serve trusts the new CA at its next refresh, without a restart.
	deadline := time.Now().Add(waitTimeout)
	for {
		_, err := s.client(cred, cert).Poll(s.ctx, 0, 1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never trusted the CA created while it ran: %v\n%s", err, s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(s.logs.String(), "client CAs reloaded") {
		t.Errorf("no log line says the client CAs were reloaded:\n%s", s.logs.String())
	}
}

// fileCA is a CA of the operator's own PKI, for --tls-client-ca.
type fileCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newFileCA(t *testing.T, name string) *fileCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &fileCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a client certificate whose CN is the cluster id.
func (c *fileCA) issue(t *testing.T, clusterID string) *tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: clusterID},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// serve's --tls-client-ca file is read again when it changes: a CA added to
// it is trusted without a restart.
func TestServeReloadsClientCAFile(t *testing.T) {
	t.Parallel()
	oldCA, newCA := newFileCA(t, "old"), newFileCA(t, "new")
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	if err := os.WriteFile(caFile, oldCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startCAServer(t, false, func(o *serveOptions) { o.tlsClientCA = caFile; o.caRefresh = 20 * time.Millisecond })
	tok := s.cluster("prod", true)
	cred, err := apiclient.Register(s.ctx, s.url, tok, apiclient.RegisterOptions{HTTPClient: s.httpClient(nil), Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client(cred, oldCA.issue(t, cred.ClusterID)).Poll(s.ctx, 0, 1); err != nil {
		t.Fatalf("a certificate of the CA in the file: %v", err)
	}
	cert := newCA.issue(t, cred.ClusterID)
	if _, err := s.client(cred, cert).Poll(s.ctx, 0, 1); err == nil {
		t.Fatal("a certificate of a CA not in the file was accepted")
	}
	if err := os.WriteFile(caFile, append(append([]byte{}, oldCA.pem...), newCA.pem...), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		_, err := s.client(cred, cert).Poll(s.ctx, 0, 1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never trusted the CA added to --tls-client-ca: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
