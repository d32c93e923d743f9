package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleCluster allows exactly what e names, so that the example is checked
// against the allowlists it claims to need and no more.
func exampleCluster(e PayloadExample) *Cluster {
	c := &Cluster{ClusterSpec: ClusterSpec{Name: "example"}}
	for _, pair := range []struct {
		list *[]string
		v    string
	}{{&c.AllowedNamespaces, e.Namespace}, {&c.AllowedCatalogEntries, e.CatalogEntry}, {&c.AllowedOperationTemplates, e.OperationTemplate}} {
		if pair.v != "" {
			*pair.list = []string{pair.v}
		}
	}
	return c
}

// Every example is accepted by a cluster that allows what it names, and
// refused by one that allows nothing: the examples and the rules agree.
func TestPayloadExamplesAreAccepted(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range PayloadExamples() {
		seen[e.Name] = true
		if _, err := checkPayload(exampleCluster(e), e.Kind, json.RawMessage(e.Payload)); err != nil {
			t.Errorf("example %s: %v", e.Name, err)
		}
		if _, err := checkPayload(&Cluster{ClusterSpec: ClusterSpec{Name: "closed"}}, e.Kind, json.RawMessage(e.Payload)); !IsPolicyRefusal(err) {
			t.Errorf("example %s on a cluster that allows nothing: got %v, want a policy refusal", e.Name, err)
		}
		if _, err := CanonicalJSON([]byte(e.Payload)); err != nil {
			t.Errorf("example %s cannot be signed: %v", e.Name, err)
		}
	}
	for _, name := range []string{"apply", "delete", IntentEnsureApplicationInstance, IntentRequestOperation, IntentDeleteApplicationInstance} {
		if !seen[name] {
			t.Errorf("no example for %s", name)
		}
	}
	if e, err := PayloadExampleNamed("intent"); err != nil || e.Kind != KindIntent {
		t.Errorf(`PayloadExampleNamed("intent") = %+v, %v; want an intent's example`, e, err)
	}
	if _, err := PayloadExampleNamed("aply"); ErrorCode(err) != CodeInvalid || !strings.Contains(err.Error(), "request-operation") {
		t.Errorf(`PayloadExampleNamed("aply") = %v; want invalid, listing the names`, err)
	}
}

// docsPayloadFlag finds the payloads given inline to job submit or rollout
// create in the docs: --payload '{...}'.
var docsPayloadFlag = regexp.MustCompile(`--kind (\w+)[^\n]*?--payload '([^']*)'|--payload '([^']*)'[^\n]*?--kind (\w+)`)

// The docs show every example as it is, and every payload the README and
// docs/ give on a command line is one tether accepts: a reader who copies one
// gets a job, not "operation metadata.name is required".
func TestDocsPayloadsAreValid(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "payloads.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range PayloadExamples() {
		if !strings.Contains(string(doc), "```json\n"+e.Payload+"\n```") {
			t.Errorf("docs/payloads.md does not show the %s example as `tether job submit --example %s` prints it", e.Name, e.Name)
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	open := &Cluster{ClusterSpec: ClusterSpec{Name: "open", AllowedNamespaces: []string{Wildcard}, AllowedCatalogEntries: []string{Wildcard}, AllowedOperationTemplates: []string{Wildcard}}}
	found := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docsPayloadFlag.FindAllStringSubmatch(string(text), -1) {
			kind, payload := m[1], m[2]
			if kind == "" {
				kind, payload = m[4], m[3]
			}
			found++
			if _, err := checkPayload(open, JobKind(kind), json.RawMessage(payload)); err != nil {
				t.Errorf("%s: --kind %s --payload '%s' is refused: %v", f, kind, payload, err)
			}
		}
	}
	if found == 0 {
		t.Error("found no --payload in the docs: the pattern no longer matches how they are written")
	}
}
