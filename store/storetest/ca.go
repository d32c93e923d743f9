package storetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// NewCSR returns a PEM certificate request for a new P-256 key, asking for
// names tether must ignore (a CN and a URI of another cluster).
func NewCSR(t testing.TB) (string, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := url.Parse(registry.SPIFFEClusterPrefix + "cl-someone-else")
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "cl-someone-else"}, URIs: []*url.URL{other}, DNSNames: []string{"evil.example"},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), key
}

// verifyClientCert checks that certPEM chains to bundle at now as a client
// certificate and names exactly the cluster.
func verifyClientCert(t *testing.T, certPEM, bundle []byte, clusterID string, now time.Time) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("client certificate is not PEM: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	wantNoErr(t, err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatalf("CA bundle holds no certificate: %q", bundle)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("issued certificate does not verify against the bundle: %v", err)
	}
	if len(cert.URIs) != 1 || cert.URIs[0].String() != registry.SPIFFEClusterPrefix+clusterID || cert.Subject.CommonName != clusterID || len(cert.DNSNames) != 0 {
		t.Fatalf("certificate names %v / CN %q / DNS %v, want only cluster %s", cert.URIs, cert.Subject.CommonName, cert.DNSNames, clusterID)
	}
	return cert
}

// testCertificateAuthority: tether's CA is created once (replaced only on
// request, the old one trusted until its certificates expire), issues
// certificates naming the registering cluster whatever the CSR asks, with
// the credential and in its transaction, and refuses bad CSRs or a CSR
// without a CA without using the token.
func testCertificateAuthority(t *testing.T, newStore NewStore) {
	t.Run("InitOnceConcurrentlyThenReplace", func(t *testing.T) {
		e := newEnv(t, newStore)
		cas, err := e.reg.CAs(e.ctx)
		wantNoErr(t, err)
		if len(cas) != 0 {
			t.Fatalf("a new registry has CAs: %+v", cas)
		}
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); _, errs[i] = e.reg.InitCA(e.ctx, false) }()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else if registry.ErrorCode(err) != registry.CodeConflict || !strings.Contains(err.Error(), "tether ca init --replace") {
				t.Fatalf("a losing init: %v, want a conflict saying how to replace", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d concurrent inits won, want 1", won)
		}
		first, err := e.reg.CAs(e.ctx)
		wantNoErr(t, err)
		if len(first) != 1 {
			t.Fatalf("CAs %+v, want one", first)
		}
		ca, err := x509.ParseCertificate(first[0].CertDER)
		wantNoErr(t, err)
		if !ca.IsCA || ca.PublicKeyAlgorithm != x509.ECDSA || ca.KeyUsage&x509.KeyUsageCertSign == 0 || !ca.MaxPathLenZero ||
			len(ca.PermittedURIDomains) != 1 || ca.NotAfter.Sub(e.clock.Now()) < 4*365*24*time.Hour {
			t.Fatalf("CA certificate: isCA %v alg %v usage %v pathlen0 %v uris %v notAfter %v", ca.IsCA, ca.PublicKeyAlgorithm, ca.KeyUsage, ca.MaxPathLenZero, ca.PermittedURIDomains, ca.NotAfter)
		}
		if ok, err := e.store.SealedSecretsExist(e.ctx); err != nil || !ok {
			t.Fatalf("the CA's sealed key is not reported as a sealed secret (%v, %v)", ok, err)
		}

		_, err = e.reg.InitCA(e.ctx, true)
		wantNoErr(t, err)
		both, err := e.reg.CAs(e.ctx)
		wantNoErr(t, err)
		if len(both) != 2 || both[1].ID != first[0].ID || both[1].RetiredAt.IsZero() || !both[0].RetiredAt.IsZero() {
			t.Fatalf("after replace: %+v, want the new CA then the old, retired one", both)
		}
		bundle, err := e.reg.CABundle(e.ctx)
		wantNoErr(t, err)
		if strings.Count(string(bundle), "BEGIN CERTIFICATE") != 2 {
			t.Fatalf("bundle during the overlap holds %d certificates, want 2", strings.Count(string(bundle), "BEGIN CERTIFICATE"))
		}
		e.clock.Advance(registry.DefaultCredentialTTL + registry.DefaultRotationGrace + time.Minute)
		after, err := e.reg.CAs(e.ctx)
		wantNoErr(t, err)
		if len(after) != 1 || after[0].ID != both[0].ID {
			t.Fatalf("after the old CA's certificates expired: %+v, want only the new CA", after)
		}
	})

	t.Run("RegisterRotateIssue", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("prod", nil)
		csr, _ := NewCSR(t)

		// No CA: refused, and the token is still good.
		_, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), CSR: csr})
		wantCode(t, err, registry.CodeNoCA)
		_, err = e.reg.InitCA(e.ctx, false)
		wantNoErr(t, err)

		// Bad CSRs: refused naming the field, the token still good.
		rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
		weak, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, rsaKey)
		good, _ := pem.Decode([]byte(csr))
		tampered := append([]byte(nil), good.Bytes...)
		tampered[len(tampered)-5] ^= 0xff
		for name, bad := range map[string]string{
			"not pem":   "hello",
			"a cert":    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
			"rsa 1024":  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: weak})),
			"bad sig":   string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered})),
			"two":       csr + csr,
			"truncated": csr[:len(csr)/2],
		} {
			_, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), CSR: bad})
			if registry.ErrorCode(err) != registry.CodeInvalid || !strings.Contains(err.Error(), "csr") {
				t.Fatalf("%s: %v, want invalid naming csr", name, err)
			}
		}

		issued, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), CSR: csr})
		wantNoErr(t, err)
		cert := verifyClientCert(t, issued.ClientCertificate, issued.CABundle, c.ID, e.clock.Now())
		if !cert.NotAfter.Equal(issued.Credential.ExpiresAt) {
			t.Fatalf("certificate valid until %v, want the credential's expiry %v", cert.NotAfter, issued.Credential.ExpiresAt)
		}

		a, err := e.reg.Authenticate(e.ctx, issued.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		e.clock.Advance(8 * 24 * time.Hour)
		csr2, _ := NewCSR(t)
		rotated, err := e.reg.RotateCredentialWith(e.ctx, a, registry.RotateParams{CSR: csr2})
		wantNoErr(t, err)
		cert2 := verifyClientCert(t, rotated.ClientCertificate, rotated.CABundle, c.ID, e.clock.Now())
		if !cert2.NotAfter.After(cert.NotAfter) || cert2.SerialNumber.Cmp(cert.SerialNumber) == 0 {
			t.Fatalf("rotation did not renew the certificate: %v/%v then %v/%v", cert.SerialNumber, cert.NotAfter, cert2.SerialNumber, cert2.NotAfter)
		}

		// Listed with their credentials, newest first.
		certs, err := e.reg.ClientCertificates(e.ctx, "prod")
		wantNoErr(t, err)
		if len(certs) != 2 || certs[0].CredentialID != rotated.Credential.ID || certs[1].CredentialID != issued.Credential.ID ||
			certs[0].Serial != cert2.SerialNumber.Text(16) || !certs[0].NotAfter.Equal(cert2.NotAfter) {
			t.Fatalf("client certificates %+v", certs)
		}
		creds, err := e.reg.ListCredentials(e.ctx, "prod")
		wantNoErr(t, err)
		for _, cr := range creds {
			if cr.ClientCertificate == nil || cr.ClientCertificate.CredentialID != cr.ID {
				t.Fatalf("credential %s lists certificate %+v", cr.ID, cr.ClientCertificate)
			}
		}

		// A rotation without a CSR issues no certificate; a bad CSR at
		// rotation is refused and leaves the credential unrotated.
		a2, err := e.reg.Authenticate(e.ctx, rotated.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		_, err = e.reg.RotateCredentialWith(e.ctx, a2, registry.RotateParams{CSR: "junk"})
		wantCode(t, err, registry.CodeInvalid)
		plain, err := e.reg.RotateCredentialWith(e.ctx, a2, registry.RotateParams{})
		wantNoErr(t, err)
		if plain.ClientCertificate != nil {
			t.Fatal("a rotation without csr issued a certificate")
		}
	})
}
