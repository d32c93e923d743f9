package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

func TestSignedWrites(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "hmac")
	if a.hmacKey == nil {
		t.Fatal("hmac registration returned no hmacKey")
	}
	now := e.clock.Now()
	ackPath := func(job string) string { return "/api/agent/jobs/" + job + "/ack" }
	unsigned := func(path string, opts ...reqOption) *response {
		return e.do(http.MethodPost, path, append([]reqOption{withBearer(a.token)}, opts...)...)
	}

	// Reads are never signed.
	a.poll(0).want(t, http.StatusOK)

	job := e.submit(a.clusterID)
	unsigned(ackPath(job)).wantError(t, http.StatusUnauthorized, "signature_required")
	unsigned(ackPath(job), withHeader("X-Agent-Timestamp", strconv.FormatInt(now.Unix(), 10))).
		wantError(t, http.StatusUnauthorized, "signature_required")
	unsigned(ackPath(job), withHeader("X-Agent-Signature", "v1=00")).wantError(t, http.StatusUnauthorized, "signature_required")

	forged := &agent{e: e, token: a.token, hmacKey: []byte("not the key, but 32 bytes long!!")}
	bad := []struct {
		name string
		opts []reqOption
	}{
		{"wrong key", []reqOption{forged.sign(now)}},
		{"v2 scheme", []reqOption{withHeader("X-Agent-Timestamp", "1"), withHeader("X-Agent-Signature", "v2=abcd")}},
		{"not hex", []reqOption{withHeader("X-Agent-Timestamp", "1"), withHeader("X-Agent-Signature", "v1=zz")}},
		{"short", []reqOption{withHeader("X-Agent-Timestamp", "1"), withHeader("X-Agent-Signature", "v1=abcd")}},
		{"timestamp not a number", []reqOption{a.sign(now), withHeader("X-Agent-Timestamp", "yesterday")}},
		{"another timestamp than signed", []reqOption{a.sign(now), withHeader("X-Agent-Timestamp", strconv.FormatInt(now.Unix()+1, 10))}},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			unsigned(ackPath(job), b.opts...).wantError(t, http.StatusUnauthorized, "signature_invalid")
		})
	}
	// Signed for one body, sent with another; signed for another path.
	e.do(http.MethodPost, "/api/agent/jobs/"+job+"/status", withBearer(a.token), withBody(`{"phase":"A"}`), a.sign(now), withBody(`{"phase":"B"}`)).
		wantError(t, http.StatusUnauthorized, "signature_invalid")
	signedFor := func(path string) reqOption {
		return func(r *http.Request) {
			ts := strconv.FormatInt(now.Unix(), 10)
			r.Header.Set("X-Agent-Timestamp", ts)
			r.Header.Set("X-Agent-Signature", server.Sign(a.hmacKey, server.CanonicalRequest("POST", path, ts, nil)))
		}
	}
	unsigned(ackPath(job), signedFor(ackPath("j-other"))).wantError(t, http.StatusUnauthorized, "signature_invalid")

	// The window: 300 s either way.
	unsigned(ackPath(job), a.sign(now.Add(-301*time.Second))).wantError(t, http.StatusUnauthorized, "signature_expired")
	unsigned(ackPath(job), a.sign(now.Add(301*time.Second))).wantError(t, http.StatusUnauthorized, "signature_expired")

	// Nothing above got through.
	if j, _ := e.reg.GetJob(adminCtx(), job); j.State != "queued" {
		t.Fatalf("job is %s after refused acks", j.State)
	}
	// Just inside the window, and then the same signature again: a replay.
	replayed := a.sign(now.Add(-299 * time.Second))
	unsigned(ackPath(job), replayed).wantNoContent(t)
	unsigned(ackPath(job), replayed).wantError(t, http.StatusUnauthorized, "signature_replayed")
	// The same signature in upper-case hex is the same signature.
	upper := func(r *http.Request) {
		replayed(r)
		sig := r.Header.Get("X-Agent-Signature")
		r.Header.Set("X-Agent-Signature", "v1="+strings.ToUpper(strings.TrimPrefix(sig, "v1=")))
	}
	unsigned(ackPath(job), upper).wantError(t, http.StatusUnauthorized, "signature_replayed")

	// Every kind of write is signed: status, heartbeat, result, events, rotate.
	a.status(job).wantNoContent(t)
	e.clock.Advance(time.Second) // a fresh timestamp, so a fresh signature
	a.heartbeat(job).wantNoContent(t)
	a.events(heartbeatBody(a.clusterID)).wantNoContent(t)
	unsigned("/api/agent/events", withBody(heartbeatBody(a.clusterID))).wantError(t, http.StatusUnauthorized, "signature_required")
	a.result(job, `{"outcome":"succeeded"}`).wantNoContent(t)
	unsigned("/api/agent/credentials/rotate", withBody(`{}`)).wantError(t, http.StatusUnauthorized, "signature_required")
	r := a.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`))
	r.want(t, http.StatusOK)
	var ans credentialAnswer
	r.decode(t, &ans)
	rotated := e.agentFrom(ans)
	if rotated.hmacKey == nil || string(rotated.hmacKey) == string(a.hmacKey) {
		t.Fatal("rotation must inherit hmac with a new key")
	}
	e.clock.Advance(time.Second)
	job2 := e.submit(a.clusterID)
	rotated.ack(job2).wantNoContent(t)

	// A bearer-only credential needs no signature.
	plain := e.newAgent("c2")
	plain.ack(e.submit(plain.clusterID)).wantNoContent(t)
}

// TestMTLSReplacesTheSignature: a verified client certificate naming the
// token's cluster (by spiffe://tether/cluster/<id> URI or common name)
// stands in for the HMAC; one naming another cluster is refused with 403:
// two identities that disagree.
func TestMTLSReplacesTheSignature(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "hmac")
	ca, caKey := newCA(t)
	ts := httptest.NewUnstartedServer(e.srv.Handler())
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	ts.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	ts.StartTLS()
	defer ts.Close()

	// Each client has its own transport: a shared one would reuse the first
	// certificate's connection.
	clientFor := func(cn string) *http.Client {
		tr := ts.Client().Transport.(*http.Transport).Clone()
		switch {
		case strings.HasPrefix(cn, "spiffe://"):
			tr.TLSClientConfig.Certificates = []tls.Certificate{clientCertURI(t, ca, caKey, cn)}
		case cn != "":
			tr.TLSClientConfig.Certificates = []tls.Certificate{clientCert(t, ca, caKey, cn)}
		}
		return &http.Client{Transport: tr}
	}
	ack := func(c *http.Client, job string) *response {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/agent/jobs/"+job+"/ack", nil)
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Header.Set("Accept", mediaV1)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return &response{status: resp.StatusCode, header: resp.Header, body: body}
	}
	ack(clientFor(a.clusterID), e.submit(a.clusterID)).wantNoContent(t)
	ack(clientFor("spiffe://tether/cluster/"+a.clusterID), e.submit(a.clusterID)).wantNoContent(t)
	ack(clientFor("cl-someone-else"), e.submit(a.clusterID)).wantError(t, http.StatusForbidden, "forbidden")
	ack(clientFor("spiffe://tether/cluster/cl-someone-else"), e.submit(a.clusterID)).wantError(t, http.StatusForbidden, "forbidden")
	ack(clientFor("a-person"), e.submit(a.clusterID)).wantError(t, http.StatusUnauthorized, "signature_required")
	ack(clientFor(""), e.submit(a.clusterID)).wantError(t, http.StatusUnauthorized, "signature_required")

	// A cluster whose policy requires mTLS: the right certificate is the only
	// way in; none (or one naming no cluster) is 401, even with a valid
	// HMAC signature, and another cluster's is still 403.
	if _, err := e.reg.ModifyCluster(adminCtx(), a.clusterID, func(s *registry.ClusterSpec) error {
		s.Policy.RequireClientCertificate = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ack(clientFor("spiffe://tether/cluster/"+a.clusterID), e.submit(a.clusterID)).wantNoContent(t)
	ack(clientFor(""), e.submit(a.clusterID)).wantError(t, http.StatusUnauthorized, "client_certificate_required")
	ack(clientFor("a-person"), e.submit(a.clusterID)).wantError(t, http.StatusUnauthorized, "client_certificate_required")
	ack(clientFor("spiffe://tether/cluster/cl-someone-else"), e.submit(a.clusterID)).wantError(t, http.StatusForbidden, "forbidden")
	a.ack(e.submit(a.clusterID)).wantError(t, http.StatusUnauthorized, "client_certificate_required") // signed, plain HTTP
	a.poll(0).wantError(t, http.StatusUnauthorized, "client_certificate_required")
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

func clientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// clientCertURI is clientCert naming its subject by a URI SAN.
func clientCertURI(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, uri string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "agent"}, URIs: []*url.URL{u},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
