package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// convert runs the output converter of -o/--jq over what a command printed.
func convert(t *testing.T, output, jq, printed string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	g := &globals{output: output, jq: jq, stdout: &out}
	if err := setupOutput(g); err != nil {
		t.Fatalf("setupOutput(%q, %q): %v", output, jq, err)
	}
	if _, err := io.WriteString(g.stdout, printed); err != nil {
		t.Fatal(err)
	}
	var err error
	if g.finishOutput != nil {
		err = g.finishOutput()
	}
	return out.String(), err
}

const clustersJSON = `[
  {"id": "cl-1", "name": "alpha", "state": "active", "allowedNamespaces": ["apps", "web"], "policy": {"maxAttempts": 5}, "note": "true"},
  {"id": "cl-2", "name": "beta", "state": "pending", "allowedNamespaces": [], "policy": {"maxAttempts": 3}, "note": "multi\nline"}
]
`

func TestOutputFormats(t *testing.T) {
	for _, tc := range []struct {
		output, jq, want string
	}{
		{"json", "", clustersJSON},
		{"jsonpath={[*].name}", "", "alpha beta\n"},
		{"jsonpath=[0].id", "", "cl-1\n"},
		{"jsonpath={[0].allowedNamespaces}", "", `["apps","web"]` + "\n"},
		{`jsonpath={range [*]}{.name}{"\t"}{.policy.maxAttempts}{"\n"}{end}`, "", "alpha\t5\nbeta\t3\n"},
		{"jsonpath={[-1]['name']}", "", "beta\n"},
		{`jsonpath={range [*]}{.name}:{range .allowedNamespaces[*]} {@}{end}{"\n"}{end}`, "", "alpha: apps web\nbeta:\n"},
		{"jsonpath={..maxAttempts}", "", "5 3\n"},
		{`jsonpath={[?(@.state=="pending")].name}`, "", "beta\n"},
		{"jsonpath={[*].missing}", "", "\n"},
		{"table", ".[].name", "alpha\nbeta\n"},
		{"json", `map(select(.state == "active")) | length`, "1\n"},
		{"table", ".[0] | {name, state}", "{\n  \"name\": \"alpha\",\n  \"state\": \"active\"\n}\n"},
	} {
		got, err := convert(t, tc.output, tc.jq, clustersJSON)
		if err != nil || got != tc.want {
			t.Errorf("-o %s --jq %q: got %q (%v), want %q", tc.output, tc.jq, got, err, tc.want)
		}
	}

	// YAML keeps the fields in the command's order, quotes what would
	// change type, and round-trips to the same data.
	got, err := convert(t, "yaml", "", clustersJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "- id: cl-1\n  name: alpha\n") || !strings.Contains(got, `note: "true"`) {
		t.Errorf("got YAML\n%s\nwant the JSON's field order and \"true\" kept a string", got)
	}
	var back []map[string]any
	if err := yaml.Unmarshal([]byte(got), &back); err != nil || len(back) != 2 || back[1]["note"] != "multi\nline" {
		t.Errorf("the YAML does not read back as the same data: %v %v", back, err)
	}

	// A stream (--follow) converts value by value; text that is not JSON
	// passes through.
	got, _ = convert(t, "yaml", "", `{"a":1}`+"\n"+`{"a":2}`+"\n")
	if got != "a: 1\n---\na: 2\n" {
		t.Errorf("stream as YAML: got %q, want one document per value", got)
	}
	got, _ = convert(t, "jsonpath={.a}", "", `{"a":1}`+"\n"+`{"a":2}`+"\n")
	if got != "1\n2\n" {
		t.Errorf("stream through jsonpath: got %q", got)
	}
	got, _ = convert(t, "yaml", "", "Registered cluster x.\n")
	if got != "Registered cluster x.\n" {
		t.Errorf("plain text: got %q, want it unchanged", got)
	}
	// As with kubectl, an index past the end is an error, not silence.
	if _, err := convert(t, "jsonpath={[5].name}", "", clustersJSON); err == nil || !strings.Contains(err.Error(), "out of bounds") {
		t.Errorf("an index past the end: got %v, want kubectl's out-of-bounds error", err)
	}
	// A jq error at run time is an error, not silence.
	if _, err := convert(t, "table", ".[] | error(\"boom\")", clustersJSON); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a failing jq expression: got %v", err)
	}

	for _, bad := range []string{"xml", "jsonpath=", "jsonpath={.a", "jsonpath={range .a}", "jsonpath={end}", "jsonpath={range .a}{end}{end}", "jsonpath={[x]}"} {
		g := &globals{output: bad, stdout: io.Discard}
		if err := setupOutput(g); err == nil {
			t.Errorf("-o %s was accepted", bad)
		}
	}
	if err := setupOutput(&globals{output: "wide", stdout: io.Discard}); err != nil {
		t.Errorf("-o wide: %v", err)
	}
}

// The real binary: every format on a listing, a getter and version.
func TestOutputFormatsCLI(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "fmt", "--namespaces", "apps")
	if res := ok(t, db, "cluster", "list", "-o", "jsonpath={[*].name}"); res.stdout != "fmt\n" {
		t.Errorf("cluster list -o jsonpath: got %q", res.stdout)
	}
	if res := ok(t, db, "cluster", "get", "fmt", "--jq", ".id"); res.stdout != c.ClusterID+"\n" {
		t.Errorf("cluster get --jq .id: got %q", res.stdout)
	}
	if res := ok(t, db, "cluster", "get", "fmt", "-o", "yaml"); !strings.Contains(res.stdout, "name: fmt\n") {
		t.Errorf("cluster get -o yaml: got %q", res.stdout)
	}
	if res := ok(t, db, "cluster", "list", "-o", "wide"); !strings.Contains(res.stdout, "NAMESPACES") || !strings.Contains(res.stdout, "LABELS") {
		t.Errorf("cluster list -o wide: got %q, want the extra columns", res.stdout)
	}
	if res := ok(t, db, "job", "list", "-o", "wide"); !strings.Contains(res.stdout, "IDEMPOTENCY KEY") {
		t.Errorf("job list -o wide: got %q, want the extra columns", res.stdout)
	}
	if res := ok(t, db, "version", "-o", "yaml"); !strings.Contains(res.stdout, "version: ") {
		t.Errorf("version -o yaml: got %q", res.stdout)
	}
	// A failing command prints nothing on stdout, whatever the format.
	wantError(t, cli(t, db, "cluster", "get", "nope", "-o", "yaml"), exitError, "nope")
}
