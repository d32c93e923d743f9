package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// JobDelete is one transaction: the conditional DELETE (its history goes
// with it, ON DELETE CASCADE), the count's delta, the feed's delete and the
// audit entry commit together or not at all. No trigger feeds job deletes:
// retention and a cluster's cascade delete jobs by the thousand, and nobody
// watches those one by one.
func (s *Store) JobDelete(ctx context.Context, p registry.JobDeleteParams) (*registry.Job, bool, error) {
	var out *registry.Job
	deleted := false
	err := s.write(ctx, "delete a job", func(ctx context.Context, q db) error {
		out, deleted = nil, false // a group may run its requests again
		var a args
		// The job's claim goes with it (ON DELETE CASCADE); the statement's
		// snapshot still has it, for the job as it was.
		sql := "WITH d AS (DELETE FROM jobs WHERE id = " + a.add(p.ID) + " AND state IN (" + list(&a, states(p.States)) + ") RETURNING " +
			jobRowCols + ") SELECT " + jobCols("d") + withClaim("d")
		j, err := scanJob(q.QueryRow(ctx, sql, a...))
		if errors.Is(err, pgx.ErrNoRows) {
			out, err = jobByID(ctx, q, p.ID) // nil when there is no such job
			return err
		}
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, "INSERT INTO job_count_deltas (cluster_id, state, n) VALUES ($1, $2, -1)", j.ClusterID, string(j.State)); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, "SELECT tether_feed('job', $1, $2, 'delete', $3, $4)", j.ID, j.ClusterID, string(j.State), col.MS(p.Audit.At)); err != nil {
			return err
		}
		if err := insertAudit(ctx, q, p.Audit); err != nil {
			return err
		}
		out, deleted = j, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if out == nil {
		return nil, false, registry.Errorf(registry.CodeNotFound, "job %s does not exist", p.ID)
	}
	return out, deleted, nil
}
