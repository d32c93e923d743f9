package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/queuestats"
)

// queueStatsSQL asks every cluster's figures (queuestats.SQL) in one
// statement, one round trip however many clusters: a lateral join runs the
// per-cluster branches, each an index range, for each id.
var queueStatsSQL = `SELECT c.id, x.kind, x.state, x.a, x.b
	FROM unnest($1::text[]) WITH ORDINALITY AS c(id, n)
	CROSS JOIN LATERAL (` + queuestats.SQL("c.id", "$2", "$3") + `) AS x
	ORDER BY c.n`

func (s *Store) JobQueueStats(ctx context.Context, p registry.JobQueueStatsParams) ([]registry.JobQueueStats, error) {
	ids := p.ClusterIDs
	if len(ids) == 0 {
		rows, err := s.query(ctx, "read clusters", "SELECT id FROM clusters ORDER BY lower(name), id")
		if err != nil {
			return nil, err
		}
		if ids, err = collect(s, rows, "read clusters", func(r pgx.Rows) (string, error) {
			var id string
			return id, r.Scan(&id)
		}); err != nil {
			return nil, err
		}
	}
	limit := max(p.Claims, 0)
	out := make([]registry.JobQueueStats, len(ids))
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		out[i].ClusterID = id
		at[id] = i
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.query(ctx, "read queue figures", queueStatsSQL, ids, queuestats.Millis(p.SubmittedAfter), int64(limit))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, kind, state string
		var a, b int64
		if err := rows.Scan(&id, &kind, &state, &a, &b); err != nil {
			return nil, s.wrap(err, "read queue figures")
		}
		queuestats.Add(&out[at[id]], kind, state, a, b)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "read queue figures")
	}
	for i := range out {
		queuestats.Finish(&out[i], limit)
	}
	return out, nil
}
