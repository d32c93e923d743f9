package postgres

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// The reaper's writes: leases reclaimed and queued jobs expired, in batches.

// reaperRecord is the tail of a reaper statement, as CTEs: a history entry
// for each job the batch changed (the relation u: id, cluster_id, state,
// attempt) and one audit entry for the batch (the reaper is the system, not
// an admin or an agent; each job's timeline has the detail), so two
// statements' worth of rows whatever the batch's size.
func reaperRecord(a *args, now time.Time, actor string, expire bool) string {
	at, who := a.add(col.MS(now))+"::BIGINT", a.add(actor)+"::TEXT"
	var action, reason string
	if expire {
		action = a.add(registry.AuditJobExpire) + "::TEXT"
		reason = `s.n || ' queued jobs expired before any agent acked them'`
	} else {
		action = a.add(registry.AuditJobReclaim) + "::TEXT"
		reason = `'leases expired: ' || s.q || ' jobs back in the queue, ' || s.f || ' failed on their last attempt'`
	}
	// Each job the batch reclaimed or expired gets an audit entry of its own
	// (which job, and what became of it) besides the batch's sum.
	perJob := `
		aj AS (INSERT INTO audit (at, actor, action, cluster_id, target_kind, target_id, reason)
			SELECT ` + at + `, ` + who + `, ` + action + `, u.cluster_id, 'job', u.id,
				CASE u.state
					WHEN 'queued' THEN 'lease expired: back in the queue as attempt ' || u.attempt
					WHEN 'failed' THEN 'lease expired on the last attempt: failed (lease_expired)'
					ELSE 'expired before any agent acked it' END
			FROM u),`
	return `h AS (INSERT INTO job_history (job_id, at, type, actor, attempt, state, message)
			SELECT u.id, ` + at + `, CASE u.state WHEN 'queued' THEN 'reclaimed' WHEN 'failed' THEN 'failed' ELSE 'expired' END,
				` + who + `, u.attempt, u.state,
				CASE u.state
					WHEN 'queued' THEN 'lease expired: back in the queue as attempt ' || u.attempt
					WHEN 'failed' THEN 'lease expired on the last attempt: failed (lease_expired)'
					ELSE 'expired before any agent acked it' END
			FROM u),` + perJob + `
		a AS (INSERT INTO audit (at, actor, action, target_kind, reason)
			SELECT ` + at + `, ` + who + `, ` + action + `, 'jobs', ` + reason + `
			FROM (SELECT count(*) AS n, count(*) FILTER (WHERE state = 'queued') AS q, count(*) FILTER (WHERE state = 'failed') AS f FROM u) s
			WHERE s.n > 0)`
}

// JobsReclaim is one statement. It picks its batch of expired claims
// (job_claim_lease, see claims.go) with their jobs, locking both with SKIP
// LOCKED, so that the reapers of several replicas take different jobs
// instead of waiting on each other, and so that a job an agent is updating
// or heartbeating right now is left for the next round: a heartbeat that
// comes after the pick waits on the claim, then finds it deleted. The batch's
// claims are deleted in the statement that requeues or fails their jobs.
func (s *Store) JobsReclaim(ctx context.Context, p registry.JobsReclaimParams) (registry.ReclaimCounts, error) {
	var counts registry.ReclaimCounts
	err := s.stmt(ctx, "reclaim jobs", func(ctx context.Context, q db) error {
		counts = registry.ReclaimCounts{}
		var a args
		now, limit := a.add(col.MS(p.Now))+"::BIGINT", a.add(p.Limit)
		sql := `WITH picked AS (
				SELECT j.id, j.attempt < cl.max_attempts AS retry
				FROM job_claim c JOIN jobs j ON j.id = c.job_id JOIN clusters cl ON cl.id = j.cluster_id
				WHERE c.lease_expires_at < ` + now + ` AND j.state = 'in_progress'
				ORDER BY c.lease_expires_at LIMIT ` + limit + `
				FOR UPDATE OF c SKIP LOCKED FOR NO KEY UPDATE OF j SKIP LOCKED),
			dc AS (DELETE FROM job_claim WHERE job_id IN (SELECT id FROM picked)),
			u AS (UPDATE jobs SET
					state = CASE WHEN picked.retry THEN 'queued' ELSE 'failed' END,
					attempt = CASE WHEN picked.retry THEN jobs.attempt + 1 ELSE jobs.attempt END,
					error = CASE WHEN picked.retry THEN '' ELSE 'lease_expired' END,
					finished_at = CASE WHEN picked.retry THEN NULL ELSE ` + now + ` END,
					claim_id = NULL, claimed_at = NULL, claimed_by = NULL, lease_seconds = 0,
					last_activity_at = NULL, phase = '', visible_after = NULL, updated_at = ` + now + `
				FROM picked WHERE jobs.id = picked.id
				RETURNING jobs.id, jobs.cluster_id, jobs.state, jobs.attempt),
			` + reaperRecord(&a, p.Now, p.Actor, false) + `
			SELECT cluster_id, count(*) FILTER (WHERE state = 'queued'), count(*) FILTER (WHERE state <> 'queued') FROM u GROUP BY cluster_id`
		rows, err := q.Query(ctx, sql, a...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var cluster string
			var c registry.ClusterReclaims
			if err := rows.Scan(&cluster, &c.Requeued, &c.Failed); err != nil {
				return err
			}
			if counts.ByCluster == nil {
				counts.ByCluster = map[string]registry.ClusterReclaims{}
			}
			counts.ByCluster[cluster] = c
			counts.Requeued += c.Requeued
			counts.Failed += c.Failed
		}
		return rows.Err()
	})
	return counts, err
}

// JobsExpire is one statement, picking its batch as JobsReclaim does.
func (s *Store) JobsExpire(ctx context.Context, p registry.JobsExpireParams) (int, error) {
	n := 0
	err := s.stmt(ctx, "expire jobs", func(ctx context.Context, q db) error {
		var a args
		now, limit := a.add(col.MS(p.Now))+"::BIGINT", a.add(p.Limit)
		sql := `WITH picked AS (
				SELECT id FROM jobs WHERE state = 'queued' AND expires_at IS NOT NULL AND expires_at <= ` + now + `
				ORDER BY expires_at LIMIT ` + limit + `
				FOR NO KEY UPDATE SKIP LOCKED),
			u AS (UPDATE jobs SET state = 'expired', error = 'expired', finished_at = ` + now + `, updated_at = ` + now + `
				FROM picked WHERE jobs.id = picked.id
				RETURNING jobs.id, jobs.cluster_id, jobs.state, jobs.attempt),
			` + reaperRecord(&a, p.Now, p.Actor, true) + `
			SELECT count(*) FROM u`
		return q.QueryRow(ctx, sql, a...).Scan(&n)
	})
	return n, err
}
