package registry_test

import (
	"testing"

	"github.com/tetherhq/tether/registry"
)

// ValidUTF8 replaces escaped lone surrogates, and only those: a pair, an
// escaped backslash followed by "ud800" and other escapes stay as they are.
func TestValidUTF8ReplacesLoneSurrogates(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"x\ud800"}`:             `{"a":"x\ufffd"}`,
		`{"a":"\udc00\ud800"}`:        `{"a":"\ufffd\ufffd"}`,
		`{"\ud800":1}`:                `{"\ufffd":1}`,
		`{"a":"\ud83d\ude00"}`:        `{"a":"\ud83d\ude00"}`,
		`{"a":"\\ud800"}`:             `{"a":"\\ud800"}`,
		`{"a":"\\\ud800\"\u0041"}`:    `{"a":"\\\ufffd\"\u0041"}`,
		`{"a":"end\ud800"}` + "\n":    `{"a":"end\ufffd"}` + "\n",
		`{"a":"trunc\ud8"}`:           `{"a":"trunc\ud8"}`,
		"{\"a\":\"caf\xe9 \\ud800\"}": "{\"a\":\"caf\uFFFD \\ufffd\"}",
	} {
		if got := string(registry.ValidUTF8([]byte(in))); got != want {
			t.Errorf("ValidUTF8(%s) = %s, want %s", in, got, want)
		}
	}
}
