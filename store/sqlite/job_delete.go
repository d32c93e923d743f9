package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// JobDelete is one transaction on SQLite's single writer: the conditional
// DELETE (its history goes with it, ON DELETE CASCADE), the count, the feed's
// delete and the audit entry, all or nothing. No trigger feeds job deletes:
// retention and a cluster's cascade delete jobs by the thousand, and nobody
// watches those one by one.
func (s *Store) JobDelete(ctx context.Context, p registry.JobDeleteParams) (*registry.Job, bool, error) {
	var out *registry.Job
	deleted := false
	err := s.write(ctx, func(t *txn) error {
		out, deleted = nil, false // a batch may run its requests twice (see commit)
		args := []any{p.ID}
		for _, st := range p.States {
			args = append(args, st)
		}
		j, err := scanJob(t.queryRow("DELETE FROM jobs WHERE id = ? AND state IN ("+placeholders(len(p.States))+") RETURNING "+jobCols, args...))
		if errors.Is(err, sql.ErrNoRows) {
			out, err = t.jobByID(p.ID) // nil when there is no such job
			return err
		}
		if err != nil {
			return t.s.wrap(err, "delete a job")
		}
		if _, err := t.exec("UPDATE job_counts SET n = n - 1 WHERE cluster_id = ? AND state = ?", j.ClusterID, j.State); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO changes (kind, entity_id, cluster_id, op, job_state, at) VALUES ('job', ?, ?, 'delete', ?, ?)`,
			j.ID, j.ClusterID, j.State, col.MS(p.Audit.At)); err != nil {
			return err
		}
		if err := t.audit(p.Audit); err != nil {
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
