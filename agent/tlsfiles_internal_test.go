package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is a CA that signs client certificates by common name.
type testPKI struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testPKI{cert: cert, key: key}
}

// write writes a client certificate for cn and its key over certFile and
// keyFile.
func (p *testPKI) write(t *testing.T, cn, certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	if err := writeFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A client certificate renewed on disk is presented at the next handshake,
// over real HTTPS, without building a new client; a file that does not load
// keeps the previous certificate; no files, no certificate.
func TestClientCertificateFilesReloadWithoutRestart(t *testing.T) {
	pki := newTestPKI(t)
	pool := x509.NewCertPool()
	pool.AddCert(pki.cert)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			io.WriteString(w, "none")
			return
		}
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	ts.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	ts.StartTLS()
	defer ts.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	client, tr, err := newHTTPClient(TLSFiles{CAFile: caFile, ClientCert: certFile, ClientKey: keyFile},
		newCertFiles(certFile, keyFile, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	who := func() string {
		t.Helper()
		tr.CloseIdleConnections() // a new handshake, as after a rotation or an idle timeout
		resp, err := client.Get(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := who(); got != "none" {
		t.Fatalf("no files: the server saw %q", got)
	}
	pki.write(t, "first", certFile, keyFile)
	if got := who(); got != "first" {
		t.Fatalf("after the files appeared: %q, want first", got)
	}
	pki.write(t, "second", certFile, keyFile)
	if got := who(); got != "second" {
		t.Fatalf("after the files changed: %q, want second", got)
	}
	if err := os.WriteFile(certFile, []byte("half a renewal"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := who(); got != "second" {
		t.Fatalf("with a broken file: %q, want the previous certificate", got)
	}
	pki.write(t, "third", certFile, keyFile)
	if got := who(); got != "third" {
		t.Fatalf("after the repair: %q, want third", got)
	}
}

// After a renewal, no request goes over a connection that presented the old
// certificate, not even one busy at the renewal (a held poll): tether
// refuses the old certificate once its credential's rotation grace is over,
// and a busy agent would otherwise keep such a connection for good.
func TestRenewedCertificateNotPresentedOnBusyConnection(t *testing.T) {
	pki := newTestPKI(t)
	pool := x509.NewCertPool()
	pool.AddCert(pki.cert)
	held, release := make(chan struct{}), make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			close(held)
			<-release
		}
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	ts.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	ts.StartTLS()
	defer ts.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	pki.write(t, "old", certFile, keyFile)
	client, tr, err := newHTTPClient(TLSFiles{CAFile: caFile}, newCertFiles(certFile, keyFile, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		t.Helper()
		resp, err := client.Get(ts.URL + path)
		if err != nil {
			t.Error(err)
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // at EOF the connection is back in the pool
		return string(b)
	}
	done := make(chan string)
	go func() { done <- get("/hold") }()
	<-held
	pki.write(t, "new", certFile, keyFile)
	tr.renew() // as the agent does when a rotation renewed its certificate
	// Another request meanwhile (a heartbeat) takes a new connection.
	if got := get("/"); got != "new" {
		t.Fatalf("a request after the renewal: the server saw %q, want new", got)
	}
	close(release)
	if got := <-done; got != "old" {
		t.Fatalf("the held request: %q, want old", got)
	}
	if got := get("/"); got != "new" {
		t.Fatalf("after the renewal the server saw %q, want new", got)
	}
}
