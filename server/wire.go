package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The agent protocol's request and response bodies (seed 000 plus the
// extensions of PROTOCOL.md). They are the server's own types, apart from the
// registry's, so that the wire contract changes only on purpose. Decoders
// ignore unknown fields (v1 forward compatibility) and turn every mistake into
// a CodeInvalid error that names the field.

// Poll parameters (PROTOCOL.md).
const (
	DefaultWait = 30 * time.Second
	MaxWait     = 300 * time.Second
)

// wireTime is an optional RFC 3339 time in a request. null and "" both mean
// absent: the public operator sends null for an unset metav1.Time, and a
// lenient reading of "" costs nothing.
type wireTime struct{ time.Time }

func (t *wireTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" || string(b) == `""` {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("must be an RFC 3339 time string")
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	t.Time = v.UTC()
	return nil
}

type wireCondition struct {
	Type               string   `json:"type"`
	Status             string   `json:"status"`
	Reason             string   `json:"reason"`
	Message            string   `json:"message"`
	LastTransitionTime wireTime `json:"lastTransitionTime"`
	ObservedGeneration int64    `json:"observedGeneration"`
}

func conditions(in []wireCondition) []registry.Condition {
	if in == nil {
		return nil
	}
	out := make([]registry.Condition, len(in))
	for i, c := range in {
		out[i] = registry.Condition{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: c.LastTransitionTime.Time, ObservedGeneration: c.ObservedGeneration,
		}
	}
	return out
}

// registerRequest is POST /api/agent/register. ClusterID is the public
// operator's hint; it is read only to be ignored.
type registerRequest struct {
	RegistrationToken string   `json:"registrationToken"`
	Token             string   `json:"token"`
	ClusterID         string   `json:"clusterId"`
	Capabilities      []string `json:"capabilities"`
	// PublicKey is the agent's encryption public key, a JWK (X25519 OKP or
	// P-256 EC): the key encrypted payloads are encrypted to.
	PublicKey json.RawMessage `json:"publicKey"`
	// CSR (PEM) asks tether's CA for a client certificate (issue 10).
	CSR string `json:"csr"`
}

// credentialResponse answers register and rotate.
type credentialResponse struct {
	ClusterID    string    `json:"clusterId"`
	Token        string    `json:"token"`
	ExpiresAt    time.Time `json:"expiresAt,omitzero"`
	RotateAfter  time.Time `json:"rotateAfter,omitzero"`
	GraceUntil   time.Time `json:"graceUntil,omitzero"`
	HMACKey      string    `json:"hmacKey,omitempty"`
	LeaseSeconds int       `json:"leaseSeconds,omitempty"`
	Capabilities []string  `json:"capabilities"`
	// ServerPublicKey: the cluster's payload-signing key, for clusters that
	// require signed payloads.
	ServerPublicKey *registry.JWK `json:"serverPublicKey,omitempty"`
	// ClientCertificate (PEM) and CABundle (PEM): issued for a csr.
	ClientCertificate string `json:"clientCertificate,omitempty"`
	CABundle          string `json:"caBundle,omitempty"`
}

type statusRequest struct {
	Phase      string          `json:"phase"`
	Conditions []wireCondition `json:"conditions"`
	Message    string          `json:"message"`
	Timestamp  wireTime        `json:"timestamp"`
}

type resultRequest struct {
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
}

type eventsRequest struct {
	ClusterID string            `json:"clusterId"`
	Events    []json.RawMessage `json:"events"`
}

type wireEvent struct {
	Kind        string               `json:"kind"`
	EventKey    string               `json:"eventKey"`
	ResourceRef registry.ResourceRef `json:"resourceRef"`
	Conditions  []wireCondition      `json:"conditions"`
	Message     string               `json:"message"`
	Timestamp   wireTime             `json:"timestamp"`
}

type jobsResponse struct {
	Jobs []wireJob `json:"jobs"`
}

