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

// feedPage ends a query of a feed (events, audit) with what both filter
// and page alike: one cluster or an organization's clusters, the ids above
// after and below before (0: no bound), newest first, at most limit (100
// when 0).
func feedPage(q string, args []any, cluster string, clusters []string, after, before int64, limit int) (string, []any) {
	if cluster != "" {
		q += " AND cluster_id = ?"
		args = append(args, cluster)
	}
	if len(clusters) > 0 {
		q += " AND cluster_id IN (" + placeholders(len(clusters)) + ")"
		for _, id := range clusters {
			args = append(args, id)
		}
	}
	if after > 0 {
		q += " AND id > ?"
		args = append(args, after)
	}
	if before > 0 {
		q += " AND id < ?"
		args = append(args, before)
	}
	q += " ORDER BY id DESC LIMIT ?"
	return q, append(args, limitOr(limit, 100))
}
