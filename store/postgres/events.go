package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// EventsAppend takes its locks in one order: the cluster (key share), then
// the batch's event keys, all in one statement and in key order, then the
// status row (the heartbeat); the events come last.
//
// A batch without event keys (a heartbeat, every agent's every 30 s) is one
// statement sent through the writer's pipeline (appendEventsSQL); one with
// keys, which must read which keys are fresh first, runs statement by
// statement (appendEvents).
func (s *Store) EventsAppend(ctx context.Context, p registry.EventsAppendParams) (int, error) {
	stored := 0
	slow := func(ctx context.Context, q db) error {
		var err error
		stored, err = appendEvents(ctx, q, p)
		return err
	}
	if sql, a, ok := appendEventsSQL(p); ok {
		err := s.writePiped(ctx, "store events", &piped{sql: sql, args: a, read: func(rows pgx.Rows, err error) error {
			stored, err = readAppendedEvents(rows, err, p)
			return err
		}}, slow)
		return stored, err
	}
	err := s.write(ctx, "store events", slow)
	return stored, err
}

// eventColumns are the columns of the events a batch inserts, as arrays, in
// the batch's order (idx: the indexes of the events to insert).
func eventColumns(p registry.EventsAppendParams, idx []int) []any {
	n := len(idx)
	kind, key, ref, conds, msg := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	hasFalse := make([]bool, n)
	stamp := make([]*int64, n)
	received := make([]*int64, n)
	body := make([][]byte, n)
	for k, i := range idx {
		e := &p.Events[i]
		kind[k], key[k], ref[k], conds[k], msg[k] = e.Kind, e.EventKey, col.JSONText(e.ResourceRef), col.JSONText(e.Conditions), e.Message
		hasFalse[k], stamp[k], received[k] = e.HasFalseCondition(), msPtr(e.Timestamp), msPtr(e.ReceivedAt)
		if len(e.Body) > 0 {
			body[k] = []byte(e.Body)
		}
	}
	return []any{kind, key, ref, conds, msg, hasFalse, stamp, received, body}
}

// insertEventsFrom inserts the events of eventColumns' arrays ($2 to $10)
// for each cluster id of from (a table or CTE with an id column), in the
// arrays' order (their ids in that order too), returning their ids.
func insertEventsFrom(from string) string {
	return `INSERT INTO events (cluster_id, kind, event_key, resource_ref, conditions, message, has_false,
				timestamp, received_at, body)
			SELECT ` + from + `.id, kind, key, ref, conds, msg, has_false, stamp, received, body
			FROM ` + from + `, unnest($2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[], $7::BOOLEAN[], $8::BIGINT[], $9::BIGINT[], $10::BYTEA[])
				WITH ORDINALITY AS e (kind, key, ref, conds, msg, has_false, stamp, received, body, ord)
			ORDER BY ord
			RETURNING id`
}

// appendEventsSQL is EventsAppend as one statement, for a batch without
// event keys (ok false otherwise): the cluster's key-share lock, the status
// upsert and the events' insert, each from the locked cluster, so that a
// deleted cluster's batch writes nothing. Its one row says whether the
// cluster exists and holds the events' ids.
func appendEventsSQL(p registry.EventsAppendParams) (string, []any, bool) {
	idx := make([]int, len(p.Events))
	for i, e := range p.Events {
		if e.EventKey != "" {
			return "", nil, false
		}
		idx[i] = i
	}
	a := append([]any{p.ClusterID}, eventColumns(p, idx)...)
	status := ""
	if hb := p.Heartbeat; hb != nil {
		// Conditions replace the stored ones when given.
		var conds *string
		if hb.Conditions != nil {
			c := col.JSONText(hb.Conditions)
			conds = &c
		}
		a = append(a, col.MS(hb.At), conds)
		status = `s AS (INSERT INTO cluster_status (cluster_id, last_heartbeat_at, conditions, updated_at)
				SELECT id, $11::BIGINT, COALESCE($12::TEXT, '[]'), $11::BIGINT FROM c
				ON CONFLICT (cluster_id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at,
					conditions = COALESCE($12::TEXT, cluster_status.conditions), updated_at = excluded.updated_at),
			`
	}
	return `WITH c AS (SELECT id FROM clusters WHERE id = $1 FOR KEY SHARE),
			` + status + `e AS (` + insertEventsFrom("c") + `)
		SELECT EXISTS (SELECT 1 FROM c), ARRAY(SELECT id FROM e ORDER BY id)`, a, true
}

