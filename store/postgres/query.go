package postgres

import (
	"strings"
)

// likePattern escapes s for a LIKE ... ESCAPE '\' substring match.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}
