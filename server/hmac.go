package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Signed writes (PROTOCOL.md, extension "hmac").
const (
	headerTimestamp = "X-Agent-Timestamp"
	headerSignature = "X-Agent-Signature"
	signaturePrefix = "v1="
	// SignatureWindow is how far a signed request's timestamp may be from the
	// server's clock, either way.
	SignatureWindow = 300 * time.Second
	// DefaultReplayCacheSize bounds the signatures remembered for replay
	// detection.
	DefaultReplayCacheSize = 100_000
)

// CanonicalRequest is the string an agent signs:
// METHOD \n path-with-raw-query \n timestamp \n hex(sha256(body)).
func CanonicalRequest(method, pathAndQuery, timestamp string, body []byte) string {
	sum := sha256.Sum256(body)
	return method + "\n" + pathAndQuery + "\n" + timestamp + "\n" + hex.EncodeToString(sum[:])
}

// Sign returns the X-Agent-Signature value for a canonical request.
func Sign(key []byte, canonical string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(canonical))
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// verifySignature checks a signed write. The MAC is checked before the time
// window, so that "expired" is only ever said of a genuine request (a clock
// problem), and a forgery is always "invalid". Only genuine, timely
// signatures enter the replay cache, so junk cannot flush it.
func (s *Server) verifySignature(r *http.Request, body []byte, a *registry.Agent) error {
	ts, sig := r.Header.Get(headerTimestamp), r.Header.Get(headerSignature)
	if ts == "" || sig == "" {
		return errf(CodeSignatureRequired, "this credential negotiated hmac: every write needs %s and %s headers", headerTimestamp, headerSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errf(CodeSignatureInvalid, "%s must be a unix time in seconds", headerTimestamp)
	}
	hexSig, ok := strings.CutPrefix(sig, signaturePrefix)
	got, herr := hex.DecodeString(hexSig)
	if !ok || herr != nil || len(got) != sha256.Size {
		return errf(CodeSignatureInvalid, "%s must be %s followed by a hex HMAC-SHA256", headerSignature, signaturePrefix)
	}
	key, err := s.reg.HMACKey(a)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(CanonicalRequest(r.Method, r.URL.RequestURI(), ts, body)))
	if !hmac.Equal(got, mac.Sum(nil)) { // constant time
		return errf(CodeSignatureInvalid, "signature does not match the request (canonical string: METHOD, path with query, timestamp, sha256 of the body, joined by newlines)")
	}
	now := s.reg.Now()
	signedAt := time.Unix(sec, 0)
	if d := now.Sub(signedAt); d > SignatureWindow || d < -SignatureWindow {
		return errf(CodeSignatureExpired, "%s is %s away from the server's time; the window is %s (check the agent's clock)",
			headerTimestamp, d.Abs().Round(time.Second), SignatureWindow)
	}
	// The signature may be presented again until its timestamp leaves the
	// window; remember it that long. The key is the decoded MAC, so that the
	// same signature in another hex case is the same signature.
	replayed := errf(CodeSignatureReplayed, "this signature was already used; sign each request with a fresh timestamp")
	if !s.replays.add(a.Credential.ID+":"+hex.EncodeToString(got), signedAt.Add(SignatureWindow), now) {
		return replayed // seen by this process: no need to ask the store
	}
	// Every replica, and this one after a restart, must refuse it too.
	fresh, err := offStack(func() (bool, error) {
		return s.reg.RecordSignature(r.Context(), a.Credential.ID, got, signedAt.Add(SignatureWindow))
	})
	if err != nil {
		return err
	}
	if !fresh {
		return replayed
	}
	return nil
}

// RunSignatureAudit writes the refused signatures to the audit trail, one
// entry per credential per minute, until ctx ends (then what is left).
func (s *Server) RunSignatureAudit(ctx context.Context, report func(error)) {
	s.refusals.Run(ctx, 0, report)
}

// replayCache remembers signatures until their timestamps leave the window.
// It is bounded: once full, the oldest entries are forgotten first, which can
// only matter when more than max signed writes arrive within one window
// (per-cluster rate limits make that a fleet of thousands at full speed).
// Entries are kept in arrival order, which is close to expiry order because
// timestamps must be within the window of arrival.
type replayCache struct {
	mu    sync.Mutex
	max   int
	seen  map[string]time.Time // key -> forget after
	queue []replayEntry        // arrival order; queue[head:] is live
	head  int
}

type replayEntry struct {
	key   string
	until time.Time
}

func newReplayCache(max int) *replayCache {
	return &replayCache{max: max, seen: map[string]time.Time{}}
}

// add records key until until, and reports false if it was already there.
func (c *replayCache) add(key string, until, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.head < len(c.queue) {
		front := c.queue[c.head]
		if front.until.After(now) && len(c.seen) < c.max {
			break
		}
		if c.seen[front.key].Equal(front.until) {
			delete(c.seen, front.key)
		}
		c.queue[c.head] = replayEntry{}
		c.head++
	}
	if c.head > len(c.queue)/2 { // compact, so the backing array does not grow forever
		c.queue = slices.Clone(c.queue[c.head:])
		c.head = 0
	}
	if prev, ok := c.seen[key]; ok && prev.After(now) {
		return false
	}
	c.seen[key] = until
	c.queue = append(c.queue, replayEntry{key: key, until: until})
	return true
}

// certMatchesCluster reports whether a verified client certificate names the
// cluster (its common name or a DNS name): with mTLS, that replaces the HMAC
// requirement (PROTOCOL.md).
func certMatchesCluster(chains [][]*x509.Certificate, clusterID string) bool {
	named := certClusters(chains)
	return slices.Contains(named, clusterID)
}

// spiffeClusterPrefix is the URI SAN a client certificate names a cluster
// with: spiffe://tether/cluster/<id>.
const spiffeClusterPrefix = "spiffe://tether/cluster/"

// certClusters returns the cluster ids a verified client certificate names:
// its spiffe://tether/cluster/<id> URIs, or else its common name and DNS
// names that look like cluster ids.
func certClusters(chains [][]*x509.Certificate) []string {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return nil
	}
	leaf := chains[0][0]
	var out []string
	for _, u := range leaf.URIs {
		if id, ok := strings.CutPrefix(u.String(), spiffeClusterPrefix); ok && id != "" {
			out = append(out, id)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, n := range append([]string{leaf.Subject.CommonName}, leaf.DNSNames...) {
		if strings.HasPrefix(n, "cl-") {
			out = append(out, n)
		}
	}
	return out
}

// refuseOtherClustersCert refuses a request whose verified client
// certificate names a cluster other than its bearer credential's: the
// certificate is an identity, and two identities must agree.
//
// A cluster whose policy requires mTLS also refuses a request that comes
// without a verified certificate naming it: 401 client_certificate_required.
func refuseOtherClustersCert(r *http.Request, a *registry.Agent) error {
	var named []string
	if r.TLS != nil {
		named = certClusters(r.TLS.VerifiedChains)
	}
	if len(named) == 0 {
		if a.Cluster.Policy.RequireClientCertificate {
			return errf(CodeClientCertificateRequired, "cluster %s requires mTLS: connect with a client certificate, issued by the server's client CA, that names the cluster (URI SAN spiffe://tether/cluster/%s or CN %s)", a.Cluster.ID, a.Cluster.ID, a.Cluster.ID)
		}
		return nil
	}
	if slices.Contains(named, a.Cluster.ID) {
		return nil
	}
	return errf(registry.CodeForbidden, "the client certificate names cluster %s, but the credential belongs to cluster %s; each cluster's agent uses its own certificate", named[0], a.Cluster.ID)
}
