// Package apiclient is a Go client of tether's agent protocol
// (PROTOCOL.md, media type application/vnd.vworkspace.agent.v1+json). An agent
// author imports it and gets every rule of the reference operator's behaviour:
// the retry policy, credential rotation, HMAC-signed writes and fencing.
//
// It uses only the standard library and has its own wire types, so it never
// depends on the server's code.
package apiclient

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// MediaType is the protocol's v1 media type.
const MediaType = "application/vnd.vworkspace.agent.v1+json"

// Capabilities an agent may negotiate at registration.
const (
	CapabilityHMAC  = "hmac"
	CapabilityLease = "lease"
)

// Credential is what registration and rotation return: everything an agent
// must keep (in a file of mode 0600) to talk to tether. Its String, GoString
// and LogValue hide the secrets, so that logging one by mistake leaks nothing;
// it marshals to JSON in full, for the agent's state file.
type Credential struct {
	ClusterID    string    `json:"clusterId"`
	Token        string    `json:"token"`
	ExpiresAt    time.Time `json:"expiresAt,omitzero"`
	RotateAfter  time.Time `json:"rotateAfter,omitzero"`
	HMACKey      string    `json:"hmacKey,omitempty"` // base64url, no padding
	LeaseSeconds int       `json:"leaseSeconds,omitempty"`
	// GraceUntil is, after a rotation, when the previous credential stops working.
	GraceUntil   time.Time `json:"graceUntil,omitzero"`
	Capabilities []string  `json:"capabilities,omitempty"`
	// ServerPublicKey is the cluster's payload-signing key; tether sends it
	// only to clusters that require signed payloads, so its presence means
	// every job must carry a valid signature.
	ServerPublicKey *JWK `json:"serverPublicKey,omitempty"`
	// ClientCertificate and CABundle (PEM) answer a CSR sent at register or
	// rotate: a client certificate naming the cluster, valid as long as the
	// credential, and the CAs it chains to. The private key stays with the
	// agent that made the CSR.
	ClientCertificate string `json:"clientCertificate,omitempty"`
	CABundle          string `json:"caBundle,omitempty"`
}

// JWK is a public key as a JSON Web Key: the cluster's payload-signing keys
// (OKP, Ed25519) in serverPublicKey and GET /api/agent/keys.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
	// EndorsedBy and Endorsement (GET /api/agent/keys): the kid of the key
	// this one replaced, and that key's signature introducing this one.
	// The key set travels with the jobs and proves nothing by itself: trust
	// a key from it only when a key you already trust endorsed it.
	EndorsedBy  string `json:"endorsedBy,omitempty"`
	Endorsement string `json:"endorsement,omitempty"`
}

func (c Credential) String() string {
	return fmt.Sprintf("credential for cluster %s (expires %s, signed=%v)", c.ClusterID, c.ExpiresAt.Format(time.RFC3339), c.HMACKey != "")
}
func (c Credential) GoString() string     { return c.String() }
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Job is a job as a poll hands it out.
type Job struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
	// EncryptedPayload replaces Payload for clusters that require encrypted
	// payloads: a JWE compact serialization (ECDH-ES+A256KW, A256GCM) to
	// the key the agent registered with. The signature, if any, covers the
	// plaintext.
	EncryptedPayload string    `json:"encryptedPayload,omitempty"`
	IdempotencyKey   string    `json:"idempotencyKey,omitempty"`
	CreatedAt        time.Time `json:"createdAt,omitzero"`
	ExpiresAt        time.Time `json:"expiresAt,omitzero"`
	// JobSignature (format JobSignatureFormat, "v2") signs the job bound
	// to its id, cluster, kind and expiry, with the key SignatureKeyID;
	// Signature is the legacy payload-only signature, sent only where the
	// cluster's policy still allows it. See docs/protocol.md.
	Signature          string `json:"signature,omitempty"`
	SignatureKeyID     string `json:"signatureKeyId,omitempty"`
	JobSignature       string `json:"jobSignature,omitempty"`
	JobSignatureFormat string `json:"jobSignatureFormat,omitempty"`
	Attempt            int    `json:"attempt,omitempty"`
	LeaseSeconds       int    `json:"leaseSeconds,omitempty"`
	// Traceparent is the W3C trace context of the job's submission, when it
	// was traced (a tether extension). Send it back on the job's requests
	// with WithTraceparent, and hand it to the work the job runs, so that
	// everything the job causes joins one trace.
	Traceparent string `json:"traceparent,omitempty"`
}

// Expired reports whether the job's expiresAt has passed: the agent must not
// run it, and reports it with ExpiredResult.
func (j *Job) Expired(now time.Time) bool { return !j.ExpiresAt.IsZero() && !now.Before(j.ExpiresAt) }

// Claim is what a successful ack returns. ClaimID and LeaseExpiresAt are set
// only for lease clients.
type Claim struct {
	ClaimID        string
	LeaseExpiresAt time.Time
}

// Condition is a Kubernetes metav1.Condition.
type Condition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime"`
	ObservedGeneration int64      `json:"observedGeneration,omitempty"`
}

// Status is a job's interim status.
type Status struct {
	Phase      string      `json:"phase,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	Message    string      `json:"message,omitempty"`
	Timestamp  time.Time   `json:"timestamp,omitzero"`
}

// Outcomes of a job's result.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeNoop      = "noop"
	OutcomeConflict  = "conflict"
)

// Result is a job's terminal result. Error is required for failed and
// conflict.
type Result struct {
	Outcome    string          `json:"outcome"`
	Error      string          `json:"error,omitempty"`
	AppliedRef json.RawMessage `json:"appliedRef,omitempty"`
	Timestamp  time.Time       `json:"timestamp,omitzero"`
	// Output is any extra result data the agent wants recorded.
	Output json.RawMessage `json:"output,omitempty"`
}

// ExpiredResult is the result an agent posts for a job it skipped because
// its expiresAt had passed.
func ExpiredResult(now time.Time) Result {
	return Result{Outcome: OutcomeNoop, Error: "expired", Timestamp: now.UTC()}
}

// Standard event kinds.
const (
	EventConditionTransition = "ConditionTransition"
	EventClusterHeartbeat    = "ClusterHeartbeat"
	EventAudit               = "Audit"
	EventBufferOverflow      = "BufferOverflow"
)

// ResourceRef is the object an event is about.
type ResourceRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

// Event is a status, condition or audit event not tied to a job.
type Event struct {
	Kind        string      `json:"kind"`
	EventKey    string      `json:"eventKey,omitempty"`
	ResourceRef ResourceRef `json:"resourceRef"`
	Conditions  []Condition `json:"conditions,omitempty"`
	Message     string      `json:"message,omitempty"`
	Timestamp   time.Time   `json:"timestamp,omitzero"`
}

// HeartbeatEvent is the ClusterHeartbeat the reference operator sends about
// once a minute, with the agent's health conditions.
func HeartbeatEvent(clusterID string, now time.Time, conditions []Condition) Event {
	return Event{
		Kind:        EventClusterHeartbeat,
		ResourceRef: ResourceRef{APIVersion: "ops.vworkspace.io/v1alpha1", Kind: "Cluster", Name: clusterID},
		Conditions:  conditions,
		Timestamp:   now.UTC(),
	}
}
