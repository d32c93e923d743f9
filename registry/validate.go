package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The payload shapes the public operator applies (PROTOCOL.md, producer side).
// Only the fields tether checks are decoded; everything else is passed through
// to the agent untouched.
type objectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

type manifest struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   objectMeta      `json:"metadata"`
	Spec       json.RawMessage `json:"spec"`
}

type applicationInstanceSpec struct {
	AppRef struct {
		CatalogID string `json:"catalogId"`
	} `json:"appRef"`
}

type operationSpec struct {
	Type      string          `json:"type"`
	Engine    string          `json:"engine"`
	TargetRef json.RawMessage `json:"targetRef"`
}

type objectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
}

type intentEnvelope struct {
	Intent              string    `json:"intent"`
	ApplicationInstance *manifest `json:"applicationInstance"`
	Operation           *manifest `json:"operation"`
	Name                string    `json:"name"`
	Namespace           string    `json:"namespace"`
}

const applicationInstanceKind = "ApplicationInstance"

// checkedPayload is what validation learned about a payload.
type checkedPayload struct {
	intent string
	target Target
}

// checkPayload validates a job's payload against its kind's shape and the
// cluster's allowlists. Errors are CodeInvalid (bad shape) or a policy code
// (IsPolicyRefusal)
// (allowlist), and name the field or the rule.
func checkPayload(c *Cluster, kind JobKind, payload json.RawMessage) (checkedPayload, error) {
	if len(payload) == 0 {
		return checkedPayload{}, Errorf(CodeInvalid, "payload is required")
	}
	if len(payload) > MaxPayloadBytes {
		return checkedPayload{}, Errorf(CodeInvalid, "payload is %d bytes; the limit is %d", len(payload), MaxPayloadBytes)
	}
	if t := bytes.TrimLeft(payload, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return checkedPayload{}, Errorf(CodeInvalid, "payload must be a JSON object")
	}
	switch kind {
	case KindApply:
		var m manifest
		if err := decodePayload(payload, &m); err != nil {
			return checkedPayload{}, err
		}
		if err := m.requireIdentity("payload"); err != nil {
			return checkedPayload{}, err
		}
		if err := checkNamespace(c, "payload metadata.namespace", m.Metadata.Namespace); err != nil {
			return checkedPayload{}, err
		}
		if m.Kind == applicationInstanceKind {
			if err := checkCatalog(c, "payload", m.Spec); err != nil {
				return checkedPayload{}, err
			}
		}
		return checkedPayload{target: m.target()}, nil

	case KindDelete:
		var ref objectRef
		if err := decodePayload(payload, &ref); err != nil {
			return checkedPayload{}, err
		}
		if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
			return checkedPayload{}, Errorf(CodeInvalid, "a delete payload needs apiVersion, kind and name (and namespace for a namespaced object)")
		}
		if err := checkNamespace(c, "payload namespace", ref.Namespace); err != nil {
			return checkedPayload{}, err
		}
		return checkedPayload{target: Target{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}}, nil

	case KindIntent:
		var env intentEnvelope
		if err := decodePayload(payload, &env); err != nil {
			return checkedPayload{}, err
		}
		return checkIntent(c, &env)
	}
	return checkedPayload{}, Errorf(CodeInvalid, "job kind %q is not one of apply, delete, intent", kind)
}

