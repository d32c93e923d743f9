package main

import (
	"crypto/tls"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
)

// A certificate tether's CA issued works only while the credential it was
// issued with does: superseded past the rotation grace, or revoked (by the
// CLI, another process), it is refused like an invalid credential (401
// unauthorized), even next to a live bearer token of its cluster (the agent
// re-registered); the certificate issued with the live credential works. On
// a cluster that requires mTLS, where the certificate also stands in for the
// HMAC signature. Both stores.
func TestCAIssuedCertificateDiesWithItsCredential(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testCertDiesWithCredential(t, startCAServer(t, true))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		db := pgDB(t)
		testCertDiesWithCredential(t, startCAServerOn(t, db, filepath.Join(t.TempDir(), "tether.key"), true))
	})
}

func testCertDiesWithCredential(t *testing.T, s *caServer) {
	tok := s.cluster("prod", true)
	first, firstCert := s.register(tok)
	poll := func(cred apiclient.Credential, cert *tls.Certificate) error {
		_, err := s.client(cred, cert).Poll(s.ctx, 0, 1)
		return err
	}
	refused := func(what string, err error) {
		t.Helper()
		var apiErr *apiclient.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || apiErr.Code != apiclient.CodeUnauthorized {
			t.Fatalf("%s: %v, want 401 unauthorized", what, err)
		}
	}
	if err := poll(first, firstCert); err != nil {
		t.Fatalf("the registration's certificate: %v", err)
	}

	// The agent rotates (with a CSR): the new certificate works, and the old
	// one while its credential is in the rotation grace.
	key, csr := newKeyCSR(t)
	c, err := apiclient.New(apiclient.Config{BaseURL: s.url, Credential: first, HTTPClient: s.httpClient(firstCert), Retry: apiclient.RetryPolicy{MaxAttempts: 1},
		CertificateRequest: func() (string, error) { return csr, nil }})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Rotate(s.ctx)
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	secondCert := tlsPair(t, second.ClientCertificate, key)
	if err := poll(second, secondCert); err != nil {
		t.Fatalf("the rotation's certificate: %v", err)
	}
	if err := poll(second, firstCert); err != nil {
		t.Fatalf("the superseded credential's certificate within the grace: %v", err)
	}

	// Past the grace, the old certificate is refused, even for a rotation;
	// the new one works.
	s.clock.Set(time.Now().Add(25 * time.Hour))
	refused("the superseded credential's certificate past the grace", poll(second, firstCert))
	_, err = s.client(second, firstCert).Rotate(s.ctx)
	refused("a rotation with the superseded credential's certificate past the grace", err)
	if err := poll(second, secondCert); err != nil {
		t.Fatalf("the live credential's certificate past the old one's grace: %v", err)
	}
	s.clock.Set(time.Now())

	// Revoked by the CLI (another process), then re-registered: the revoked
	// credential's certificate next to the new token is refused as the
	// revoked token is.
	ok(t, s.db, "credential", "revoke", "prod", "--reason", "compromised")
	third, thirdCert := s.register(s.token("prod"))
	deadline := time.Now().Add(waitTimeout)
	for poll(third, secondCert) == nil {
		if time.Now().After(deadline) {
			t.Fatal("a revoked credential's certificate still works with the re-registered agent's token")
		}
		time.Sleep(10 * time.Millisecond) // the revocation reaches serve through the change feed
	}
	refused("the revoked credential's token", poll(second, thirdCert))
	refused("the revoked credential's certificate with the new token", poll(third, secondCert))
	refused("the revoked first certificate with the new token", poll(third, firstCert))
	if err := poll(third, thirdCert); err != nil {
		t.Fatalf("the re-registered agent's certificate: %v", err)
	}
}
