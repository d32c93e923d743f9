package server_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/tetherhq/tether/registry"
)

type signedJob struct {
	ID                 string          `json:"id"`
	Kind               string          `json:"kind"`
	ExpiresAt          *time.Time      `json:"expiresAt"`
	Payload            json.RawMessage `json:"payload"`
	Signature          *string         `json:"signature"`
	SignatureKeyID     *string         `json:"signatureKeyId"`
	JobSignature       *string         `json:"jobSignature"`
	JobSignatureFormat *string         `json:"jobSignatureFormat"`
}

// boundMessage is what a bound (v2) signature signs, built from
// docs/protocol.md's words with nothing of tether's: the context line, then
// the RFC 8785 form of the job's fields.
func boundMessage(t *testing.T, clusterID, jobID, kind string, expiresAt *time.Time, payload json.RawMessage) []byte {
	t.Helper()
	var expires any // null without an expiry
	if expiresAt != nil {
		expires = expiresAt.UnixMilli()
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	raw, err := json.Marshal(map[string]any{"v": 2, "clusterId": clusterID, "jobId": jobID, "kind": kind, "expiresAt": expires, "payload": payload})
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("tether job signature v2\n"), canonical...)
}

func pollSigned(t *testing.T, a *agent) []signedJob {
	t.Helper()
	// With a limit, as the reference agent polls: a poll without one gets
	// a single job.
	r := a.do(http.MethodGet, fmt.Sprintf("/api/agent/jobs?cluster=%s&wait=0&limit=100", a.clusterID))
	r.want(t, http.StatusOK)
	var ans struct {
		Jobs []signedJob `json:"jobs"`
	}
	r.decode(t, &ans)
	return ans.Jobs
}

func keySet(t *testing.T, a *agent) []registry.JWK {
	t.Helper()
	r := a.do(http.MethodGet, "/api/agent/keys")
	r.want(t, http.StatusOK)
	var set struct {
		Keys []registry.JWK `json:"keys"`
	}
	r.decode(t, &set)
	if set.Keys == nil {
		t.Fatalf("key set without a keys array: %s", r.body)
	}
	return set.Keys
}

// verifyIndependently checks a job's bound signature with the key of its
// kid in the set, with crypto/ed25519 over boundMessage (not tether's
// verifier); and that it carries no legacy signature.
func verifyIndependently(t *testing.T, set []registry.JWK, clusterID string, j signedJob) {
	t.Helper()
	if j.JobSignature == nil || j.SignatureKeyID == nil || j.JobSignatureFormat == nil || *j.JobSignatureFormat != "v2" {
		t.Fatalf("job %s carries no bound signature", j.ID)
	}
	if j.Signature != nil {
		t.Fatalf("job %s carries a legacy signature, which the cluster's policy does not allow", j.ID)
	}
	pub := keyOf(t, set, *j.SignatureKeyID)
	sig, err := base64Std(*j.JobSignature)
	if err != nil || !ed25519.Verify(pub, boundMessage(t, clusterID, j.ID, j.Kind, j.ExpiresAt, j.Payload), sig) {
		t.Fatalf("job %s: bound signature does not verify with key %s (%v)", j.ID, *j.SignatureKeyID, err)
	}
}

func keyOf(t *testing.T, set []registry.JWK, kid string) ed25519.PublicKey {
	t.Helper()
	for _, k := range set {
		if k.Kid == kid {
			pub, err := k.Ed25519PublicKey()
			if err != nil {
				t.Fatal(err)
			}
			return pub
		}
	}
	t.Fatalf("key %s is not in the key set %v", kid, set)
	return nil
}

func TestSignedPayloads(t *testing.T) {
	e := newEnv(t)
	_, tok := e.cluster("signed", func(s *registry.ClusterSpec) { s.Policy.RequireSignedPayloads = true })
	r := e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": tok}))
	r.want(t, http.StatusOK)
	var ans struct {
		credentialAnswer
		ServerPublicKey *registry.JWK `json:"serverPublicKey"`
	}
	r.decode(t, &ans)
	if ans.ServerPublicKey == nil || ans.ServerPublicKey.Kty != "OKP" || ans.ServerPublicKey.Crv != "Ed25519" || ans.ServerPublicKey.Kid == "" {
		t.Fatalf("register answer's serverPublicKey = %+v, want an Ed25519 JWK", ans.ServerPublicKey)
	}
	a := e.agentFrom(ans.credentialAnswer)

	e.submit(a.clusterID)
	jobs := pollSigned(t, a)
	set := keySet(t, a)
	if len(jobs) != 1 || len(set) != 1 || set[0].Kid != ans.ServerPublicKey.Kid || *jobs[0].SignatureKeyID != set[0].Kid {
		t.Fatalf("jobs %+v, key set %+v: want one job signed with the registered key", jobs, set)
	}
	verifyIndependently(t, set, a.clusterID, jobs[0])

	// Rotation: new jobs use the new key, the old key stays in the set.
	if _, err := e.reg.RotateSigningKey(adminCtx(), a.clusterID, 0); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	e.submit(a.clusterID)
	set = keySet(t, a)
	if len(set) != 2 || set[1].Kid != ans.ServerPublicKey.Kid {
		t.Fatalf("after rotation the key set is %+v, want the new key and the old one", set)
	}
	for _, j := range pollSigned(t, a) {
		verifyIndependently(t, set, a.clusterID, j)
		if *j.SignatureKeyID == ans.ServerPublicKey.Kid && j.ID != jobs[0].ID {
			t.Errorf("job %s queued after the rotation is signed with the old key", j.ID)
		}
	}

	// The rotate answer names the current key.
	rr := a.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`))
	rr.want(t, http.StatusOK)
	var rot struct {
		ServerPublicKey *registry.JWK `json:"serverPublicKey"`
	}
	rr.decode(t, &rot)
	if rot.ServerPublicKey == nil || rot.ServerPublicKey.Kid != set[0].Kid {
		t.Fatalf("rotate answer's serverPublicKey = %+v, want %s", rot.ServerPublicKey, set[0].Kid)
	}
}

// A cluster that does not require signing: jobs and answers exactly as a v1
// client knows them, and asking for the key set creates no key.
func TestUnsignedClusterUnchanged(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("plain")
	e.submit(a.clusterID)
	for _, j := range pollSigned(t, a) {
		if j.Signature != nil || j.SignatureKeyID != nil || j.JobSignature != nil || j.JobSignatureFormat != nil {
			t.Fatalf("job %s of an unsigned cluster carries a signature", j.ID)
		}
	}
	if set := keySet(t, a); len(set) != 0 {
		t.Fatalf("key set %+v, want none", set)
	}
	r := a.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`))
	r.want(t, http.StatusOK)
	var raw map[string]any
	r.decode(t, &raw)
	if _, ok := raw["serverPublicKey"]; ok {
		t.Fatal("an unsigned cluster's rotate answer carries serverPublicKey")
	}
}

func base64Std(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
