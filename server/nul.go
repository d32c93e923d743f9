package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/tetherhq/tether/registry"
)

// A NUL character cannot be stored in PostgreSQL's text, and no protocol
// field needs one; text carrying one is refused up front with a 400 that
// names where it was, on both stores alike, instead of failing deep in the
// database (a 500, and a result that could never be recorded).

// refuseNUL checks a request's path, query and JSON body.
func refuseNUL(r *http.Request, body []byte) error {
	if strings.ContainsRune(r.URL.Path, 0) {
		return errf(registry.CodeInvalid, "the path %q contains a NUL character (%%00); ids never do", strings.ReplaceAll(truncate(r.URL.Path, 200), "\x00", `\0`))
	}
	// Only %00 decodes to NUL (url.Parse refuses raw control characters), so
	// a query without one is not parsed: parsing it into a map, on the
	// request's goroutine, grew every long-poll's stack from 4 to 8 KiB,
	// kept for as long as the poll is held.
	if q := r.URL.RawQuery; strings.Contains(q, "%00") || strings.IndexByte(q, 0) >= 0 {
		for k, vs := range r.URL.Query() {
			for _, v := range vs {
				if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
					return errf(registry.CodeInvalid, "query parameter %s contains a NUL character (%%00)", strings.ReplaceAll(truncate(k, 100), "\x00", `\0`))
				}
			}
		}
	}
	// JSON can carry NUL only escaped; most bodies never mention it.
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return nil
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil // not JSON: the handler's decoder says what is wrong
	}
	if path := nulPath(v, ""); path != "" {
		return errf(registry.CodeInvalid, "field %s contains a NUL character (\\u0000), which tether does not store; remove it", path)
	}
	return nil
}

// nulPath returns the path of the first string (or key) holding a NUL, in
// the body's own notation (events[0].message), or "".
func nulPath(v any, at string) string {
	name := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	switch t := v.(type) {
	case string:
		if strings.ContainsRune(t, 0) {
			return cmpOr(at, "the body")
		}
	case []any:
		for i, e := range t {
			if p := nulPath(e, fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.ContainsRune(k, 0) {
				return name(strings.ReplaceAll(k, "\x00", `\u0000`)) + " (its name)"
			}
			if p := nulPath(t[k], name(k)); p != "" {
				return p
			}
		}
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
