package postgres

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// ms stores a time as Unix milliseconds, and the zero time as NULL.
func ms(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// msPtr is ms for array parameters: nil for the zero time.
func msPtr(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

// msTime scans Unix milliseconds (or NULL, as the zero time).
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

func tm(t *time.Time) sql.Scanner { return msTime{t} }

// jsonText encodes a list or object column; nil lists are stored as [].
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err)) // only tether's own types are stored
	}
	if string(b) == "null" {
		return "[]"
	}
	return string(b)
}

// jsonCol scans a JSON text column into dst; NULL leaves dst as it is.
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
	return json.Unmarshal(b, j.dst)
}

func js(dst any) sql.Scanner { return jsonCol{dst} }

// nullStr scans a nullable text column into a string.
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

func str(s *string) sql.Scanner { return nullStr{s} }

// blob scans a nullable BYTEA column into a copy of its bytes.
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
		return fmt.Errorf("bytea column holds %T", v)
	}
	return nil
}

func bytesCol(b *[]byte) sql.Scanner { return blob{b} }

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// bytesOrNil passes an empty byte slice as NULL.
func bytesOrNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// args accumulates the parameters of a statement built at run time, and
// renders their $n placeholders.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// list appends every value of vs and returns their placeholders, comma
// separated.
func list[T any](a *args, vs []T) string {
	out := make([]byte, 0, 4*len(vs))
	for i, v := range vs {
		if i > 0 {
			out = append(out, ", "...)
		}
		out = append(out, a.add(v)...)
	}
	return string(out)
}

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
