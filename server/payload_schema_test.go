package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// The JSON Schemas published in docs/schemas/ are the OpenAPI document's
// payload schemas, word for word: one contract, two places to find it.
func TestPayloadSchemasPublished(t *testing.T) {
	c := loadContract(t)
	schemas := c.doc["components"].(map[string]any)["schemas"].(map[string]any)
	for file, component := range map[string]string{"apply": "ApplyPayload", "delete": "DeletePayload", "intent": "IntentPayload"} {
		raw, err := os.ReadFile(filepath.Join("..", "docs", "schemas", file+".schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var published map[string]any
		if err := json.Unmarshal(raw, &published); err != nil {
			t.Fatalf("docs/schemas/%s.schema.json: %v", file, err)
		}
		if published["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("docs/schemas/%s.schema.json: $schema %v, want draft 2020-12", file, published["$schema"])
		}
		for _, k := range []string{"$schema", "$id", "title"} {
			delete(published, k)
		}
		if !reflect.DeepEqual(published, schemas[component]) {
			t.Errorf("docs/schemas/%s.schema.json differs from components/schemas/%s of the OpenAPI document", file, component)
		}
	}
}

// Every payload example (tether job submit --example) matches its kind's
// schema and is accepted; a payload that misses what its kind requires is
// flagged by the schema as tether refuses it.
func TestPayloadExamplesMatchTheSchemas(t *testing.T) {
	c := loadContract(t)
	e := newEnv(t)
	vt := validating(t, e, c)
	root := e.adminToken("root", registry.RoleAdmin, "")
	e.cluster("open", func(s *registry.ClusterSpec) {
		s.AllowedNamespaces = []string{"*"}
		s.AllowedCatalogEntries = []string{"*"}
		s.AllowedOperationTemplates = []string{"*"}
	})
	for _, ex := range registry.PayloadExamples() {
		r := e.api("POST", "/jobs", root, map[string]any{"cluster": "open", "kind": ex.Kind, "payload": json.RawMessage(ex.Payload)})
		if r.status != 202 {
			t.Errorf("example %s: %d %s", ex.Name, r.status, r.body)
		}
	}
	vt.check(t)

	for _, bad := range []struct{ kind, payload, refusal string }{
		{"intent", `{"intent":"request-operation","operation":{"spec":{"type":"Backup","engine":"velero","targetRef":{}}}}`, "operation metadata.name is required"},
		{"apply", `{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance","metadata":{"name":"x","namespace":"a"},"spec":{}}`, "catalogId is required"},
		{"delete", `{"apiVersion":"v1","kind":"ConfigMap"}`, "needs apiVersion, kind and name"},
		{"intent", `{"intent":"ensure-everything"}`, `intent "ensure-everything" is not one of`},
	} {
		r := e.api("POST", "/jobs", root, map[string]any{"cluster": "open", "kind": bad.kind, "payload": json.RawMessage(bad.payload)}, invalidRequest())
		wantAPIError(t, r, 400, "invalid", bad.refusal)
		// The same request, checked against the document, breaks it.
		r = e.api("POST", "/jobs", root, map[string]any{"cluster": "open", "kind": bad.kind, "payload": json.RawMessage(bad.payload)})
		vt.mu.Lock()
		flagged := len(vt.problems) > 0 && strings.Contains(strings.Join(vt.problems, "\n"), "request")
		vt.problems = nil
		vt.mu.Unlock()
		if !flagged {
			t.Errorf("the schema of %s accepts %s, which tether refuses", bad.kind, bad.payload)
		}
	}
}
