package postgres

import (
	"fmt"
	"time"
)

// msPtr is col.MS for array parameters: nil for the zero time.
func msPtr(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
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
