package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/tetherhq/tether/internal/jwe"
)

// Encrypted payloads (issue 10, seed 003): a cluster whose policy requires
// them has each job's payload handed to its agent as encryptedPayload, a JWE
// compact serialization (alg ECDH-ES+A256KW, enc A256GCM, kid the key's RFC
// 7638 thumbprint) to the cluster's public key, and stored sealed by the
// Keyring, so that neither the database nor a job read shows it. Policy
// checks run on the plaintext at submit; the signature of signed payloads
// covers the plaintext too.

// Audit actions of encrypted payloads.
const (
	// AuditJobPayloadViewed: someone asked to see a sealed payload. The
	// entry never holds the payload.
	AuditJobPayloadViewed = "job.payload_viewed"
)

// AgentPublicKey is a cluster's public key for encrypted payloads, as a JWK's
// JSON text: what its agent sent at register, or what an admin set. In JSON
// it is the JWK object itself. Decoding accepts a JWK object, or a string
// holding a JWK or a PEM PUBLIC KEY block; null or "" clears it (a merge
// patch's null). Normalize validates it and rewrites it in tether's form
// (public members, kid = thumbprint, use enc).
type AgentPublicKey string

// MarshalJSON writes the JWK as an object.
func (k AgentPublicKey) MarshalJSON() ([]byte, error) {
	if k == "" {
		return []byte("null"), nil
	}
	if json.Valid([]byte(k)) {
		return []byte(k), nil
	}
	return json.Marshal(string(k)) // not normalized yet (a PEM): as the string it is
}

// UnmarshalJSON reads a JWK object, a string (JWK or PEM), or null.
func (k *AgentPublicKey) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*k = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*k = AgentPublicKey(strings.TrimSpace(s))
	case len(b) > 0 && b[0] == '{':
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return err
		}
		*k = AgentPublicKey(buf.String())
	default:
		return Errorf(CodeInvalid, "publicKey must be a JWK object, a string holding a JWK or a PEM public key, or null")
	}
	return nil
}

// ParseAgentPublicKey reads an encryption public key (a JWK, or a PEM PUBLIC
// KEY block) and returns it in tether's form. field names it in the error.
func ParseAgentPublicKey(field string, text []byte) (AgentPublicKey, error) {
	k, err := jwe.ParsePublicKey(text)
	if err != nil {
		return "", Errorf(CodeInvalid, "%s is not a usable encryption public key: %v", field, err)
	}
	return AgentPublicKey(k.JWK()), nil
}

func (k *AgentPublicKey) normalize() error {
	if strings.TrimSpace(string(*k)) == "" {
		*k = ""
		return nil
	}
	v, err := ParseAgentPublicKey("publicKey", []byte(*k))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// KeyID is the key's kid (its RFC 7638 thumbprint), or "none".
func (k AgentPublicKey) KeyID() string {
	if k == "" {
		return "none"
	}
	pub, err := jwe.ParsePublicKey([]byte(k))
	if err != nil {
		return "invalid"
	}
	return pub.Thumbprint()
}

// Curve names the key's curve (X25519, P-256), or "".
func (k AgentPublicKey) Curve() string {
	var m struct {
		Crv string `json:"crv"`
	}
	_ = json.Unmarshal([]byte(k), &m)
	return m.Crv
}

// canSeal refuses encrypted payloads on a tether without a key file: their
// payloads are stored sealed, and there would be nothing to seal them with.
func (r *Registry) canSeal(spec *ClusterSpec) error {
	if spec.Policy.RequireEncryptedPayloads && r.cfg.Keyring == nil {
		return Errorf(CodeUnavailable, "this tether has no key file, so it cannot store encrypted payloads sealed; its admin must start it with --key-file")
	}
	return nil
}

// sealJob stores j's payload sealed when its cluster requires encrypted
// payloads: the plaintext is bound to the job's id (a sealed payload copied
// onto another job does not open) and dropped from j.
func (r *Registry) sealJob(c *Cluster, j *Job) error {
	if !c.Policy.RequireEncryptedPayloads {
		return nil
	}
	if err := r.canSeal(&c.ClusterSpec); err != nil {
		return err
	}
	sealed, err := r.cfg.Keyring.Seal(j.Payload, []byte(j.ID))
	if err != nil {
		return err
	}
	j.Payload, j.PayloadSealed, j.SealedPayload = nil, true, sealed
	return nil
}

// openPayload returns j's payload in plain text, opening it if sealed.
func (r *Registry) openPayload(j *Job) (json.RawMessage, error) {
	if !j.PayloadSealed {
		return j.Payload, nil
	}
	if r.cfg.Keyring == nil {
		return nil, Errorf(CodeUnavailable, "job %s's payload is sealed and this tether has no key file to open it; start it with the --key-file it was sealed with", j.ID)
	}
	pt, err := r.cfg.Keyring.Open(j.SealedPayload, []byte(j.ID))
	if err != nil {
		return nil, err
	}
	return json.RawMessage(pt), nil
}

// ShowJobPayload returns the job with its payload, opened if it is sealed.
// Seeing a sealed payload is an admin's explicit act, audited (the entry
// names the job, never the payload).
func (r *Registry) ShowJobPayload(ctx context.Context, id string) (*Job, error) {
	j, err := r.GetJob(ctx, id)
	if err != nil || !j.PayloadSealed {
		return j, err
	}
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	pt, err := r.openPayload(j)
	if err != nil {
		return nil, err
	}
	if err := r.store.AuditAppend(ctx, r.auditEntry(ctx, AuditJobPayloadViewed, j.ClusterID, "job", j.ID, "sealed payload shown")); err != nil {
		return nil, err
	}
	j.Payload = pt
	return j, nil
}
