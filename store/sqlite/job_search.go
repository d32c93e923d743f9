package sqlite

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
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

// --- filling the index ---
//
// A job joins the search index in the transaction that inserts it, but not
// by a trigger on each insert (as migration 0023 had it; 0029 dropped it):
// FTS5 writes the entries it holds as a new segment of the index at every
// later statement of the transaction (each statement's savepoint flushes
// them), so a batch of the writer that held K submissions among the agents'
// writes wrote K one-job segments, and the index then merged them: 13 % of
// the writer's time in the agents' lifecycle, and pages to the WAL at each
// commit. The writer now inserts a batch's new jobs into the index in one
// statement just before the batch commits: one segment a batch. Readers see
// what they saw before: a job is searchable from the commit that inserts
// it, and nothing reads the index inside the writer's transaction.
//
// A job the batch inserted and a later request of the same batch updates
// joins the index first (indexSearchOf): the update trigger of 0023 deletes
// and inserts its entry when a searched column changes, and must find it
// there. One the batch deletes is simply not found when the batch's jobs
// join the index (and the delete trigger's delete of an entry the index
// does not hold changes nothing).

// queueSearch notes a job the running request inserted.
func (t *txn) queueSearch(id string) { t.searchNew = append(t.searchNew, id) }

// keepSearch ends a request: the jobs it inserted join the batch's queue if
// it succeeded, and are forgotten if it failed (its writes were undone).
func (t *txn) keepSearch(ok bool) {
	if ok {
		t.searchQueue = append(t.searchQueue, t.searchNew...)
	}
	t.searchNew = nil
}

// indexSearch inserts the queued jobs into the search index.
func (t *txn) indexSearch() error {
	if len(t.searchQueue)+len(t.searchNew) == 0 {
		return nil
	}
	ids := append(append([]string(nil), t.searchQueue...), t.searchNew...)
	_, err := t.exec(`INSERT INTO job_search (rowid, id, idempotency_key, target_namespace, target_name, error, kind)
		SELECT rowid, id, idempotency_key, target_namespace, target_name, error, kind FROM jobs
		WHERE id IN (SELECT value FROM json_each(?))`, col.JSONText(ids))
	if err != nil {
		return err
	}
	t.searchQueue, t.searchNew = t.searchQueue[:0], nil
	return nil
}

// indexSearchOf runs indexSearch first when one of ids (nil: any job) is
// still queued: a statement is about to change or delete it.
func (t *txn) indexSearchOf(ids ...string) error {
	for _, q := range [][]string{t.searchQueue, t.searchNew} {
		for _, id := range q {
			if ids == nil || slices.Contains(ids, id) {
				return t.indexSearch()
			}
		}
	}
	return nil
}

// --- merging the index ---
//
// Each batch that inserts jobs adds a segment to the index. FTS5 merged
// them as they came (automerge, 4 segments a level), inside the batch that
// wrote the fourth: over a million jobs that merging was about a sixth of the
// process's CPU in the agents' lifecycle. Migration 0031 turned it off;
// registry.SearchMerger merges in the background instead, a bounded step at
// a time. Should it fall behind, FTS5 still merges a level once it holds 16
// segments (crisismerge), in the batch that wrote the 16th: the index never
// grows past a few dozen segments whatever the merger does.

// SearchIndexMerge runs FTS5's merge command as a write request of its own
// (the writer may commit it in one batch with others): it writes about
// pages leaf pages of merged segments, from a level of 4 or more segments
// (usermerge), and does nothing when no level holds that many. It stops
// only between two trigrams' entries, and a trigram of a million jobs has
// an entry of megabytes: a step may write more. FTS5 reports no figure for
// it; the command changed 2 or more rows when it did some work (the FTS5
// documentation's own test).
func (s *Store) SearchIndexMerge(ctx context.Context, pages int) (bool, error) {
	var merged bool
	err := s.write(ctx, func(t *txn) error {
		var before, after int64
		if err := t.selectRow(`SELECT total_changes()`).Scan(&before); err != nil {
			return s.wrap(err, "count changes")
		}
		if _, err := t.exec(`INSERT INTO job_search (job_search, rank) VALUES ('merge', ?)`, max(1, pages)); err != nil {
			return err
		}
		if err := t.selectRow(`SELECT total_changes()`).Scan(&after); err != nil {
			return s.wrap(err, "count changes")
		}
		merged = after-before >= 2
		return nil
	})
	return merged, err
}
