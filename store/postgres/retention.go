package postgres

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// JobsPrune deletes one batch found through jobs_state (state, created_at):
// a job finished after it was created. Writes of the hot path run beside it
// (see writer.go), so it locks what it picked, skipping jobs being written,
// and checks the conditions again on the rows it locked: a job an admin just
// requeued is not deleted.
func (s *Store) JobsPrune(ctx context.Context, p registry.JobsPruneParams) (int, error) {
	var n int
	err := s.write(ctx, "delete finished jobs past their retention", func(ctx context.Context, q db) error {
		return q.QueryRow(ctx, `WITH d AS (DELETE FROM jobs WHERE id IN (
				SELECT id FROM jobs WHERE state = $1 AND created_at < $2 AND finished_at < $2 ORDER BY created_at LIMIT $3
				FOR UPDATE SKIP LOCKED)
				AND state = $1 AND finished_at < $2
				RETURNING cluster_id),
			c AS (SELECT cluster_id, count(*) AS k FROM d GROUP BY cluster_id),
			u AS (INSERT INTO job_count_deltas (cluster_id, state, n) SELECT cluster_id, $1, -k FROM c)
			SELECT count(*) FROM d`, string(p.State), col.MS(p.FinishedBefore), p.Limit).Scan(&n)
	})
	return n, err
}

func (s *Store) AuditPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.stmt(ctx, "delete audit entries past their retention", func(ctx context.Context, q db) error {
		tag, err := q.Exec(ctx, "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 ORDER BY id LIMIT $2)", col.MS(before), limit)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// WebhookDeliveriesPrune deletes ended deliveries only; nothing changes a
// delivery once it ended, so there is nothing to lock against.
func (s *Store) WebhookDeliveriesPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.stmt(ctx, "delete webhook deliveries past their retention", func(ctx context.Context, q db) error {
		tag, err := q.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
			WHERE state <> 'pending' AND finished_at < $1 ORDER BY finished_at LIMIT $2)`, col.MS(before), limit)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// IdempotencyKeysPrune skips the keys a submission is taking over (it locks
// them) and checks the expiry again on the rows it locked: a key given to a
// new job meanwhile stays.
func (s *Store) IdempotencyKeysPrune(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := s.stmt(ctx, "delete expired idempotency keys", func(ctx context.Context, q db) error {
		tag, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE (cluster_id, key) IN (SELECT cluster_id, key FROM idempotency_keys
			WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) AND expires_at <= $1`, col.MS(now), limit)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// SearchIndexMerge has nothing to do: PostgreSQL's pg_trgm index (0023) is
// a GIN index, whose pending list autovacuum folds in.
func (s *Store) SearchIndexMerge(ctx context.Context, pages int) (bool, error) { return false, nil }
