package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text in what tether is sent is Unicode text, on every path and every
// store. Three things that JSON can carry are not, and are refused naming
// where they are: a NUL character (PostgreSQL's text cannot hold it, and no
// field needs one), bytes that are not UTF-8, and an escaped lone UTF-16
// surrogate ("\ud800"). The last two decode to U+FFFD in Go, but payloads,
// results and events are kept as the JSON that was sent: such a payload
// cannot be canonicalized (RFC 8785) to be signed, and such bytes would
// reach every answer that shows it. Data stored before these were refused
// is shown through ValidUTF8.

// JSONTextFault finds the first string of the JSON text raw, a value or a
// member name, that is not text tether takes. It returns where it is, in the
// document's own notation (events[0].message; "" for a document that is a
// string itself), and what is wrong with it, as a phrase that follows the
// name ("holds bytes that are not UTF-8"); ok is false when every string is
// text, or when raw is not JSON before its first such string (its decoder
// says what is wrong).
func JSONTextFault(raw []byte) (path, fault string, ok bool) {
	if utf8.Valid(raw) && !suspectEscape(raw) {
		return "", "", false // nearly every document: one scan, no parse
	}
	return findTextFault(raw)
}

// suspectEscape reports whether raw holds \u0000 or an escaped surrogate
// (\uD800 to \uDFFF), which may be a lone one. It may say yes wrongly (an
// escaped backslash followed by u0000, a well-formed pair); never no wrongly.
func suspectEscape(raw []byte) bool {
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(`\u`))
		if j < 0 || i+j+6 > len(raw) {
			return false
		}
		hex := raw[i+j+2 : i+j+6]
		if string(hex) == "0000" || (hex[0] == 'd' || hex[0] == 'D') && strings.IndexByte("89abcdefABCDEF", hex[1]) >= 0 {
			return true
		}
		i += j + 2
	}
}

// jsonFrame is an object or array findTextFault is inside.
type jsonFrame struct {
	object  bool
	wantKey bool   // object: the next string is a member name
	key     string // object: the current member
	index   int    // array: the current element
}

func findTextFault(raw []byte) (string, string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var stack []jsonFrame
	// done moves past a complete value in its container.
	done := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	var prev int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false // the end, or not JSON
		}
		end := dec.InputOffset()
		lit := raw[prev:end]
		prev = end
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, jsonFrame{object: true, wantKey: true})
			case '[':
				stack = append(stack, jsonFrame{})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			// The token's own text: the decoder consumed the separator
			// (, or :) and the spaces before it in the same call.
			lit = bytes.TrimLeft(lit, " \t\r\n,:")
			top := len(stack) - 1
			if top >= 0 && stack[top].object && stack[top].wantKey {
				if fault := stringFault(lit); fault != "" {
					return jsonPath(stack[:top], strings.ReplaceAll(t, "\x00", `\u0000`)) + " (a member name)", fault, true
				}
				stack[top].key, stack[top].wantKey = t, false
				continue
			}
			if fault := stringFault(lit); fault != "" {
				return jsonPath(stack, ""), fault, true
			}
			done()
		default:
			done()
		}
	}
}

// jsonPath names a place: the members and elements of stack, then last.
func jsonPath(stack []jsonFrame, last string) string {
	var b strings.Builder
	for _, f := range stack {
		if f.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		} else {
			fmt.Fprintf(&b, "[%d]", f.index)
		}
	}
	if last != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(last)
	}
	return b.String()
}

// stringFault says what is wrong with one string literal, quotes included,
// of a document the decoder found well formed, or "".
func stringFault(lit []byte) string {
	if !utf8.Valid(lit) {
		return "holds bytes that are not UTF-8; send text as UTF-8"
	}
	for i := 0; i < len(lit)-1; i++ {
		if lit[i] != '\\' {
			continue
		}
		i++
		if lit[i] != 'u' || i+4 >= len(lit) {
			continue
		}
		r, _ := strconv.ParseUint(string(lit[i+1:i+5]), 16, 16)
		esc := string(lit[i-1 : i+5])
		i += 4
		switch {
		case r == 0:
			return "contains a NUL character (\\u0000), which tether does not store; remove it"
		case r >= 0xD800 && r < 0xDC00:
			if i+6 < len(lit) && lit[i+1] == '\\' && lit[i+2] == 'u' {
				if lo, err := strconv.ParseUint(string(lit[i+3:i+7]), 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					i += 6 // a pair: one character beyond U+FFFF
					continue
				}
			}
			return loneSurrogate(esc)
		case r >= 0xDC00 && r < 0xE000:
			return loneSurrogate(esc)
		}
	}
	return ""
}

func loneSurrogate(esc string) string {
	return "holds " + esc + ", half of a UTF-16 surrogate pair without its other half, which is not a character; escape a character beyond U+FFFF as a pair (\\ud83d\\ude00) or send it as UTF-8"
}

// ValidUTF8 returns b with every sequence of bytes that is not UTF-8
// replaced by U+FFFD, and b itself when it is all UTF-8: every answer
// (HTTP, the watch stream, the CLI's output) passes through it, so that a
// payload, result or event stored before such bytes were refused reads as
// valid UTF-8 (and as valid JSON: outside its strings, JSON tether stored
// was ASCII).
//
// b is JSON, and an escaped lone UTF-16 surrogate ("\ud800") in it, which a
// payload or an agent's body kept as sent could hold before tether refused
// it, is replaced by "\ufffd" too: YAML readers (-o yaml) and strict JSON
// readers refuse it, and one such record must not make a whole list
// unreadable.
func ValidUTF8(b []byte) []byte {
	b = replaceLoneSurrogates(b)
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

// replaceLoneSurrogates returns the JSON text b with every escaped lone
// surrogate replaced by \ufffd (same length), copying b only when it holds
// one. Outside strings JSON has no backslash, so escapes are found by
// walking backslash pairs.
func replaceLoneSurrogates(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u`)) {
		return b
	}
	out := b
	copied := false
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' || i+6 > len(b) {
			i++ // \\, \" and the others: skip the escaped character
			continue
		}
		r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		if err != nil || r < 0xD800 || r >= 0xE000 {
			i += 5
			continue
		}
		if r < 0xDC00 && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			if lo, err := strconv.ParseUint(string(b[i+8:i+12]), 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
				i += 11 // a pair
				continue
			}
		}
		if !copied {
			out = append([]byte(nil), b...)
			copied = true
		}
		copy(out[i:i+6], `\ufffd`)
		i += 5
	}
	return out
}
