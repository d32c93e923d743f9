package registry

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"

	"github.com/gowebpki/jcs"
)

// Signed payloads (issue 10, seed 003): tether signs a job's payload with its
// cluster's Ed25519 key, over the payload's RFC 8785 (JCS) canonical JSON, so
// that an agent can check that the payload it runs is the one tether handed
// out, whatever re-encoding happened on the way. These are the primitives of
// that payload-only signature (format v1, now legacy: it can be moved to
// another job) and of the JWKs; the bound signature (format v2) and key
// endorsements are internal/jobsig's, the per-cluster keys signing.go's.

// CanonicalJSON returns the RFC 8785 canonical form of a JSON text: object
// members sorted by their UTF-16 code units, no insignificant whitespace,
// numbers in ECMAScript form, strings with the minimal escaping.
func CanonicalJSON(raw []byte) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, Errorf(CodeInvalid, "payload is not JSON that can be canonicalized (RFC 8785): %v", err)
	}
	return out, nil
}

// SignPayload returns the standard base64 of the Ed25519 signature over the
// canonical JSON of payload: the job's signature field.
func SignPayload(key ed25519.PrivateKey, payload []byte) (string, error) {
	msg, err := CanonicalJSON(payload)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg)), nil
}

// ErrPayloadSignatureInvalid is VerifyPayload's answer to a signature that
// does not match the payload.
var ErrPayloadSignatureInvalid = errors.New("payload signature invalid")

// VerifyPayload checks a signature made by SignPayload. The payload may have
// been re-encoded (member order, whitespace, number spelling) since it was
// signed; its canonical form must not have changed.
func VerifyPayload(pub ed25519.PublicKey, payload []byte, signature string) error {
	if len(pub) != ed25519.PublicKeySize {
		return ErrPayloadSignatureInvalid
	}
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return ErrPayloadSignatureInvalid
	}
	msg, err := CanonicalJSON(payload)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, msg, sig) {
		return ErrPayloadSignatureInvalid
	}
	return nil
}

// JWK is a public key as a JSON Web Key (RFC 7517/8037): what
// serverPublicKey and GET /api/agent/keys carry.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
	// EndorsedBy and Endorsement (key continuity, issue 28): the kid of the
	// key this one replaced, and that key's standard base64 Ed25519
	// signature introducing this one (internal/jobsig.EndorsementMessage).
	// An agent trusts a key it fetched only when a key it already trusts
	// endorsed it. Absent for a cluster's first key.
	EndorsedBy  string `json:"endorsedBy,omitempty"`
	Endorsement string `json:"endorsement,omitempty"`
}

// Ed25519JWK is pub as an OKP JWK (RFC 8037) named kid, for signature
// verification (alg EdDSA, use sig).
func Ed25519JWK(kid string, pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), Kid: kid, Alg: "EdDSA", Use: "sig"}
}

// JWK is the key as its agents see it: public half, and its endorsement.
func (k *SigningKey) JWK() JWK {
	j := Ed25519JWK(k.ID, k.PublicKey)
	j.EndorsedBy, j.Endorsement = k.EndorsedBy, k.Endorsement
	return j
}

// Ed25519PublicKey returns the Ed25519 public key an OKP Ed25519 JWK holds.
func (k JWK) Ed25519PublicKey() (ed25519.PublicKey, error) {
	if k.Kty != "OKP" || k.Crv != "Ed25519" {
		return nil, Errorf(CodeInvalid, "JWK %q is %s/%s, not OKP/Ed25519", k.Kid, k.Kty, k.Crv)
	}
	x, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, Errorf(CodeInvalid, "JWK %q: x is not a base64url Ed25519 public key", k.Kid)
	}
	return ed25519.PublicKey(x), nil
}