type wireJob struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Payload is absent when EncryptedPayload replaces it; otherwise it is
	// always there (null for a job without one), as v1 clients expect.
	Payload json.RawMessage `json:"payload,omitempty"`
	// EncryptedPayload: for clusters that require encrypted payloads, the
	// payload as a JWE compact serialization to the cluster's public key
	// (alg ECDH-ES+A256KW, enc A256GCM, kid the key's thumbprint).
	EncryptedPayload string    `json:"encryptedPayload,omitempty"`
	IdempotencyKey   string    `json:"idempotencyKey,omitempty"`
	CreatedAt        time.Time `json:"createdAt,omitzero"`
	ExpiresAt        time.Time `json:"expiresAt,omitzero"`
	Attempt          int       `json:"attempt"`
	LeaseSeconds     int       `json:"leaseSeconds,omitempty"`
	// For clusters that require signed payloads: JobSignature, the bound
	// signature (standard base64 Ed25519 over the job's id, cluster, kind,
	// expiry and payload, in the format JobSignatureFormat names: see
	// internal/jobsig), and SignatureKeyID, the id of its key in GET
	// /api/agent/keys. Signature is the legacy payload-only signature
	// (Ed25519 over the payload's RFC 8785 form) by the same key, present
	// only where the cluster's policy allows it, for older agents.
	Signature          string `json:"signature,omitempty"`
	SignatureKeyID     string `json:"signatureKeyId,omitempty"`
	JobSignature       string `json:"jobSignature,omitempty"`
	JobSignatureFormat string `json:"jobSignatureFormat,omitempty"`
	// Traceparent is the W3C trace context of the job's submission (an
	// extension: clients that do not know it ignore it). An agent sends it
	// back in the traceparent header of its ack, status and result.
	Traceparent string `json:"traceparent,omitempty"`
}

// toWireJob is a prepared job as the wire carries it.
func toWireJob(j *registry.DeliveredJob) wireJob {
	w := wireJob{
		ID: j.ID, Kind: string(j.Kind), Payload: j.Payload, EncryptedPayload: j.EncryptedPayload, IdempotencyKey: j.IdempotencyKey,
		CreatedAt: j.CreatedAt.UTC(), ExpiresAt: j.ExpiresAt.UTC(), Attempt: j.Attempt, LeaseSeconds: j.LeaseSeconds,
		Signature: j.LegacySignature, SignatureKeyID: j.SignatureKeyID,
		JobSignature: j.JobSignature, JobSignatureFormat: j.JobSignatureFormat, Traceparent: j.Traceparent,
	}
	if w.EncryptedPayload == "" && len(w.Payload) == 0 {
		w.Payload = json.RawMessage("null") // always there for v1 clients
	}
	return w
}

// decodeJSON decodes a request body into v. An empty body is an error only
// when required.
func decodeJSON(body []byte, v any, required bool) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		if required {
			return errf(registry.CodeInvalid, "request body is required: a JSON object")
		}
		return nil
	}
	if trimmed[0] != '{' { // null, arrays and scalars would otherwise decode as "nothing"
		return errf(registry.CodeInvalid, "request body must be a JSON object")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field == "" {
			return errf(registry.CodeInvalid, "request body must be a JSON object, not a JSON %s", te.Value)
		}
		return errf(registry.CodeInvalid, "field %s %s", wireField(te.Field, reflect.TypeOf(v)), typeMismatch(te))
	case errors.As(err, &se):
		return errf(registry.CodeInvalid, "request body is malformed JSON at byte %d: %v", se.Offset, se)
	}
	// A field's own decoder refused its value (wireTime), or the body ended
	// early ("unexpected end of JSON input").
	return errf(registry.CodeInvalid, "request body is not valid: %v", err)
}

// typeMismatch says what a field of te's type takes, and what it got.
func typeMismatch(te *json.UnmarshalTypeError) string {
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n, ok := strings.CutPrefix(te.Value, "number "); ok {
			if f, err := strconv.ParseFloat(n, 64); err == nil && f == math.Trunc(f) {
				return fmt.Sprintf("is out of range: %s", truncate(n, 32))
			}
			return fmt.Sprintf("must be a whole number, not %s", truncate(n, 32))
		}
		return fmt.Sprintf("must be a whole number, not a JSON %s", te.Value)
	}
	return fmt.Sprintf("must be %s, not a JSON %s", jsonKind(te.Type.Kind().String()), te.Value)
}

// wireField is a decode error's field path as the body spells it:
// encoding/json names the Go type of an embedded struct in the path
// (ClusterSpec.policy.leaseSeconds), which no request has.
func wireField(path string, t reflect.Type) string {
	embedded := map[string]bool{}
	embeddedNames(t, map[reflect.Type]bool{}, embedded)
	parts := strings.Split(path, ".")
	kept := parts[:0]
	for _, p := range parts {
		if !embedded[p] {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return path
	}
	return strings.Join(kept, ".")
}

// embeddedNames collects the names of the embedded structs within t.
func embeddedNames(t reflect.Type, seen map[reflect.Type]bool, out map[string]bool) {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			out[f.Name] = true
		}
		embeddedNames(f.Type, seen, out)
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map", "ptr":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	}
	return "a number"
}

