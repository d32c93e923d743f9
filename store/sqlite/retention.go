package sqlite

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// JobsPrune finds the batch through jobs_state (state, created_at): a job
// finished after it was created, so one that finished before the cut was
// created before it too.
func (s *Store) JobsPrune(ctx context.Context, p registry.JobsPruneParams) (int, error) {
	var n int
	err := s.write(ctx, func(t *txn) error {
		n = 0
		rows, err := t.query(`SELECT id, cluster_id FROM jobs WHERE state = ? AND created_at < ? AND finished_at < ?
			ORDER BY created_at LIMIT ?`, p.State, col.MS(p.FinishedBefore), col.MS(p.FinishedBefore), p.Limit)
		if err != nil {
			return err
		}
		var ids []any
		perCluster := map[string]int{}
		for rows.Next() {
			var id, cluster string
			if err := rows.Scan(&id, &cluster); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			perCluster[cluster]++
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		// job_history goes with its jobs (ON DELETE CASCADE).
		if _, err := t.exec("DELETE FROM jobs WHERE id IN ("+placeholders(len(ids))+")", ids...); err != nil {
			return err
		}
		for cluster, k := range perCluster {
			if _, err := t.exec("UPDATE job_counts SET n = n - ? WHERE cluster_id = ? AND state = ?", k, cluster, p.State); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// AuditPrune always keeps the newest entry, however old: audit's id is a
// rowid without AUTOINCREMENT, which SQLite takes as the largest plus one, so
// deleting the newest would hand its id out again, and a follower asking for
// the entries after the last id it saw (?afterId=, tether audit --follow)
// would miss the new ones.
func (s *Store) AuditPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(t *txn) error {
		res, err := t.exec(`DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ? AND id < (SELECT MAX(id) FROM audit)
			ORDER BY id LIMIT ?)`, col.MS(before), limit)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// WebhookDeliveriesPrune deletes ended deliveries only: a delivery's id is
// never handed out again (AUTOINCREMENT, migration 0018), whatever is deleted.
func (s *Store) WebhookDeliveriesPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(t *txn) error {
		res, err := t.exec(`DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries INDEXED BY webhook_deliveries_finished
			WHERE state <> 'pending' AND finished_at < ? ORDER BY finished_at LIMIT ?)`, col.MS(before), limit)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// IdempotencyKeysPrune deletes expired keys through idempotency_keys_expiry.
func (s *Store) IdempotencyKeysPrune(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, func(t *txn) error {
		res, err := t.exec(`DELETE FROM idempotency_keys WHERE (cluster_id, key) IN (SELECT cluster_id, key FROM idempotency_keys
			WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, col.MS(now), limit)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
