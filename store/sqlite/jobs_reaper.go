package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// The reaper's writes: leases reclaimed and queued jobs expired, in batches.

func (s *Store) JobsReclaim(ctx context.Context, p registry.JobsReclaimParams) (registry.ReclaimCounts, error) {
	var counts registry.ReclaimCounts
	err := s.write(ctx, func(t *txn) error {
		counts = registry.ReclaimCounts{}
		now := col.MS(p.Now)
		// Pick the batch once, oldest lease first, and split it by the
		// cluster's policy: below max attempts it goes back to queued as a
		// new attempt, else it fails with lease_expired. (Picking each kind
		// with its own ordered LIMIT would scan the whole backlog of the rare
		// kind on every batch.) Leases are in job_claim, oldest first by its
		// index; only in_progress jobs have one.
		clusterOf := map[string]string{}
		retry, fail, err := t.pickByCluster(clusterOf, `SELECT j.id, j.attempt < c.max_attempts, j.cluster_id
			FROM job_claim l INDEXED BY job_claim_lease JOIN jobs j ON j.id = l.job_id JOIN clusters c ON c.id = j.cluster_id
			WHERE l.lease_expires_at < ? AND j.state = 'in_progress'
			ORDER BY l.lease_expires_at LIMIT ?`, now, p.Limit)
		if err != nil {
			return err
		}
		// The writer is the only one: every picked job is updated below.
		for _, group := range []struct {
			ids   []string
			retry bool
		}{{retry, true}, {fail, false}} {
			for _, id := range group.ids {
				if counts.ByCluster == nil {
					counts.ByCluster = map[string]registry.ClusterReclaims{}
				}
				c := counts.ByCluster[clusterOf[id]]
				if group.retry {
					c.Requeued++
				} else {
					c.Failed++
				}
				counts.ByCluster[clusterOf[id]] = c
			}
		}
		// Back in the queue, visible at once (as a requeue makes it): the
		// window its last poll hid it for is no reason to wait.
		if counts.Requeued, err = t.endBatch(retry, `state = 'queued', attempt = attempt + 1,
				claim_id = NULL, claimed_at = NULL, claimed_by = NULL, lease_seconds = 0,
				last_activity_at = NULL, phase = '', visible_after = NULL, updated_at = ?`, []any{now},
			registry.HistoryReclaimed, `'lease expired: back in the queue as attempt ' || attempt`, p.Now, p.Actor); err != nil {
			return err
		}
		if counts.Failed, err = t.endBatch(fail, `state = 'failed', error = 'lease_expired', finished_at = ?,
				updated_at = ?`, []any{now, now},
			registry.HistoryFailed, `'lease expired on the last attempt: failed (lease_expired)'`, p.Now, p.Actor); err != nil {
			return err
		}
		if counts.Requeued+counts.Failed == 0 {
			return nil
		}
		// Their leases ended with their claims.
		if _, err := t.exec(`DELETE FROM job_claim WHERE job_id IN (SELECT value FROM json_each(?))`,
			col.JSONText(append(retry, fail...))); err != nil {
			return err
		}
		// One audit entry per job (who lost which job, and what became of
		// it), written in one statement per group, then the batch's sum.
		if err := t.auditEach(retry, registry.AuditJobReclaim, `'lease expired: back in the queue as attempt ' || attempt`, p.Now, p.Actor); err != nil {
			return err
		}
		if err := t.auditEach(fail, registry.AuditJobReclaim, `'lease expired on the last attempt: failed (lease_expired)'`, p.Now, p.Actor); err != nil {
			return err
		}
		return t.audit(registry.AuditEntry{At: p.Now, Actor: p.Actor, Action: registry.AuditJobReclaim, TargetKind: "jobs",
			Reason: fmt.Sprintf("leases expired: %d jobs back in the queue, %d failed on their last attempt", counts.Requeued, counts.Failed)})
	})
	return counts, err
}