// decodeRegister returns the registration request; the token is taken from the
// header when the body holds none.
func decodeRegister(body []byte, bearer string) (registry.RegisterParams, error) {
	var req registerRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return registry.RegisterParams{}, err
	}
	token := req.RegistrationToken
	if token == "" {
		token = req.Token
	}
	if token == "" {
		token = bearer
	}
	if token == "" {
		return registry.RegisterParams{}, errf(registry.CodeRegistrationTokenInvalid,
			"a registration token is required: send it in the body field registrationToken or as Authorization: Bearer <token>")
	}
	return registry.RegisterParams{Token: token, Capabilities: req.Capabilities, PublicKey: req.PublicKey, CSR: req.CSR}, nil
}

func decodeStatus(body []byte) (registry.StatusReport, error) {
	var req statusRequest
	if err := decodeJSON(body, &req, true); err != nil {
		return registry.StatusReport{}, err
	}
	return registry.StatusReport{
		Phase: req.Phase, Conditions: conditions(req.Conditions), Message: req.Message, Timestamp: req.Timestamp.Time,
	}, nil
}

func decodeResult(body []byte) (registry.ResultReport, error) {
	var req resultRequest
	if err := decodeJSON(body, &req, true); err != nil {
		return registry.ResultReport{}, err
	}
	if _, ok := registry.Outcome(req.Outcome).State(); !ok {
		return registry.ResultReport{}, errf(registry.CodeInvalidOutcome,
			"field outcome %q is not one of succeeded, failed, noop, conflict", truncate(req.Outcome, 64))
	}
	return registry.ResultReport{Outcome: registry.Outcome(req.Outcome), Error: req.Error, Body: json.RawMessage(bytes.TrimSpace(body))}, nil
}

// decodeEvents returns the batch's cluster hint and its events, each keeping
// its own JSON (unknown fields included) as its Body.
func decodeEvents(body []byte) (string, []registry.Event, error) {
	var req eventsRequest
	if err := decodeJSON(body, &req, true); err != nil {
		return "", nil, err
	}
	if len(req.Events) == 0 {
		return "", nil, errf(registry.CodeInvalid, "field events must hold at least one event")
	}
	if len(req.Events) > registry.MaxEventsPerBatch {
		return "", nil, errf(registry.CodeTooLarge, "a batch holds at most %d events; this one has %d (send smaller batches)",
			registry.MaxEventsPerBatch, len(req.Events))
	}
	events := make([]registry.Event, len(req.Events))
	for i, raw := range req.Events {
		var e wireEvent
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return "", nil, errf(registry.CodeInvalid, "events[%d] must be a JSON object", i)
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return "", nil, errf(registry.CodeInvalid, "events[%d].%s %s", i, te.Field, typeMismatch(te))
			}
			return "", nil, errf(registry.CodeInvalid, "events[%d] is not valid: %v", i, err)
		}
		events[i] = registry.Event{
			Kind: e.Kind, EventKey: e.EventKey, ResourceRef: e.ResourceRef, Conditions: conditions(e.Conditions),
			Message: e.Message, Timestamp: e.Timestamp.Time, Body: json.RawMessage(bytes.TrimSpace(raw)),
		}
	}
	return req.ClusterID, events, nil
}

// pollParams is GET /api/agent/jobs's query.
type pollParams struct {
	Cluster string
	Wait    time.Duration
	Limit   int
}

func parsePoll(q url.Values) (pollParams, error) {
	p := pollParams{Cluster: strings.TrimSpace(q.Get("cluster")), Wait: DefaultWait, Limit: registry.DefaultPollLimit}
	if p.Cluster == "" {
		return p, errf(registry.CodeInvalid, "query parameter cluster is required: the cluster id this credential belongs to")
	}
	if v := q.Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, errf(registry.CodeInvalid, "query parameter wait %q must be a whole number of seconds, 0 to %d", truncate(v, 32), int(MaxWait/time.Second))
		}
		p.Wait = MaxWait // values over the maximum are treated as the maximum
		if n < int(MaxWait/time.Second) {
			p.Wait = time.Duration(n) * time.Second
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, errf(registry.CodeInvalid, "query parameter limit %q must be a whole number from 1 to %d", truncate(v, 32), registry.MaxPollLimit)
		}
		p.Limit = min(n, registry.MaxPollLimit)
	}
	return p, nil
}

// truncate shortens an echoed value so that an error message stays small.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
