package sqlite

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
)

// searchIndexMax bounds the candidates a search word may have for the
// trigram index (job_search, migration 0023) to serve it. A rarer word is
// found through the index: its few jobs by rowid, then sorted. A commoner
// one is left to the scan in the list's order, which is quick for it: its
// matches are dense, so the first page comes from the first few thousand
// rows, where gathering and sorting all its candidates would not be.
const searchIndexMax = 2000

// indexedWords says which of p's search words the trigram index serves:
// those of 3 or more characters (a trigram needs them) with at most
// searchIndexMax candidate jobs, counting the jobs of the clusters whose
// name holds the word. Either way the answers are the same: the index only
// narrows the rows the word's LIKE checks (jobFilter).
func (s *Store) indexedWords(ctx context.Context, p registry.JobListParams) (map[string]bool, error) {
	var out map[string]bool
	for _, word := range strings.Fields(p.Search) {
		// FTS5's query parser ends a string at a NUL: such a word (and one
		// that is not UTF-8) is left to the scan, which finds it or not.
		if utf8.RuneCountInString(word) < 3 || !utf8.ValidString(word) || strings.ContainsRune(word, 0) || out[word] {
			continue
		}
		var n int
		err := s.queryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM job_search WHERE job_search MATCH ? LIMIT ?))
			+ (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE cluster_id IN (SELECT id FROM clusters WHERE name LIKE ? ESCAPE '\') LIMIT ?))`,
			matchPhrase(word), searchIndexMax+1, likePattern(word), searchIndexMax+1).Scan(&n)
		if err != nil {
			return nil, s.wrap(err, "look up a search word")
		}
		if n <= searchIndexMax {
			if out == nil {
				out = map[string]bool{}
			}
			out[word] = true
		}
	}
	return out, nil
}

// matchPhrase is an FTS5 query for word as a substring of any column: a
// phrase, in which a double quote is doubled.
func matchPhrase(word string) string {
	return `"` + strings.ReplaceAll(word, `"`, `""`) + `"`
}

// wordFilter is the condition a search word puts on a job: a substring (in
// any ASCII case) of its id, idempotency key, target namespace or name,
// error or kind, or of its cluster's name. The CLUSTER column shows a name:
// a word also matches the jobs of the clusters whose name holds it (a
// subquery, so that a word matching thousands of clusters binds one value,
// not one each). An indexed word first narrows the jobs to its candidates
// (the index's and its clusters'), which SQLite reads by rowid and by
// cluster.
func wordFilter(word string, indexed bool) (string, []any) {
	pat := likePattern(word)
	cond := `(id LIKE ? ESCAPE '\' OR idempotency_key LIKE ? ESCAPE '\' OR target_namespace LIKE ? ESCAPE '\' OR target_name LIKE ? ESCAPE '\'
			OR error LIKE ? ESCAPE '\' OR kind LIKE ? ESCAPE '\' OR cluster_id IN (SELECT id FROM clusters WHERE name LIKE ? ESCAPE '\'))`
	args := []any{pat, pat, pat, pat, pat, pat, pat}
	if !indexed {
		return cond, args
	}
	return `(jobs.rowid IN (SELECT rowid FROM job_search WHERE job_search MATCH ?) OR cluster_id IN (SELECT id FROM clusters WHERE name LIKE ? ESCAPE '\'))
		AND ` + cond, append([]any{matchPhrase(word), pat}, args...)
}
