package registry_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
)

// jsonTextCases: a document, where its first string that is not text is
// ("" with no fault), and a word of what is wrong.
var jsonTextCases = []struct {
	doc, path, says string
}{
	{`{"a":"plain","b":[1,true,null,{"c":"d"}]}`, "", ""},
	{`{"a":"\u00e9\u003c\ud83d\ude00"}`, "", ""}, // escapes, and a pair
	{`{"a":"\\u0000 and \\ud800 are spelled, not escaped"}`, "", ""},
	{`{"a":"x\u0000"}`, "a", "NUL"},
	{`{"a":"\ud800"}`, "a", `\ud800`},
	{`{"a":"\uDBFFx"}`, "a", `\uDBFF`},
	{`{"a":"\udc00\ud800"}`, "a", `\udc00`}, // a pair in the wrong order
	{`{"a":"ok","b":{"c":[1,"\ud83d"]}}`, "b.c[1]", "surrogate"},
	{"{\"a\":\"caf\xe9\"}", "a", "UTF-8"},
	{"{\"events\":[{\"kind\":\"Audit\"},{\"message\":\"\xff\"}]}", "events[1].message", "UTF-8"},
	{`{"k\ud800":1}`, "k\uFFFD (a member name)", "surrogate"},
	{`{"k\u0000":1}`, `k\u0000 (a member name)`, "NUL"},
	{`"\ud800"`, "", "surrogate"},
	{`["a",["b","\u0000"]]`, "[1][1]", "NUL"},
	{"\xff{\"a\":\"\xff\"}", "", ""}, // not JSON: the decoder's to refuse
}

func TestJSONTextFault(t *testing.T) {
	for _, c := range jsonTextCases {
		path, fault, ok := registry.JSONTextFault([]byte(c.doc))
		if ok != (c.says != "") || path != c.path || !strings.Contains(fault, c.says) {
			t.Errorf("JSONTextFault(%q) = %q, %q, %v; want %q saying %q", c.doc, path, fault, ok, c.path, c.says)
		}
	}
}

// TestPayloadMustCanonicalize: every payload a submission or a rollout
// takes can be put in RFC 8785 form, so that it can be signed whenever its
// cluster asks; what cannot is refused naming where.
func TestPayloadMustCanonicalize(t *testing.T) {
	for _, c := range []struct{ payload, says string }{
		{`{"metadata":{"name":"\ud800"}}`, `payload.metadata.name holds \ud800`},
		{"{\"metadata\":{\"name\":\"\xff\"}}", "payload.metadata.name holds bytes that are not UTF-8"},
		{`[{"a":"\u0000"}]`, "payload[0].a contains a NUL"},
		{`{"a":1,"a":2}`, "canonicalized"},
		{`{"n":1e400}`, "canonicalized"},
		{`{"a":`, "not valid JSON"},
	} {
		err := registry.PayloadJSONError([]byte(c.payload))
		if registry.ErrorCode(err) != registry.CodeInvalid || !strings.Contains(err.Error(), c.says) {
			t.Errorf("PayloadJSONError(%q) = %v; want invalid saying %q", c.payload, err, c.says)
		}
	}
	for _, ok := range []string{``, `{}`, `{"a":"\ud83d\ude00","n":-0,"big":123456789012345678901234567890}`} {
		if err := registry.PayloadJSONError([]byte(ok)); err != nil {
			t.Errorf("PayloadJSONError(%q) = %v", ok, err)
		}
	}
}

func FuzzJSONTextFault(f *testing.F) {
	for _, c := range jsonTextCases {
		f.Add([]byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		_, _, ok := registry.JSONTextFault(doc)
		if ok || !json.Valid(doc) {
			return
		}
		// No fault: the document is UTF-8, and canonicalizes unless a
		// number or a duplicate member refuses it.
		if !utf8.Valid(doc) {
			t.Fatalf("%q is not UTF-8 and has no fault", doc)
		}
		if _, err := registry.CanonicalJSON(doc); err != nil && !strings.Contains(err.Error(), "Number") && !strings.Contains(err.Error(), "Duplicate") {
			t.Fatalf("%q has no fault, but: %v", doc, err)
		}
	})
}

func TestValidUTF8(t *testing.T) {
	if got := string(registry.ValidUTF8([]byte("{\"a\":\"caf\xe9\"}"))); got != `{"a":"caf`+"\uFFFD"+`"}` || !json.Valid([]byte(got)) {
		t.Fatalf("ValidUTF8 = %q", got)
	}
	in := []byte(`{"a":"ok"}`)
	if out := registry.ValidUTF8(in); &out[0] != &in[0] {
		t.Fatal("ValidUTF8 copied text that was valid already")
	}
}
