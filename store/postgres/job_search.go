package postgres

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
)

// searchText is the text jobs_search (migration 0023) indexes: a job's
// searched columns joined by spaces. A search word holds no space, so it is
// a substring of searchText exactly when it is one of a column's; the probe
// names the expression exactly so that the index serves it.
const searchText = `(id || ' ' || idempotency_key || ' ' || target_namespace || ' ' || target_name || ' ' || error || ' ' || kind)`

// searchProbe finds up to $2 candidate jobs for the ILIKE pattern $1: the
// jobs whose searchText holds it, then the jobs of the clusters whose name
// does. Without an order, the planner reads a rare word's jobs through
// jobs_search, and a common word's by a scan that stops at the limit.
const searchProbe = `SELECT id FROM jobs WHERE ` + searchText + ` ILIKE $1 ESCAPE '\'
	UNION ALL SELECT id FROM jobs WHERE cluster_id IN (SELECT id FROM clusters WHERE name ILIKE $1 ESCAPE '\') LIMIT $2`

// searchIndexMax bounds the candidates a search word may have for the
// trigram index to serve it (as on SQLite, see store/sqlite/job_search.go):
// a rarer word's jobs are read by id and sorted; a commoner one is left to
// the scan newest first, which finds its dense matches within a few
// thousand rows.
const searchIndexMax = 2000

// searchCandidates returns, for each of p's search words the trigram index
// serves, the ids of the jobs that may hold it: those whose searchText does
// and those of the clusters whose name does. A word is served when it has 3
// or more characters (a trigram needs them) and at most searchIndexMax
// candidates. The ids only narrow the rows the word's ILIKE checks
// (jobFilter), so the answers are the same either way.
//
// The planner, asked for a page newest first, estimates a rare word's
// ILIKE at thousands of rows and walks jobs_created backwards through every
// job; asked for the candidates alone (no order) it reads the index, and
// the page is then read from a few ids by primary key.
func (s *Store) searchCandidates(ctx context.Context, p registry.JobListParams) (map[string][]string, error) {
	if !s.searchIndex {
		return nil, nil
	}
	var out map[string][]string
	for _, word := range strings.Fields(p.Search) {
		// A word that is not UTF-8 or holds a NUL is no text PostgreSQL
		// takes: it is left to jobFilter, which reports it.
		if utf8.RuneCountInString(word) < 3 || !utf8.ValidString(word) || strings.ContainsRune(word, 0) {
			continue
		}
		if _, ok := out[word]; ok {
			continue
		}
		rows, err := s.query(ctx, "look up a search word", searchProbe, likePattern(word), searchIndexMax+1)
		if err != nil {
			return nil, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, s.wrap(err, "look up a search word")
		}
		// UNION ALL stops at the limit; a job found both ways counts
		// twice, which only errs towards the scan.
		if len(ids) <= searchIndexMax {
			if out == nil {
				out = map[string][]string{}
			}
			out[word] = ids
		}
	}
	return out, nil
}
