package server

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
)

// Text tether is sent must be text (registry.JSONTextFault): a NUL
// character cannot be stored in PostgreSQL's text and no protocol field
// needs one; bytes that are not UTF-8, and escaped lone UTF-16 surrogates,
// would be kept as sent in a payload, result or event and reach every answer
// that shows it (and a payload so written cannot be signed). Each is refused
// up front with a 400 that names where it was, on both stores alike, instead
// of failing deep in the database (a 500, and a result that could never be
// recorded) or later, at every poll or read.

// refuseBadText checks a request's path, query and JSON body.
func refuseBadText(r *http.Request, body []byte) error {
	if strings.ContainsRune(r.URL.Path, 0) {
		return errf(registry.CodeInvalid, "the path %q contains a NUL character (%%00); ids never do", strings.ReplaceAll(truncate(r.URL.Path, 200), "\x00", `\0`))
	}
	// Only %00 decodes to NUL, and only an escape of 80 to FF (or such a
	// byte sent raw) to what may not be UTF-8 (url.Parse refuses raw control
	// characters), so a query without one is not parsed: parsing it into a
	// map, on the request's goroutine, grew every long-poll's stack from 4 to
	// 8 KiB, kept for as long as the poll is held.
	if q := r.URL.RawQuery; mayHoldBadText(q) {
		for k, vs := range r.URL.Query() {
			for _, v := range vs {
				name := strings.ToValidUTF8(strings.ReplaceAll(truncate(k, 100), "\x00", `\0`), "\uFFFD")
				if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
					return errf(registry.CodeInvalid, "query parameter %s contains a NUL character (%%00)", name)
				}
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					return errf(registry.CodeInvalid, "query parameter %s holds bytes that are not UTF-8; escape text as UTF-8 (ü is %%C3%%BC)", name)
				}
			}
		}
	}
	if path, fault, ok := registry.JSONTextFault(body); ok {
		if path == "" {
			return errf(registry.CodeInvalid, "the body %s", fault)
		}
		return errf(registry.CodeInvalid, "field %s %s", path, fault)
	}
	return nil
}

// mayHoldBadText reports whether a raw query may decode to a NUL or to bytes
// that are not UTF-8: it holds %00, an escape of a byte from 80 to FF, or
// such a byte itself.
func mayHoldBadText(q string) bool {
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == 0 || c >= 0x80:
			return true
		case c == '%' && i+2 < len(q):
			if q[i+1] == '0' && q[i+2] == '0' || strings.IndexByte("89abcdefABCDEF", q[i+1]) >= 0 {
				return true
			}
		}
	}
	return false
}
