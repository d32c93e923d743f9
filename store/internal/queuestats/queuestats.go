// Package queuestats is the query both stores answer registry.JobQueueStats
// with, and the reading of its rows.
package queuestats

import (
	"slices"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Row kinds of the query.
const (
	kindOldest = "oldest"
	kindEnded  = "ended"
	kindClaim  = "claim"
)

// SQL is one cluster's figures in one statement. cluster, after and limit
// are the dialect's expressions for the cluster id, the submit-time bound
// (Unix milliseconds) and the claims wanted per state. Every branch is a
// range of jobs_cluster_state (cluster_id, state, created_at, id): the
// oldest queued job is its first entry, the counts are covered by it, and
// each state's newest claims are read backwards, LIMIT rows at most (the
// index cannot order several states at once, hence a branch per state).
// Its rows are (kind, state, a, b); Add reads them.
func SQL(cluster, after, limit string) string {
	var b strings.Builder
	b.WriteString(`SELECT 'oldest' AS kind, '' AS state, created_at AS a, 0 AS b FROM (SELECT created_at FROM jobs
		WHERE cluster_id = ` + cluster + ` AND state = 'queued' ORDER BY created_at LIMIT 1) AS o`)
	b.WriteString(`
	UNION ALL SELECT 'ended', state, COUNT(*), 0 FROM jobs WHERE cluster_id = ` + cluster + ` AND state IN (` + quoted(registry.TerminalStates) + `)
		AND created_at >= ` + after + ` GROUP BY state`)
	for i, st := range registry.ClaimedStates {
		alias := "c" + string(rune('0'+i))
		// No "claimed_at IS NOT NULL" here: over jobs that lack one it would
		// read on through the whole state. Add skips them instead.
		b.WriteString(`
	UNION ALL SELECT 'claim', '', created_at, COALESCE(claimed_at, 0) FROM (SELECT created_at, claimed_at FROM jobs
		WHERE cluster_id = ` + cluster + ` AND state = '` + string(st) + `'
		ORDER BY created_at DESC LIMIT ` + limit + `) AS ` + alias)
	}
	return b.String()
}

func quoted(states []registry.JobState) string {
	q := make([]string, len(states))
	for i, s := range states {
		q[i] = "'" + string(s) + "'"
	}
	return strings.Join(q, ", ")
}

// Add reads one row of SQL into s.
func Add(s *registry.JobQueueStats, kind, state string, a, b int64) {
	switch kind {
	case kindOldest:
		s.OldestQueuedAt = time.UnixMilli(a).UTC()
	case kindEnded:
		if s.Ended == nil {
			s.Ended = map[registry.JobState]int64{}
		}
		s.Ended[registry.JobState(state)] += a
	case kindClaim:
		if b == 0 {
			return // never claimed
		}
		s.Claims = append(s.Claims, registry.JobClaimTimes{CreatedAt: time.UnixMilli(a).UTC(), ClaimedAt: time.UnixMilli(b).UTC()})
	}
}

// Finish orders a cluster's claims newest first and keeps the newest limit
// (the query returns up to limit per state).
func Finish(s *registry.JobQueueStats, limit int) {
	slices.SortFunc(s.Claims, func(x, y registry.JobClaimTimes) int { return y.CreatedAt.Compare(x.CreatedAt) })
	if len(s.Claims) > limit {
		s.Claims = s.Claims[:limit]
	}
	if s.Ended == nil {
		s.Ended = map[registry.JobState]int64{}
	}
}

// Millis is the submit-time bound as the query takes it: zero counts every
// job.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
