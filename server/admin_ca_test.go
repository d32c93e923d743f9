package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

func newCSRPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// The CA on the admin API and a CSR at register over HTTP: no CA is 400
// no_certificate_authority (the token stays good), a bad CSR is 400 naming
// csr, a good one answers clientCertificate and caBundle; ca init twice is
// 409 saying how to replace; viewers read the CA, only admins create it.
func TestCAOverHTTP(t *testing.T) {
	e := newEnv(t)
	root := e.adminToken("root", registry.RoleAdmin, "")
	viewer := e.adminToken("viewer", registry.RoleViewer, "")
	_, tok := e.cluster("prod")
	register := func(csr string) *response {
		b, _ := json.Marshal(map[string]string{"registrationToken": tok, "csr": csr})
		return e.do("POST", "/api/agent/register", withBody(string(b)))
	}
	if r := register(newCSRPEM(t)); r.status != 400 || !strings.Contains(string(r.body), "no_certificate_authority") {
		t.Fatalf("CSR without a CA: %d %s", r.status, r.body)
	}
	if r := e.api("GET", "/ca", viewer, nil); r.status != 200 || !strings.Contains(string(r.body), `"items":[]`) {
		t.Fatalf("GET /ca without a CA: %d %s", r.status, r.body)
	}
	if r := e.api("POST", "/ca", viewer, nil); r.status != 403 {
		t.Fatalf("a viewer created the CA: %d %s", r.status, r.body)
	}
	// A misspelt field or a body that is not JSON creates nothing.
	wantAPIError(t, e.api("POST", "/ca", root, map[string]bool{"replce": true}), 400, "invalid", `unknown field "replce"`)
	wantAPIError(t, e.api("POST", "/ca", root, nil, withBody(`{}`), withHeader("Content-Type", "text/plain")), 415, "unsupported_media_type")
	if r := e.api("GET", "/ca", viewer, nil); !strings.Contains(string(r.body), `"items":[]`) {
		t.Fatalf("a refused POST /ca created a CA: %s", r.body)
	}
	e.api("POST", "/ca", root, nil).want(t, 201)
	if r := e.api("POST", "/ca", root, nil); r.status != 409 || !strings.Contains(string(r.body), "--replace") {
		t.Fatalf("second ca init: %d %s", r.status, r.body)
	}
	if r := register("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"); r.status != 400 || !strings.Contains(string(r.body), "field csr") {
		t.Fatalf("bad CSR: %d %s", r.status, r.body)
	}
	r := register(newCSRPEM(t))
	r.want(t, 200)
	var out struct {
		ClusterID, ClientCertificate, CABundle string
	}
	if err := json.Unmarshal(r.body, &out); err != nil || !strings.Contains(out.ClientCertificate, "BEGIN CERTIFICATE") {
		t.Fatalf("register answer: %s", r.body)
	}
	list := e.api("GET", "/ca", viewer, nil)
	list.want(t, 200)
	var cas struct {
		Items  []struct{ Certificate string }
		Bundle string
	}
	_ = json.Unmarshal(list.body, &cas)
	if len(cas.Items) != 1 || cas.Bundle != out.CABundle {
		t.Fatalf("GET /ca: %s; register's caBundle %q", list.body, out.CABundle)
	}
	creds := e.api("GET", "/clusters/prod/credentials", viewer, nil)
	if !strings.Contains(string(creds.body), `"clientCertificate":{"serial"`) {
		t.Fatalf("credentials do not list the certificate: %s", creds.body)
	}
}

// The reference agent asks for a client certificate first and registers
// again without one when tether has no CA. That probe is no refused
// registration: counting it made TetherRegistrationFailures fire on a
// healthy fleet, four registrations a minute being enough.
func TestCAProbeIsNoRegistrationFailure(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		_, tok := e.cluster(name)
		b, _ := json.Marshal(map[string]string{"registrationToken": tok, "csr": newCSRPEM(t)})
		if r := e.do("POST", "/api/agent/register", withBody(string(b))); r.status != 400 || !strings.Contains(string(r.body), "no_certificate_authority") {
			t.Fatalf("CSR without a CA: %d %s", r.status, r.body)
		}
		e.register(tok)
	}
	e.do("POST", "/api/agent/register", withJSON(map[string]string{"registrationToken": "garbage"})).want(t, 401)
	metrics := string(e.getMetrics().body)
	var failures []string
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "tether_registration_failures_total{") {
			failures = append(failures, line)
		}
	}
	if want := []string{`tether_registration_failures_total{reason="malformed"} 1`}; !slices.Equal(failures, want) {
		t.Errorf("registration failures:\n%s\nwant only\n%s", strings.Join(failures, "\n"), strings.Join(want, "\n"))
	}
}