// readAppendedEvents reads appendEventsSQL's row into p's events' ids.
func readAppendedEvents(rows pgx.Rows, err error, p registry.EventsAppendParams) (int, error) {
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var found bool
	var ids []int64
	if rows.Next() {
		err = rows.Scan(&found, &ids)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, errNoCluster(p.ClusterID)
	}
	for i := range p.Events {
		if i < len(ids) {
			p.Events[i].ID = ids[i]
		}
	}
	return len(ids), nil
}

// appendEvents is EventsAppend statement by statement, in a transaction.
func appendEvents(ctx context.Context, q db, p registry.EventsAppendParams) (int, error) {
	if err := lockCluster(ctx, q, p.ClusterID); err != nil {
		return 0, err
	}
	// New, or last seen before the replay window: store it and remember
	// when. Seen inside the window: a duplicate.
	var keys []string
	for _, e := range p.Events {
		if e.EventKey != "" {
			keys = append(keys, e.EventKey)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	fresh := map[string]bool{}
	if len(keys) > 0 {
		rows, err := q.Query(ctx, `INSERT INTO event_keys (cluster_id, event_key, seen_at)
			SELECT $1::TEXT, k, $2::BIGINT FROM unnest($3::TEXT[]) AS k ORDER BY k
			ON CONFLICT (cluster_id, event_key) DO UPDATE SET seen_at = excluded.seen_at WHERE event_keys.seen_at < $4
			RETURNING event_key`, p.ClusterID, col.MS(p.Now), keys, col.MS(p.DedupeAfter))
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return 0, err
			}
			fresh[k] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
	}
	if hb := p.Heartbeat; hb != nil {
		q1 := `INSERT INTO cluster_status (cluster_id, last_heartbeat_at, updated_at) VALUES ($1, $2, $2)
			ON CONFLICT (cluster_id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, updated_at = excluded.updated_at`
		args := []any{p.ClusterID, col.MS(hb.At)}
		if hb.Conditions != nil {
			q1 = `INSERT INTO cluster_status (cluster_id, last_heartbeat_at, conditions, updated_at) VALUES ($1, $2, $3, $2)
				ON CONFLICT (cluster_id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at,
				conditions = excluded.conditions, updated_at = excluded.updated_at`
			args = append(args, col.JSONText(hb.Conditions))
		}
		if _, err := q.Exec(ctx, q1, args...); err != nil {
			return 0, err
		}
	}
	// The events to store, in order: a key's first sighting in the batch
	// if it is fresh; a repeat within the batch is a duplicate (its key
	// was just seen), as it is in the SQLite store.
	var idx []int
	seen := map[string]bool{}
	for i, e := range p.Events {
		if e.EventKey != "" {
			first := !seen[e.EventKey]
			seen[e.EventKey] = true
			if !fresh[e.EventKey] || (!first && !p.Now.Before(p.DedupeAfter)) {
				continue
			}
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return 0, nil
	}
	// Rows are inserted, and take their ids, in the order of ord.
	rows, err := q.Query(ctx, "WITH c AS (SELECT $1::TEXT AS id) "+insertEventsFrom("c"), append([]any{p.ClusterID}, eventColumns(p, idx)...)...)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	slices.Sort(ids)
	for k, i := range idx {
		if k < len(ids) {
			p.Events[i].ID = ids[k]
		}
	}
	return len(ids), nil
}

func (s *Store) EventList(ctx context.Context, p registry.EventListParams) ([]registry.Event, error) {
	var a args
	q := `SELECT id, cluster_id, kind, event_key, resource_ref, conditions, message, timestamp, received_at, body FROM events WHERE true`
	if len(p.Kinds) > 0 {
		q += " AND kind IN (" + list(&a, p.Kinds) + ")"
	}
	if p.FalseOnly {
		q += " AND has_false"
	}
	q += feedPage(&a, p.ClusterID, p.ClusterIDs, p.AfterID, p.BeforeID, p.Limit)
	rows, err := s.query(ctx, "read events", q, a...)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read events", func(r pgx.Rows) (registry.Event, error) {
		var e registry.Event
		var body []byte
		err := r.Scan(&e.ID, &e.ClusterID, &e.Kind, &e.EventKey, col.JSON(&e.ResourceRef), col.JSON(&e.Conditions), &e.Message,
			col.Time(&e.Timestamp), col.Time(&e.ReceivedAt), col.Bytes(&body))
		e.Body = body
		return e, err
	})
}