func checkIntent(c *Cluster, env *intentEnvelope) (checkedPayload, error) {
	out := checkedPayload{intent: env.Intent}
	switch env.Intent {
	case IntentEnsureApplicationInstance:
		ai := env.ApplicationInstance
		if ai == nil {
			return out, Errorf(CodeInvalid, "intent %s needs an applicationInstance object", env.Intent)
		}
		if err := ai.requireIdentity("applicationInstance"); err != nil {
			return out, err
		}
		if err := checkNamespace(c, "applicationInstance metadata.namespace", ai.Metadata.Namespace); err != nil {
			return out, err
		}
		if err := checkCatalog(c, "applicationInstance", ai.Spec); err != nil {
			return out, err
		}
		out.target = ai.target()

	case IntentRequestOperation:
		op := env.Operation
		if op == nil {
			return out, Errorf(CodeInvalid, "intent %s needs an operation object", env.Intent)
		}
		if op.Metadata.Name == "" {
			return out, Errorf(CodeInvalid, "operation metadata.name is required")
		}
		var spec operationSpec
		if len(op.Spec) == 0 || decodeInto(op.Spec, &spec) != nil {
			return out, Errorf(CodeInvalid, "operation spec must be an object with type, engine and targetRef")
		}
		if spec.Type == "" || spec.Engine == "" {
			return out, Errorf(CodeInvalid, "operation spec.type and spec.engine are required (they name the operation template, e.g. backup.velero)")
		}
		if t := bytes.TrimSpace(spec.TargetRef); len(t) == 0 || t[0] != '{' {
			return out, Errorf(CodeInvalid, "operation spec.targetRef must be an object naming what the operation acts on")
		}
		if err := checkNamespace(c, "operation metadata.namespace", op.Metadata.Namespace); err != nil {
			return out, err
		}
		template := OperationTemplate(spec.Type, spec.Engine)
		if !allows(c.AllowedOperationTemplates, template) {
			return out, Errorf(CodeOperationTemplateNotAllowed, "operation template %q is not in cluster %s's allowed operation templates %s", template, c.Name, listOrNone(c.AllowedOperationTemplates))
		}
		kind := op.Kind
		if kind == "" {
			kind = "Operation"
		}
		out.target = Target{Kind: kind, Namespace: op.Metadata.Namespace, Name: op.Metadata.Name}

	case IntentDeleteApplicationInstance:
		if env.Name == "" {
			return out, Errorf(CodeInvalid, "intent %s needs name and namespace", env.Intent)
		}
		if err := checkNamespace(c, "payload namespace", env.Namespace); err != nil {
			return out, err
		}
		out.target = Target{Kind: applicationInstanceKind, Namespace: env.Namespace, Name: env.Name}

	case "":
		return out, Errorf(CodeInvalid, "an intent payload needs an intent field (%s, %s or %s)", IntentEnsureApplicationInstance, IntentRequestOperation, IntentDeleteApplicationInstance)
	default:
		return out, Errorf(CodeInvalid, "intent %q is not one of %s, %s, %s", env.Intent, IntentEnsureApplicationInstance, IntentRequestOperation, IntentDeleteApplicationInstance)
	}
	return out, nil
}

// OperationTemplate is the allowlist name of an operation: its type in lower
// camel case, a dot, its engine; e.g. ("Backup", "velero") is "backup.velero"
// and ("RunCommand", "job") is "runCommand.job".
func OperationTemplate(opType, engine string) string {
	r, size := utf8.DecodeRuneInString(opType)
	return string(unicode.ToLower(r)) + opType[size:] + "." + strings.ToLower(engine)
}

func (m *manifest) requireIdentity(what string) error {
	var missing []string
	if m.APIVersion == "" {
		missing = append(missing, "apiVersion")
	}
	if m.Kind == "" {
		missing = append(missing, "kind")
	}
	if m.Metadata.Name == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return Errorf(CodeInvalid, "%s is missing %s (a Kubernetes manifest needs apiVersion, kind and metadata.name)", what, strings.Join(missing, ", "))
	}
	return nil
}

func (m *manifest) target() Target {
	return Target{Kind: m.Kind, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name}
}

func checkNamespace(c *Cluster, field, ns string) error {
	if ns == "" {
		if !slices.Contains(c.AllowedNamespaces, Wildcard) { // only "*" admits cluster-scoped objects
			return Errorf(CodeNamespaceNotAllowed, "%s is empty (a cluster-scoped object), which needs * in cluster %s's allowed namespaces %s", field, c.Name, listOrNone(c.AllowedNamespaces))
		}
		return nil
	}
	if !allows(c.AllowedNamespaces, ns) {
		return Errorf(CodeNamespaceNotAllowed, "namespace %q (%s) is not in cluster %s's allowed namespaces %s", ns, field, c.Name, listOrNone(c.AllowedNamespaces))
	}
	return nil
}

