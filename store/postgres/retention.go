package postgres

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// JobsPrune takes the feed lock first, like every writer of job_counts (see
// the schema's comment on lock order), then deletes one batch found through
// jobs_state (state, created_at): a job finished after it was created.
func (s *Store) JobsPrune(ctx context.Context, p registry.JobsPruneParams) (int, error) {
	var n int
	err := s.write(ctx, "delete finished jobs past their retention", func(ctx context.Context, q db) error {
		if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock(8387237872774833765)"); err != nil {
			return err
		}
		return q.QueryRow(ctx, `WITH d AS (DELETE FROM jobs WHERE id IN (
				SELECT id FROM jobs WHERE state = $1 AND created_at < $2 AND finished_at < $2 ORDER BY created_at LIMIT $3)
				RETURNING cluster_id),
			c AS (SELECT cluster_id, count(*) AS k FROM d GROUP BY cluster_id),
			u AS (UPDATE job_counts SET n = job_counts.n - c.k FROM c WHERE job_counts.cluster_id = c.cluster_id AND job_counts.state = $1)
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