func (s *Store) EventsPrune(ctx context.Context, p registry.EventsPruneParams) (int, error) {
	var deleted int64
	err := s.write(ctx, "prune events", func(ctx context.Context, q db) error {
		tag, err := q.Exec(ctx, "DELETE FROM events WHERE received_at < $1", col.MS(p.OlderThan))
		if err != nil {
			return err
		}
		deleted = tag.RowsAffected()
		if p.KeepPerCluster > 0 {
			// For each cluster over its cap, delete up to the id of its
			// KeepPerCluster+1-th newest event.
			tag, err = q.Exec(ctx, `DELETE FROM events e USING (
					SELECT c.cluster_id, (SELECT x.id FROM events x WHERE x.cluster_id = c.cluster_id ORDER BY x.id DESC LIMIT 1 OFFSET $1) AS floor
					FROM (SELECT cluster_id FROM events GROUP BY cluster_id HAVING COUNT(*) > $1) c
				) f WHERE e.cluster_id = f.cluster_id AND e.id <= f.floor`, p.KeepPerCluster)
			if err != nil {
				return err
			}
			deleted += tag.RowsAffected()
		}
		_, err = q.Exec(ctx, "DELETE FROM event_keys WHERE seen_at < $1", col.MS(p.KeysBefore))
		return err
	})
	return int(deleted), err
}

// --- change feed ---

func (s *Store) ChangesSince(ctx context.Context, after int64, limit int) ([]registry.Change, error) {
	rows, err := s.query(ctx, "read the change feed", `SELECT seq, kind, entity_id, cluster_id, op, job_state, at
		FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limitOr(limit, 1000))
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read the change feed", func(r pgx.Rows) (registry.Change, error) {
		var c registry.Change
		err := r.Scan(&c.Seq, &c.Kind, &c.ID, &c.ClusterID, &c.Op, &c.JobState, col.Time(&c.At))
		return c, err
	})
}

// ChangesLatest waits for the sequencer to position the feed rows committed
// before the call (see sequenced), then reads the last position given: every
// change committed before the call is at or before it, and every change at
// or before it committed before ChangesLatest returned, so a snapshot read
// afterwards holds it. The oldest position still readable is the one after
// the highest seq ever pruned.
func (s *Store) ChangesLatest(ctx context.Context) (latest, oldest int64, err error) {
	if s.closed.Load() {
		return 0, 0, errClosed
	}
	// If the round fails (a read-only database, say), committed rows stay
	// without a position: they come after latest, as changes, although the
	// caller's snapshot may already hold them. A watcher sees them twice;
	// it misses none.
	s.sequenced(ctx)
	var through int64
	err = s.queryRow(ctx, `SELECT (SELECT last FROM feed_position), (SELECT through FROM changes_pruned)`).Scan(&latest, &through)
	if err != nil {
		return 0, 0, s.wrap(err, "read the change feed")
	}
	return max(latest, through), through + 1, nil
}

// ChangesPrune deletes a prefix of old entries (at is not monotonic in seq:
// a credential's change carries the time it names, so "older than" alone
// would cut holes) and records the highest seq it deleted (see
// changes_pruned), in one statement, under the feed lock, so that no round
// of the sequencer runs meanwhile. It first waits for a round (see
// sequenced), so that what committed before the call has its position and
// can be pruned; rows without a position are never pruned.
func (s *Store) ChangesPrune(ctx context.Context, p registry.ChangesPruneParams) (int, error) {
	if s.closed.Load() {
		return 0, errClosed
	}
	s.sequenced(ctx)
	var n int
	err := s.stmt(ctx, "prune the change feed", func(ctx context.Context, q db) error {
		if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", feedLockKey); err != nil {
			return err
		}
		return q.QueryRow(ctx, `WITH d AS (
				DELETE FROM changes WHERE seq < COALESCE((SELECT MIN(seq) FROM changes WHERE at >= $1), (SELECT MAX(seq) FROM changes) + 1)
					AND seq <= (SELECT COALESCE(MAX(seq), 0) FROM changes) - $2
				RETURNING seq),
			m AS (SELECT MAX(seq) AS through, count(*) AS n FROM d),
			u AS (UPDATE changes_pruned SET through = GREATEST(changes_pruned.through, m.through) FROM m WHERE m.through IS NOT NULL)
			SELECT n FROM m`, col.MS(p.Before), max(p.Keep, 0)).Scan(&n)
	})
	return n, err
}