func checkCatalog(c *Cluster, what string, spec json.RawMessage) error {
	var s applicationInstanceSpec
	if len(spec) > 0 {
		if err := decodeInto(spec, &s); err != nil {
			return Errorf(CodeInvalid, "%s spec is not valid: %v", what, err)
		}
	}
	id := s.AppRef.CatalogID
	if id == "" {
		return Errorf(CodeInvalid, "%s spec.appRef.catalogId is required for an ApplicationInstance", what)
	}
	if !allows(c.AllowedCatalogEntries, id) {
		return Errorf(CodeCatalogEntryNotAllowed, "catalog entry %q is not in cluster %s's allowed catalog entries %s", id, c.Name, listOrNone(c.AllowedCatalogEntries))
	}
	return nil
}

func listOrNone(list []string) string {
	if len(list) == 0 {
		return "(none)"
	}
	return "[" + strings.Join(list, ", ") + "]"
}

// decodePayload decodes the fields tether checks, turning decoder errors into
// sentences that say which field was wrong.
func decodePayload(payload json.RawMessage, v any) error {
	if err := decodeInto(payload, v); err != nil {
		return Errorf(CodeInvalid, "payload is not valid: %v", err)
	}
	return nil
}

// PayloadJSONError is the refusal of a payload that is not JSON tether can
// keep (nil for such JSON, or none), in the words a submission is refused
// with; a client that must encode the payload inside its request checks it
// first. Every submission and rollout passes through it, whatever its
// cluster's policy: a payload must be JSON that RFC 8785 can canonicalize,
// or it could never be signed (the policy may be turned on while the job
// waits), and its text must be text (JSONTextFault).
func PayloadJSONError(payload []byte) error {
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 {
		return nil
	}
	if !json.Valid(payload) {
		var v any
		return Errorf(CodeInvalid, "payload is not valid JSON: %v", decodeInto(payload, &v))
	}
	if path, fault, ok := JSONTextFault(payload); ok {
		if path != "" && path[0] != '[' {
			path = "." + path
		}
		return Errorf(CodeInvalid, "payload%s %s", path, fault)
	}
	// Whatever else the canonical form refuses (a number beyond what a
	// double holds, such as 1e400) is refused here, not at the poll.
	_, err := CanonicalJSON(payload)
	return err
}

func decodeInto(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Errorf("field %s must be a %s, not a JSON %s", te.Field, jsonTypeName(te.Type.Kind().String()), te.Value)
		}
		return fmt.Errorf("expected a JSON object, not a %s", te.Value)
	case errors.As(err, &se):
		return fmt.Errorf("malformed JSON at byte %d: %v", se.Offset, se)
	}
	return err
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "struct", "map", "ptr":
		return "object"
	case "slice", "array":
		return "array"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	}
	return "number"
}

// checkIdempotencyKey enforces the key's limits.
func checkIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKeyBytes {
		return Errorf(CodeInvalid, "idempotency key is %d bytes; the limit is %d", len(k), MaxIdempotencyKeyBytes)
	}
	if !utf8.ValidString(k) || strings.ContainsFunc(k, isControl) {
		return Errorf(CodeInvalid, "idempotency key must be printable UTF-8 text")
	}
	return nil
}

// MaxQueryText bounds every free-text filter of a list, in characters: a
// job search or error, an event kind, an audit action, a label selector, an
// organization. SQLite refuses a LIKE pattern of 50,000 bytes ("LIKE or
// GLOB pattern too complex", a 500 any viewer could cause), and no filter
// needs more than an idempotency key (512 bytes) and a few words. The
// registry enforces it, so the admin API, the CLI and the console alike.
const MaxQueryText = 1000

// checkQueryText refuses a filter longer than MaxQueryText, naming it.
func checkQueryText(name, v string) error {
	if len(v) <= MaxQueryText {
		return nil // every character is a byte or more
	}
	if n := utf8.RuneCountInString(v); n > MaxQueryText {
		return Errorf(CodeInvalid, "%s is %d characters long; the limit is %d", name, n, MaxQueryText)
	}
	return nil
}
