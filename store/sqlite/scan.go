package sqlite

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

// msTime scans Unix milliseconds (or NULL, as the zero time).
type msTime struct{ t *time.Time }

func (m msTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*m.t = time.Time{}
	case int64:
		*m.t = time.UnixMilli(x).UTC()
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

// blob scans a nullable BLOB or text column into a copy of its bytes.
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
		return fmt.Errorf("blob column holds %T", v)
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