// JobsExpire ends queued jobs past their expiry, a batch at a time.
func (s *Store) JobsExpire(ctx context.Context, p registry.JobsExpireParams) (int, error) {
	n := 0
	err := s.write(ctx, func(t *txn) error {
		now := col.MS(p.Now)
		due, _, err := t.pick(`SELECT id, 1 FROM jobs INDEXED BY jobs_expiry
			WHERE state = 'queued' AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?`, now, p.Limit)
		if err != nil {
			return err
		}
		if n, err = t.endBatch(due, `state = 'expired', error = 'expired', finished_at = ?, updated_at = ?`, []any{now, now},
			registry.HistoryExpired, `'expired before any agent acked it'`, p.Now, p.Actor); err != nil || n == 0 {
			return err
		}
		// One audit entry per expired job, then the batch's sum, as the
		// reclaim does.
		if err := t.auditEach(due, registry.AuditJobExpire, `'expired before any agent acked it'`, p.Now, p.Actor); err != nil {
			return err
		}
		return t.audit(registry.AuditEntry{At: p.Now, Actor: p.Actor, Action: registry.AuditJobExpire, TargetKind: "jobs",
			Reason: fmt.Sprintf("%d queued jobs expired before any agent acked them", n)})
	})
	return n, err
}

// auditEach appends one audit entry per job in ids, whose reason is the SQL
// expression reason over the job's row as it is now.
func (t *txn) auditEach(ids []string, action, reason string, now time.Time, actor string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := t.exec(`INSERT INTO audit (at, actor, action, cluster_id, target_kind, target_id, reason)
		SELECT ?, ?, ?, cluster_id, 'job', id, `+reason+` FROM jobs WHERE id IN (SELECT value FROM json_each(?))`,
		col.MS(now), actor, action, col.JSONText(ids))
	return err
}

// pick runs a reaper's selection, whose rows are (id, keep), and splits the
// ids by keep.
func (t *txn) pick(q string, args ...any) (keep, other []string, err error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var k bool
		if err := rows.Scan(&id, &k); err != nil {
			return nil, nil, t.s.wrap(err, "pick jobs for the reaper")
		}
		if k {
			keep = append(keep, id)
		} else {
			other = append(other, id)
		}
	}
	return keep, other, t.s.wrap(rows.Err(), "pick jobs for the reaper")
}

// pickByCluster is pick for a selection whose rows are (id, keep,
// cluster_id); clusterOf receives each id's cluster.
func (t *txn) pickByCluster(clusterOf map[string]string, q string, args ...any) (keep, other []string, err error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, cluster string
		var k bool
		if err := rows.Scan(&id, &k, &cluster); err != nil {
			return nil, nil, t.s.wrap(err, "pick jobs for the reaper")
		}
		clusterOf[id] = cluster
		if k {
			keep = append(keep, id)
		} else {
			other = append(other, id)
		}
	}
	return keep, other, t.s.wrap(rows.Err(), "pick jobs for the reaper")
}

// endBatch applies set to the jobs of ids (all picked, in the state their
// pick saw, in this same write transaction: the writer is the only one) and
// writes each one's history entry from its updated row.
func (t *txn) endBatch(ids []string, set string, setArgs []any, typ registry.HistoryType, message string, now time.Time, actor string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	if err := t.indexSearchOf(ids...); err != nil {
		return 0, err
	}
	list := col.JSONText(ids)
	res, err := t.exec(`UPDATE jobs SET `+set+` WHERE id IN (SELECT value FROM json_each(?))`, append(setArgs, list)...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	_, err = t.exec(`INSERT INTO job_history (job_id, at, type, actor, attempt, state, message)
		SELECT id, ?, ?, ?, attempt, state, `+message+` FROM jobs WHERE id IN (SELECT value FROM json_each(?))`,
		col.MS(now), typ, actor, list)
	return int(n), err
}
