package col

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestJSONStrings: a list of strings reads the same with the fast path as
// with encoding/json, and what the fast path declines still reads.
func TestJSONStrings(t *testing.T) {
	for _, text := range []string{
		`[]`, `["*"]`, `["default"]`, `["a","b","c"]`, `[""]`, `["a",""]`,
		`["é"]`, `["a\"b"]`, `["a\\b"]`, `["\u00e9"]`, `[ "a" ]`, `["a", "b"]`, `null`,
		`["a",]`, `[,"a"]`, `["a"`, `[1]`, `{"a":"b"}`, `["a""b"]`, "[\"a\tb\"]",
	} {
		var want []string
		werr := json.Unmarshal([]byte(text), &want)
		var got []string
		gerr := JSON(&got).Scan(text)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: error %v, encoding/json's %v", text, gerr, werr)
			continue
		}
		if werr == nil && (!reflect.DeepEqual(got, want) || (got == nil) != (want == nil)) {
			t.Errorf("%s: read %#v, encoding/json reads %#v", text, got, want)
		}
		if _, fast := plainStrings([]byte(text)); fast && werr != nil {
			t.Errorf("%s: the fast path took text encoding/json refuses", text)
		}
	}
}
