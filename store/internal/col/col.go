// Package col holds how both stores put tether's values in SQL columns and
// read them back: times as Unix milliseconds (NULL for the zero time), lists
// and conditions as JSON text, nullable text and bytes.
package col

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// MS stores a time as Unix milliseconds, and the zero time as NULL.
func MS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// Time scans Unix milliseconds (or NULL, as the zero time) into t.
func Time(t *time.Time) sql.Scanner { return msTime{t} }

type msTime struct{ t *time.Time }

func (m msTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*m.t = time.Time{}
	case int64:
		*m.t = time.UnixMilli(x).UTC()
	case int32:
		*m.t = time.UnixMilli(int64(x)).UTC()
	default:
		return fmt.Errorf("time column holds %T", v)
	}
	return nil
}

// JSONText encodes a list or object column; nil lists are stored as [].
func JSONText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err)) // only tether's own types are stored
	}
	if string(b) == "null" {
		return "[]"
	}
	return string(b)
}

// JSONObject is JSONText for maps: a nil map is stored as {}.
func JSONObject(v any) string {
	if s := JSONText(v); s != "[]" {
		return s
	}
	return "{}"
}

// JSON scans a JSON text column into dst; NULL leaves dst as it is.
func JSON(dst any) sql.Scanner { return jsonCol{dst} }

type jsonCol struct{ dst any }

func (j jsonCol) Scan(v any) error {
	var b []byte
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return fmt.Errorf("JSON column holds %T", v)
	}
	if len(b) == 0 {
		return nil
	}
	if d, ok := j.dst.(*[]string); ok {
		// Most of a cluster's JSON columns are short lists of plain names
		// (namespaces, catalog entries, capabilities), and a fleet's list
		// reads 50,000 clusters: read without encoding/json, to what it
		// would have read.
		if s, ok := plainStrings(b); ok {
			*d = s
			return nil
		}
	}
	return json.Unmarshal(b, j.dst)
}

// plainStrings reads a compact JSON array of strings that need no
// unescaping (as json.Marshal writes plain names), and reports false for
// any other text, which encoding/json then reads.
func plainStrings(b []byte) ([]string, bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	out := []string{}
	rest := b[1 : len(b)-1]
	for len(rest) > 0 {
		if rest[0] != '"' {
			return nil, false
		}
		end := 1
		for end < len(rest) && rest[end] != '"' {
			if c := rest[end]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return nil, false
			}
			end++
		}
		if end == len(rest) {
			return nil, false
		}
		out = append(out, string(rest[1:end]))
		rest = rest[end+1:]
		if len(rest) > 0 {
			if rest[0] != ',' || len(rest) == 1 {
				return nil, false
			}
			rest = rest[1:]
		}
	}
	return out, true
}

// String scans a nullable text column into s ("" for NULL).
func String(s *string) sql.Scanner { return nullStr{s} }

type nullStr struct{ s *string }

func (n nullStr) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*n.s = ""
	case string:
		*n.s = x
	case []byte:
		*n.s = string(x)
	default:
		return fmt.Errorf("text column holds %T", v)
	}
	return nil
}

// Bytes scans a nullable binary or text column into a copy of its bytes.
func Bytes(b *[]byte) sql.Scanner { return blob{b} }

type blob struct{ b *[]byte }

func (n blob) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*n.b = nil
	case []byte:
		*n.b = append([]byte(nil), x...)
	case string:
		*n.b = []byte(x)
	default:
		return fmt.Errorf("binary column holds %T", v)
	}
	return nil
}

// NullIfEmpty stores "" as NULL.
func NullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
