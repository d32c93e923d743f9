package sqlite

import (
	"context"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

func (s *Store) EventsAppend(ctx context.Context, p registry.EventsAppendParams) (int, error) {
	stored := 0
	err := s.write(ctx, func(t *txn) error {
		stored = 0 // a batch may run its requests twice (see commit)
		if hb := p.Heartbeat; hb != nil {
			// The status first: its upsert, from the cluster's row, is also
			// the check that the cluster exists (one statement less for every
			// heartbeat).
			q := `INSERT INTO cluster_status (cluster_id, last_heartbeat_at, conditions, updated_at)
				SELECT id, ?, COALESCE(?, '[]'), ? FROM clusters WHERE id = ?
				ON CONFLICT (cluster_id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at,
					conditions = COALESCE(?, cluster_status.conditions), updated_at = excluded.updated_at`
			var conds any // replace the stored ones when given
			if hb.Conditions != nil {
				conds = col.JSONText(hb.Conditions)
			}
			res, err := t.exec(q, col.MS(hb.At), conds, col.MS(hb.At), p.ClusterID, conds)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", p.ClusterID)
			}
		} else {
			var one int
			if err := t.selectRow("SELECT 1 FROM clusters WHERE id = ?", p.ClusterID).Scan(&one); err != nil {
				return registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", p.ClusterID)
			}
		}
		for i := range p.Events {
			e := &p.Events[i]
			if e.EventKey != "" {
				// New, or last seen before the replay window: store it and
				// remember when. Seen inside the window: a duplicate.
				rows, err := t.query(`INSERT INTO event_keys (cluster_id, event_key, seen_at) VALUES (?, ?, ?)
					ON CONFLICT (cluster_id, event_key) DO UPDATE SET seen_at = excluded.seen_at WHERE event_keys.seen_at < ?
					RETURNING 1`, p.ClusterID, e.EventKey, col.MS(p.Now), col.MS(p.DedupeAfter))
				if err != nil {
					return err
				}
				fresh := rows.Next()
				rows.Close()
				if !fresh {
					continue
				}
			}
			hasFalse := 0
			if e.HasFalseCondition() {
				hasFalse = 1
			}
			var body any
			if len(e.Body) > 0 {
				body = []byte(e.Body)
			}
			res, err := t.exec(`INSERT INTO events (cluster_id, kind, event_key, resource_ref, conditions, message, has_false,
				timestamp, received_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				p.ClusterID, e.Kind, e.EventKey, col.JSONText(e.ResourceRef), col.JSONText(e.Conditions), e.Message, hasFalse,
				col.MS(e.Timestamp), col.MS(e.ReceivedAt), body)
			if err != nil {
				return err
			}
			e.ID, _ = res.LastInsertId()
			stored++
		}
		return nil
	})
	return stored, err
}

func (s *Store) EventList(ctx context.Context, p registry.EventListParams) ([]registry.Event, error) {
	q := `SELECT id, cluster_id, kind, event_key, resource_ref, conditions, message, timestamp, received_at, body FROM events WHERE 1 = 1`
	var args []any
	if len(p.Kinds) > 0 {
		q += " AND kind IN (" + placeholders(len(p.Kinds)) + ")"
		for _, k := range p.Kinds {
			args = append(args, k)
		}
	}
	if p.FalseOnly {
		q += " AND has_false = 1"
	}
	q, args = feedPage(q, args, p.ClusterID, p.ClusterIDs, p.AfterID, p.BeforeID, p.Limit)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.Event{}
	for rows.Next() {
		var e registry.Event
		var body []byte
		if err := rows.Scan(&e.ID, &e.ClusterID, &e.Kind, &e.EventKey, col.JSON(&e.ResourceRef), col.JSON(&e.Conditions), &e.Message,
			col.Time(&e.Timestamp), col.Time(&e.ReceivedAt), col.Bytes(&body)); err != nil {
			return nil, s.wrap(err, "read events")
		}
		e.Body = body
		out = append(out, e)
	}
	return out, s.wrap(rows.Err(), "read events")
}

func (s *Store) EventsPrune(ctx context.Context, p registry.EventsPruneParams) (int, error) {
	var deleted int64
	err := s.write(ctx, func(t *txn) error {
		deleted = 0
		res, err := t.exec("DELETE FROM events WHERE received_at < ?", col.MS(p.OlderThan))
		if err != nil {
			return err
		}
		deleted, _ = res.RowsAffected()
		if p.KeepPerCluster > 0 {
			// For each cluster over its cap, delete below the id of its
			// KeepPerCluster-th newest event.
			res, err = t.exec(`DELETE FROM events WHERE id IN (
				SELECT e.id FROM events e JOIN (
					SELECT cluster_id, (SELECT id FROM events x WHERE x.cluster_id = c.cluster_id ORDER BY id DESC LIMIT 1 OFFSET ?) AS floor
					FROM (SELECT cluster_id FROM events GROUP BY cluster_id HAVING COUNT(*) > ?) c
				) f ON e.cluster_id = f.cluster_id AND e.id <= f.floor)`, p.KeepPerCluster, p.KeepPerCluster)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			deleted += n
		}
		_, err = t.exec("DELETE FROM event_keys WHERE seen_at < ?", col.MS(p.KeysBefore))
		return err
	})
	return int(deleted), err
}

// --- change feed ---

func (s *Store) ChangesSince(ctx context.Context, after int64, limit int) ([]registry.Change, error) {
	rows, err := s.feedQuery(ctx, `SELECT seq, kind, entity_id, cluster_id, op, job_state, at FROM changes WHERE seq > ? ORDER BY seq LIMIT ?`,
		after, limitOr(limit, 1000))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.Change{}
	for rows.Next() {
		var c registry.Change
		if err := rows.Scan(&c.Seq, &c.Kind, &c.ID, &c.ClusterID, &c.Op, &c.JobState, col.Time(&c.At)); err != nil {
			return nil, s.wrap(err, "read the change feed")
		}
		out = append(out, c)
	}
	return out, s.wrap(rows.Err(), "read the change feed")
}

func (s *Store) ChangesLatest(ctx context.Context) (latest, oldest int64, err error) {
	// Two subqueries: SQLite answers a lone MIN or MAX of the key from the
	// b-tree's ends, but scans the whole feed for both in one SELECT.
	err = s.queryRow(ctx, `SELECT COALESCE((SELECT MAX(seq) FROM changes), 0), COALESCE((SELECT MIN(seq) FROM changes), 0)`).Scan(&latest, &oldest)
	if err != nil {
		return 0, 0, s.wrap(err, "read the change feed")
	}
	return latest, oldest, nil
}

func (s *Store) ChangesPrune(ctx context.Context, p registry.ChangesPruneParams) (int, error) {
	var n int64
	err := s.write(ctx, func(t *txn) error {
		// Keep at least the newest entry: the next seq is the largest plus
		// one, so deleting it would hand its number out again.
		// Only a prefix: at is not monotonic in seq (a credential's change
		// carries the time it names), and watchers detect pruning by the
		// feed's first seq, so a hole in the middle would go unnoticed.
		res, err := t.exec(`DELETE FROM changes WHERE seq < COALESCE((SELECT MIN(seq) FROM changes WHERE at >= ?), (SELECT MAX(seq) FROM changes) + 1)
			AND seq <= (SELECT COALESCE(MAX(seq), 0) FROM changes) - ?`,
			col.MS(p.Before), max(p.Keep, 1))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
