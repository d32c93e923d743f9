// Package display holds what the CLI and the console both need to show
// tether's data to a person: text made safe for a terminal (and, as the
// console grows them, the shared formatters of times and ages).
package display

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Safe returns s with everything that could act on a terminal made visible
// instead: C0 and C1 control characters (escape sequences, carriage
// returns, backspaces, bells), DEL, Unicode bidirectional overrides and
// isolates (which reorder what follows them on screen), invisible characters
// that would make one name look like another ("uni\u200bx" is not "unix";
// the line and paragraph separators), and invalid UTF-8.
// Tabs and newlines become "\t" and "\n" too: one value stays on one line.
// Text that came from an agent is data, never terminal input: every view and
// every table passes it through Safe.
func Safe(s string) string {
	if isPlain(s) {
		return s // the common case costs one scan and no allocation
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unsafeRune(r):
			if r <= 0xff {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 {
			return isPlainUnicode(s[i:])
		}
	}
	return true
}

func isPlainUnicode(s string) bool {
	for _, r := range s { // invalid UTF-8 decodes as utf8.RuneError
		if r == utf8.RuneError || r < 0x20 || unsafeRune(r) {
			return false
		}
	}
	return true
}

// unsafeRune reports control characters, the bidi formatting characters and
// the invisible ones. The zero-width joiner and non-joiner stay: scripts
// such as Persian and Devanagari, and emoji sequences, need them.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c: // LRM, RLM, ALM
		return true
	case r == 0x200b, r == 0x2028, r == 0x2029, r == 0xfeff, r == 0x00ad, r == 0x180e:
		// zero-width space, line and paragraph separators, zero-width
		// no-break space (BOM), soft hyphen, Mongolian vowel separator
		return true
	case r >= 0x2060 && r <= 0x206f, r >= 0xfff9 && r <= 0xfffb:
		// word joiner, invisible operators, deprecated format characters;
		// interlinear annotation marks
		return true
	}
	return false
}

// Attempt renders a job's attempt against its cluster's bound on automatic
// reclaims: "2 of 5", or, once an admin's requeues took it past the bound,
// "7 (5 by lease reclaims; requeued by an admin)" rather than "7 of 5".
func Attempt(attempt, maxAttempts int) string {
	switch {
	case maxAttempts <= 0:
		return fmt.Sprint(attempt)
	case attempt <= maxAttempts:
		return fmt.Sprintf("%d of %d", attempt, maxAttempts)
	}
	return fmt.Sprintf("%d (past the %d lease reclaims allow: requeued by an admin)", attempt, maxAttempts)
}
