package registry

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A refusal names the value it refuses, but not a megabyte of it; the
// caller's arguments are left as they were.
func TestErrorfClipsLongValues(t *testing.T) {
	long := strings.Repeat("é", 500_000) // 1,000,000 bytes
	args := []any{long, "short"}
	err := Errorf(CodeInvalid, "cluster name %q is invalid; %s", args...)
	if len(err.Message) > 2*maxEchoed+100 {
		t.Fatalf("a message of %d bytes for a long value", len(err.Message))
	}
	if !strings.Contains(err.Message, "(1000000 bytes in all)") || !strings.Contains(err.Message, "short") || !utf8.ValidString(err.Message) {
		t.Fatalf("message %.300q", err.Message)
	}
	if args[0] != long {
		t.Fatal("Errorf changed the caller's arguments")
	}
	if got := Errorf(CodeInvalid, "name %q", "prod").Message; got != `name "prod"` {
		t.Fatalf("a short value: %q", got)
	}
}
