// Package jobsig is the byte layout of what tether signs for an agent (issue
// 28): the bound job signature (format v2), which covers a job's id, cluster,
// kind and expiry together with its payload, and the endorsement by which a
// cluster's previous signing key introduces its next one. tether (registry)
// signs with it and the reference agent (agent) verifies with it, so both
// build the same bytes; docs/protocol.md spells them out for other agents.
//
// Every message starts with a context string of its own. The legacy
// signature (format v1) signs a payload's RFC 8785 form alone, and producers
// choose payloads: without the context strings a producer could submit a
// payload that reads as a v2 message or an endorsement and have tether sign
// it. A JCS text never starts with "tether " (its first byte is one of
// {["0-9tfn-, and "true" parts from "tether" at the second byte).
package jobsig

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gowebpki/jcs"
)

// FormatV2 is the bound job signature's format: the wire's
// jobSignatureFormat.
const FormatV2 = "v2"

// Context strings: the first bytes of each signed message.
const (
	jobContext         = "tether job signature v2\n"
	endorsementContext = "tether signing key endorsement v1\n"
)

// ErrInvalid is the answer to a signature that does not verify.
var ErrInvalid = errors.New("signature does not verify")

// Job is what a bound signature covers. ClusterID is the cluster the job
// is handed to: an agent fills it with its own cluster's id, never with
// anything the job says.
type Job struct {
	ClusterID string
	JobID     string
	Kind      string
	ExpiresAt time.Time // zero: the job has no expiry
	Payload   json.RawMessage
}

// CanonicalError is a payload that has no RFC 8785 form (a number out of
// range, a duplicate member, a lone surrogate, invalid UTF-8): it cannot be
// signed, however often it is tried.
type CanonicalError struct{ Err error }

func (e *CanonicalError) Error() string {
	return "payload is not JSON that can be canonicalized (RFC 8785): " + e.Err.Error()
}
func (e *CanonicalError) Unwrap() error { return e.Err }

// JobMessage is the bytes a bound signature signs:
//
//	"tether job signature v2\n" || JCS({"clusterId", "expiresAt", "jobId", "kind", "payload", "v": 2})
//
// expiresAt is the expiry in whole milliseconds since the Unix epoch (the
// precision tether stores), or null when the job has none; payload is the
// plaintext payload (null when there is none).
func JobMessage(j Job) ([]byte, error) {
	payload := j.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	var expires *int64
	if !j.ExpiresAt.IsZero() {
		ms := j.ExpiresAt.UnixMilli()
		expires = &ms
	}
	raw, err := json.Marshal(struct {
		ClusterID string          `json:"clusterId"`
		ExpiresAt *int64          `json:"expiresAt"`
		JobID     string          `json:"jobId"`
		Kind      string          `json:"kind"`
		Payload   json.RawMessage `json:"payload"`
		V         int             `json:"v"`
	}{j.ClusterID, expires, j.JobID, j.Kind, payload, 2})
	if err != nil {
		return nil, &CanonicalError{Err: err}
	}
	canonical, err := jcs.Transform(raw)
	if err != nil {
		return nil, &CanonicalError{Err: err}
	}
	return append([]byte(jobContext), canonical...), nil
}

// SignJob returns the standard base64 Ed25519 signature over JobMessage(j).
func SignJob(key ed25519.PrivateKey, j Job) (string, error) {
	msg, err := JobMessage(j)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg)), nil
}

// VerifyJob checks a bound signature: nil, ErrInvalid, or a CanonicalError.
func VerifyJob(pub ed25519.PublicKey, j Job, signature string) error {
	msg, err := JobMessage(j)
	if err != nil {
		return err
	}
	return verify(pub, msg, signature)
}

// EndorsementMessage is the bytes a signing key signs to introduce the
// cluster's next key:
//
//	"tether signing key endorsement v1\n" || JCS({"clusterId", "kid", "x"})
//
// x is the new key's public key, base64url without padding (the JWK's x).
func EndorsementMessage(clusterID, kid string, pub ed25519.PublicKey) []byte {
	raw, _ := json.Marshal(struct {
		ClusterID string `json:"clusterId"`
		Kid       string `json:"kid"`
		X         string `json:"x"`
	}{clusterID, kid, base64.RawURLEncoding.EncodeToString(pub)})
	canonical, err := jcs.Transform(raw)
	if err != nil { // three strings that encoding/json wrote always canonicalize
		panic(fmt.Sprintf("jobsig: canonicalize an endorsement: %v", err))
	}
	return append([]byte(endorsementContext), canonical...)
}

// Endorse returns the standard base64 signature by key (the cluster's
// current signing key) introducing the key pub named kid.
func Endorse(key ed25519.PrivateKey, clusterID, kid string, pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, EndorsementMessage(clusterID, kid, pub)))
}

// VerifyEndorsement checks that endorser introduced the key pub named kid
// for the cluster: nil or ErrInvalid.
func VerifyEndorsement(endorser ed25519.PublicKey, clusterID, kid string, pub ed25519.PublicKey, signature string) error {
	if len(pub) != ed25519.PublicKeySize {
		return ErrInvalid
	}
	return verify(endorser, EndorsementMessage(clusterID, kid, pub), signature)
}

func verify(pub ed25519.PublicKey, msg []byte, signature string) error {
	if len(pub) != ed25519.PublicKeySize {
		return ErrInvalid
	}
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, msg, sig) {
		return ErrInvalid
	}
	return nil
}
