package sqlite

import (
	"context"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/queuestats"
)

// queueStatsSQL is one cluster's figures (queuestats.SQL); reads are in
// process, so a statement per cluster costs no round trip.
var queueStatsSQL = queuestats.SQL("?1", "?2", "?3")

func (s *Store) JobQueueStats(ctx context.Context, p registry.JobQueueStatsParams) ([]registry.JobQueueStats, error) {
	ids := p.ClusterIDs
	if len(ids) == 0 {
		var err error
		if ids, err = s.clusterIDs(ctx); err != nil {
			return nil, err
		}
	}
	limit := max(p.Claims, 0)
	out := make([]registry.JobQueueStats, 0, len(ids))
	for _, id := range ids {
		st := registry.JobQueueStats{ClusterID: id}
		rows, err := s.query(ctx, queueStatsSQL, id, queuestats.Millis(p.SubmittedAfter), limit)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var kind, state string
			var a, b int64
			if err := rows.Scan(&kind, &state, &a, &b); err != nil {
				rows.Close()
				return nil, s.wrap(err, "read queue figures")
			}
			queuestats.Add(&st, kind, state, a, b)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, s.wrap(err, "read queue figures")
		}
		queuestats.Finish(&st, limit)
		out = append(out, st)
	}
	return out, nil
}

func (s *Store) clusterIDs(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, "SELECT id FROM clusters ORDER BY name COLLATE NOCASE, id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.wrap(err, "read clusters")
		}
		ids = append(ids, id)
	}
	return ids, s.wrap(rows.Err(), "read clusters")
}
