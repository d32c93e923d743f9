package display

import (
	"testing"
	"unicode/utf8"
)

func TestSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain text, 100%", "plain text, 100%"},
		{"naïve café ✓ 日本", "naïve café ✓ 日本"},
		{"\x1b[2J\x1b[31mred", `\x1b[2J\x1b[31mred`},
		{"a\rb\bc\ad", `a\rb\x08c\x07d`},
		{"line1\nline2\tend", `line1\nline2\tend`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\x9b31m`},
		{"evil\u202Egnp.exe", `evil\u202egnp.exe`},
		{"iso\u2066x\u2069", `iso\u2066x\u2069`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"\u200fmark", `\u200fmark`},
		{"uni\u200bx", `uni\u200bx`},
		{"uni\u2028x\u2029", `uni\u2028x\u2029`},
		{"\ufeffbom\u2060\u00ad", `\ufeffbom\u2060\xad`},
		{"emoji 👨\u200d👩 and فارسی\u200cها", "emoji 👨\u200d👩 and فارسی\u200cها"},
	} {
		got := Safe(tc.in)
		if got != tc.want {
			t.Errorf("Safe(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Safe(%q) is not valid UTF-8", tc.in)
		}
	}
}

func FuzzSafe(f *testing.F) {
	for _, s := range []string{"", "ok", "\x1b]0;title\x07", "\u202e", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Safe(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Safe(%q) = %q: invalid UTF-8", s, got)
		}
		for _, r := range got {
			if unsafeRune(r) {
				t.Fatalf("Safe(%q) = %q keeps %U", s, got, r)
			}
		}
		if Safe(got) != got { // its output is plain: a second pass changes nothing
			t.Fatalf("Safe is not idempotent on %q", got)
		}
	})
}

func TestAttempt(t *testing.T) {
	for _, c := range []struct {
		attempt, max int
		want         string
	}{{2, 5, "2 of 5"}, {5, 5, "5 of 5"}, {3, 0, "3"}, {3, 2, "3 (past the 2 lease reclaims allow: requeued by an admin)"}} {
		if got := Attempt(c.attempt, c.max); got != c.want {
			t.Errorf("Attempt(%d, %d) = %q, want %q", c.attempt, c.max, got, c.want)
		}
	}
}
