package postgres

import (
	"strings"
)

// likePattern escapes s for a LIKE ... ESCAPE '\' substring match.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// feedPage is the end of a query of a feed (events, audit), what both
// filter and page alike: one cluster or an organization's clusters, the
// ids above after and below before (0: no bound), newest first, at most
// limit (100 when 0).
func feedPage(a *args, cluster string, clusters []string, after, before int64, limit int) string {
	var q string
	if cluster != "" {
		q += " AND cluster_id = " + a.add(cluster)
	}
	if len(clusters) > 0 {
		q += " AND cluster_id IN (" + list(a, clusters) + ")"
	}
	if after > 0 {
		q += " AND id > " + a.add(after)
	}
	if before > 0 {
		q += " AND id < " + a.add(before)
	}
	return q + " ORDER BY id DESC LIMIT " + a.add(limitOr(limit, 100))
}
