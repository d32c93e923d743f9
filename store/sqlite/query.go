package sqlite

import (
	"strings"
)

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// likePattern escapes s for a LIKE ... ESCAPE '\' substring match.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

type scanner interface{ Scan(...any) error }
