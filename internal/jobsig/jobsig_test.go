package jobsig_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/tetherhq/tether/internal/jobsig"
)

// testKey is the Ed25519 key whose seed is the bytes 0..31: the key of the
// examples in docs/protocol.md.
func testKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func exampleJob() jobsig.Job {
	return jobsig.Job{
		ClusterID: "cl-01example", JobID: "j-01example", Kind: "apply",
		ExpiresAt: time.Date(2026, 5, 28, 10, 0, 0, 123e6, time.UTC),
		Payload:   []byte(`{"metadata": {"namespace":"team-a","name":"nc"}, "apiVersion":"v1", "n": 2.50}`),
	}
}

// The worked example of docs/protocol.md, byte for byte: other agents check
// their implementation against it. Ed25519 signatures are deterministic.
func TestDocumentedExample(t *testing.T) {
	msg, err := jobsig.JobMessage(exampleJob())
	if err != nil {
		t.Fatal(err)
	}
	want := "tether job signature v2\n" +
		`{"clusterId":"cl-01example","expiresAt":1779962400123,"jobId":"j-01example","kind":"apply","payload":{"apiVersion":"v1","metadata":{"name":"nc","namespace":"team-a"},"n":2.5},"v":2}`
	if string(msg) != want {
		t.Fatalf("message\n got %q\nwant %q", msg, want)
	}
	k := testKey()
	if x := base64.RawURLEncoding.EncodeToString(k.Public().(ed25519.PublicKey)); x != "A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg" {
		t.Fatalf("public key x = %s", x)
	}
	sig, err := jobsig.SignJob(k, exampleJob())
	if err != nil {
		t.Fatal(err)
	}
	if want := "W2tSlk2jU51T25oGLAvSUCBJChExt1rmplOVDLVCks1Sa5m6fCnBJYVr27vBSexrG4J/W9Cb1+mt9qnxALhHBg=="; sig != want {
		t.Fatalf("signature %s, want %s", sig, want)
	}

	next := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	if got, want := string(jobsig.EndorsementMessage("cl-01example", "sk-02", next)),
		"tether signing key endorsement v1\n"+`{"clusterId":"cl-01example","kid":"sk-02","x":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"}`; got != want {
		t.Fatalf("endorsement message\n got %q\nwant %q", got, want)
	}
	if e := jobsig.Endorse(k, "cl-01example", "sk-02", next); e != "AacwqMPl2oDbXc6GMLhXGw6IuaZOUBdZ/ACSTTosldpaKeT2KYPEoOCWwPm2uisx5Y2TNSP6LAhwxzRBNpk+BQ==" {
		t.Fatalf("endorsement %s", e)
	}
}

// A bound signature verifies for its job only: any other id, cluster, kind,
// expiry or payload refuses it; a re-encoded payload does not.
func TestBoundToTheJob(t *testing.T) {
	k := testKey()
	pub := k.Public().(ed25519.PublicKey)
	sig, err := jobsig.SignJob(k, exampleJob())
	if err != nil {
		t.Fatal(err)
	}
	reencoded := exampleJob()
	reencoded.Payload = []byte(`{"n":25e-1,"apiVersion":"v1","metadata":{"name":"nc","namespace":"team-a"}}`)
	if err := jobsig.VerifyJob(pub, reencoded, sig); err != nil {
		t.Fatalf("re-encoded payload: %v", err)
	}
	for name, change := range map[string]func(*jobsig.Job){
		"job id":     func(j *jobsig.Job) { j.JobID = "j-02other" },
		"cluster id": func(j *jobsig.Job) { j.ClusterID = "cl-02other" },
		"kind":       func(j *jobsig.Job) { j.Kind = "delete" },
		"expiry":     func(j *jobsig.Job) { j.ExpiresAt = j.ExpiresAt.Add(time.Millisecond) },
		"no expiry":  func(j *jobsig.Job) { j.ExpiresAt = time.Time{} },
		"payload": func(j *jobsig.Job) {
			j.Payload = []byte(`{"apiVersion":"v1","metadata":{"name":"nc","namespace":"team-b"},"n":2.5}`)
		},
	} {
		j := exampleJob()
		change(&j)
		if err := jobsig.VerifyJob(pub, j, sig); !errors.Is(err, jobsig.ErrInvalid) {
			t.Errorf("%s changed: %v, want ErrInvalid", name, err)
		}
	}
	// No payload and no expiry are null; both sides agree.
	empty := jobsig.Job{ClusterID: "c", JobID: "j", Kind: "apply"}
	msg, _ := jobsig.JobMessage(empty)
	if want := "tether job signature v2\n" + `{"clusterId":"c","expiresAt":null,"jobId":"j","kind":"apply","payload":null,"v":2}`; string(msg) != want {
		t.Fatalf("empty job message %q", msg)
	}
}

// A payload with no RFC 8785 form cannot be signed: a CanonicalError.
func TestUncanonicalPayload(t *testing.T) {
	j := exampleJob()
	j.Payload = []byte(`{"n":1e999}`)
	_, err := jobsig.SignJob(testKey(), j)
	var ce *jobsig.CanonicalError
	if !errors.As(err, &ce) {
		t.Fatalf("SignJob: %v, want a CanonicalError", err)
	}
}

// The context strings keep the formats apart: a payload-only (v1)
// signature over a payload crafted to read as a v2 message, or as an
// endorsement, verifies as neither.
func TestContextSeparation(t *testing.T) {
	k := testKey()
	pub := k.Public().(ed25519.PublicKey)
	msg, _ := jobsig.JobMessage(exampleJob())
	body := msg[len("tether job signature v2\n"):]
	canonical, err := jcs.Transform(body)
	if err != nil {
		t.Fatal(err)
	}
	v1 := base64.StdEncoding.EncodeToString(ed25519.Sign(k, canonical)) // what tether signs for a producer's payload
	if err := jobsig.VerifyJob(pub, exampleJob(), v1); !errors.Is(err, jobsig.ErrInvalid) {
		t.Fatalf("a v1 signature over the v2 body verifies as v2: %v", err)
	}
	next := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	em := jobsig.EndorsementMessage("cl-01example", "sk-02", next)
	forged := base64.StdEncoding.EncodeToString(ed25519.Sign(k, em[len("tether signing key endorsement v1\n"):]))
	if err := jobsig.VerifyEndorsement(pub, "cl-01example", "sk-02", next, forged); !errors.Is(err, jobsig.ErrInvalid) {
		t.Fatalf("a v1 signature over an endorsement's body verifies as an endorsement: %v", err)
	}
}
