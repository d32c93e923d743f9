package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func scanDelivery(row pgx.Row) (registry.WebhookDelivery, error) {
	var d registry.WebhookDelivery
	var data, state string
	err := row.Scan(&d.ID, &d.WebhookID, &d.Event, &d.ClusterID, &d.SubjectID, &data, col.Time(&d.CreatedAt), &state, &d.Attempts,
		col.Time(&d.NextAt), &d.LastStatus, &d.LastError, col.Time(&d.FinishedAt), &d.RedeliveryOf, col.Time(&d.FirstCreatedAt))
	d.Data, d.State = json.RawMessage(data), registry.DeliveryState(state)
	return d, err
}

func (s *Store) WebhookCreate(ctx context.Context, p registry.WebhookCreateParams) error {
	return s.write(ctx, "create a webhook", func(ctx context.Context, q db) error {
		w := &p.Webhook
		_, err := q.Exec(ctx, `INSERT INTO webhooks (id, name, url, events, organization, sealed_secret, created_at, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			w.ID, w.Name, w.URL, col.JSONText(w.Events), w.Org, w.SealedSecret, col.MS(w.CreatedAt), w.CreatedBy)
		if isUniqueViolation(err, "webhooks_org_name") {
			return registry.Errorf(registry.CodeConflict, "a webhook named %q already exists; delete it first or choose another name", w.Name)
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

func (s *Store) WebhookList(ctx context.Context) ([]registry.Webhook, error) {
	rows, err := s.query(ctx, "read webhooks", "SELECT "+record.WebhookCols+" FROM webhooks ORDER BY name, organization")
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read webhooks", func(r pgx.Rows) (registry.Webhook, error) { return record.ScanWebhook(r) })
}

func (s *Store) WebhookDelete(ctx context.Context, p registry.WebhookDeleteParams) error {
	return s.write(ctx, "delete a webhook", func(ctx context.Context, q db) error {
		tag, err := q.Exec(ctx, "DELETE FROM webhooks WHERE id = $1", p.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return registry.Errorf(registry.CodeNotFound, "webhook %s does not exist", p.ID)
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

func (s *Store) WebhookDeliveries(ctx context.Context, webhookID string, limit int) ([]registry.WebhookDelivery, error) {
	rows, err := s.query(ctx, "read webhook deliveries", "SELECT "+record.DeliveryCols+" FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2", webhookID, limit)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read webhook deliveries", func(r pgx.Rows) (registry.WebhookDelivery, error) { return scanDelivery(r) })
}

// WebhookDeliveriesClaim skips rows another replica's claim holds, so
// senders on several replicas never take the same delivery.
func (s *Store) WebhookDeliveriesClaim(ctx context.Context, p registry.WebhookClaimParams) ([]registry.WebhookDelivery, error) {
	var out []registry.WebhookDelivery
	err := s.stmt(ctx, "claim webhook deliveries", func(ctx context.Context, q db) error {
		rows, err := q.Query(ctx, `UPDATE webhook_deliveries SET next_attempt_at = $1, attempts = attempts + 1
			WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= $2
				ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
			RETURNING `+record.DeliveryCols, col.MS(p.Until), col.MS(p.Now), p.Limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (registry.WebhookDelivery, error) { return scanDelivery(r) })
		return err
	})
	return out, err
}

func (s *Store) WebhookDeliveryRecord(ctx context.Context, p registry.WebhookRecordParams) error {
	return s.stmt(ctx, "record a webhook delivery", func(ctx context.Context, q db) error {
		next := col.MS(p.NextAt)
		if p.NextAt.IsZero() {
			next = col.MS(p.FinishedAt)
		}
		_, err := q.Exec(ctx, `UPDATE webhook_deliveries SET state = $1, next_attempt_at = $2, last_status = $3, last_error = $4, finished_at = $5
			WHERE id = $6 AND attempts = $7 AND next_attempt_at = $8 AND state = 'pending'`,
			string(p.State), next, p.Status, strings.ReplaceAll(strings.ToValidUTF8(p.Error, "\uFFFD"), "\x00", ""), col.MS(p.FinishedAt), p.ID, p.Attempts, col.MS(p.ClaimedUntil))
		return err
	})
}

func (s *Store) WebhookUpdate(ctx context.Context, p registry.WebhookUpdateParams) (registry.Webhook, error) {
	var out registry.Webhook
	err := s.write(ctx, "edit a webhook", func(ctx context.Context, q db) error {
		var err error
		out, err = record.ScanWebhook(q.QueryRow(ctx, `UPDATE webhooks SET name = $1, url = $2, events = $3, version = version + 1
			WHERE id = $4 AND version = $5 RETURNING `+record.WebhookCols, p.Name, p.URL, col.JSONText(p.Events), p.ID, p.Version))
		if isUniqueViolation(err, "webhooks_org_name") {
			return registry.Errorf(registry.CodeConflict, "a webhook named %q already exists; choose another name", p.Name)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			var version int64
			if err := q.QueryRow(ctx, "SELECT version FROM webhooks WHERE id = $1", p.ID).Scan(&version); errors.Is(err, pgx.ErrNoRows) {
				return registry.Errorf(registry.CodeNotFound, "webhook %s does not exist", p.ID)
			} else if err != nil {
				return err
			}
			return registry.Errorf(registry.CodeConflict,
				"webhook %s was changed by someone else: you edited version %d, it is now at version %d; reload it and apply your change again",
				p.ID, p.Version, version)
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
	return out, err
}

func (s *Store) WebhookRotateSecret(ctx context.Context, p registry.WebhookRotateParams) (registry.Webhook, error) {
	var out registry.Webhook
	err := s.write(ctx, "rotate a webhook's secret", func(ctx context.Context, q db) error {
		var err error
		keep := !p.PreviousUntil.IsZero()
		out, err = record.ScanWebhook(q.QueryRow(ctx, `UPDATE webhooks SET
				sealed_previous_secret = CASE WHEN $1::boolean THEN sealed_secret END, previous_secret_until = $2,
				sealed_secret = $3, version = version + 1
			WHERE id = $4 RETURNING `+record.WebhookCols, keep, col.MS(p.PreviousUntil), p.Sealed, p.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "webhook %s does not exist", p.ID)
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
	return out, err
}

func (s *Store) WebhookDelivery(ctx context.Context, id int64) (registry.WebhookDelivery, error) {
	d, err := scanDelivery(s.queryRow(ctx, "SELECT "+record.DeliveryCols+" FROM webhook_deliveries WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, registry.Errorf(registry.CodeNotFound, "no webhook delivery has the id wd-%d (tether webhook deliveries NAME lists a webhook's)", id)
	}
	return d, s.wrap(err, "read a webhook delivery")
}

// WebhookDeliveryAdd inserts only while the webhook exists: one that was
// deleted meanwhile inserts nothing, and says so.
func (s *Store) WebhookDeliveryAdd(ctx context.Context, p registry.WebhookDeliveryAddParams) (registry.WebhookDelivery, error) {
	var out registry.WebhookDelivery
	err := s.write(ctx, "queue a webhook delivery", func(ctx context.Context, q db) error {
		d := &p.Delivery
		var err error
		out, err = scanDelivery(q.QueryRow(ctx, `INSERT INTO webhook_deliveries (webhook_id, event, cluster_id, subject_id, data, created_at,
				next_attempt_at, redelivery_of, first_created_at)
			SELECT id, $1, $2, $3, $4, $5, $5, $6, $7 FROM webhooks WHERE id = $8
			RETURNING `+record.DeliveryCols,
			d.Event, d.ClusterID, d.SubjectID, string(d.Data), col.MS(d.CreatedAt), nullID(d.RedeliveryOf), col.MS(d.FirstCreatedAt), d.WebhookID))
		if errors.Is(err, pgx.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "webhook %s does not exist", d.WebhookID)
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
	return out, err
}

// nullID stores an id of 0 (none) as NULL.
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// WebhookDeliveriesPending counts through the partial index
// webhook_deliveries_due, which holds the pending deliveries alone.
func (s *Store) WebhookDeliveriesPending(ctx context.Context) (int64, error) {
	var n int64
	err := s.queryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'").Scan(&n)
	return n, s.wrap(err, "count pending webhook deliveries")
}
