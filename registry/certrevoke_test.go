package registry_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// certCountingStore counts the reads a client certificate check could make.
type certCountingStore struct {
	registry.Store
	reads atomic.Int64
}

func (s *certCountingStore) CredentialGet(ctx context.Context, id string) (*registry.Credential, error) {
	s.reads.Add(1)
	return s.Store.CredentialGet(ctx, id)
}

func (s *certCountingStore) CAList(ctx context.Context, now time.Time) ([]registry.CertificateAuthority, error) {
	s.reads.Add(1)
	return s.Store.CAList(ctx, now)
}

func (s *certCountingStore) ClientCertificateList(ctx context.Context, clusterID string) ([]registry.ClientCertificate, error) {
	s.reads.Add(1)
	return s.Store.ClientCertificateList(ctx, clusterID)
}

// A certificate of tether's CA is checked against its credential from the
// record cache (no store read per request once warm), and a revocation by
// another process (another replica) reaches the check through the change
// feed. A certificate of another CA is not tether's to judge.
func TestClientCertificatesThroughTheRecordCache(t *testing.T) {
	eachStore(t, clientCertificatesThroughTheRecordCache)
}

func clientCertificatesThroughTheRecordCache(t *testing.T, openStore func() registry.Store) {
	dir := t.TempDir()
	open := func() (*registry.Registry, *certCountingStore) {
		cs := &certCountingStore{Store: openStore()}
		reg := registry.New(cs, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
		t.Cleanup(func() { reg.Close() })
		return reg, cs
	}
	reg, counted := open()
	other, _ := open()
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	if _, err := reg.InitCA(admin, false); err != nil {
		t.Fatal(err)
	}
	_, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := reg.Register(context.Background(), registry.RegisterParams{Token: tok.Secret.Reveal(),
		CSR: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}))})
	if err != nil {
		t.Fatal(err)
	}
	leaf := parsePEMCert(t, issued.ClientCertificate)
	ca := parsePEMCert(t, issued.CABundle)
	chains := [][]*x509.Certificate{{leaf, ca}}
	check := func() error { return reg.CheckClientCertificate(context.Background(), chains, registry.AuthAny) }

	if err := check(); err != nil {
		t.Fatalf("a live credential's certificate: %v", err)
	}
	before := counted.reads.Load()
	for range 20 {
		if err := check(); err != nil {
			t.Fatal(err)
		}
	}
	if n := counted.reads.Load() - before; n > 1 {
		t.Fatalf("20 checks of one certificate read the store %d times", n)
	}

	// Another CA's certificate (serve --tls-client-ca) is left alone.
	extKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	extTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ext"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	extDER, _ := x509.CreateCertificate(rand.Reader, extTmpl, extTmpl, extKey.Public(), extKey)
	ext, _ := x509.ParseCertificate(extDER)
	if err := reg.CheckClientCertificate(context.Background(), [][]*x509.Certificate{{leaf, ext}}, registry.AuthAny); err != nil {
		t.Fatalf("another CA's certificate: %v", err)
	}

	if _, err := other.RevokeCredentials(admin, "prod", "test"); err != nil {
		t.Fatal(err)
	}
	// Well within the cache's own lifetime (10s): the feed evicted it.
	deadline := time.Now().Add(5 * time.Second)
	for registry.ErrorCode(check()) != registry.CodeUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("a certificate whose credential another process revoked was still accepted 5s later")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func parsePEMCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("not PEM: %q", b)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
