package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func scanDelivery(row scanner) (registry.WebhookDelivery, error) {
	var d registry.WebhookDelivery
	var data string
	err := row.Scan(&d.ID, &d.WebhookID, &d.Event, &d.ClusterID, &d.SubjectID, &data, col.Time(&d.CreatedAt), &d.State, &d.Attempts,
		col.Time(&d.NextAt), &d.LastStatus, &d.LastError, col.Time(&d.FinishedAt), &d.RedeliveryOf, col.Time(&d.FirstCreatedAt))
	d.Data = json.RawMessage(data)
	return d, err
}

func (s *Store) WebhookCreate(ctx context.Context, p registry.WebhookCreateParams) error {
	return s.write(ctx, func(t *txn) error {
		w := &p.Webhook
		_, err := t.exec(`INSERT INTO webhooks (id, name, url, events, organization, sealed_secret, created_at, created_by)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.Name, w.URL, col.JSONText(w.Events), w.Org, w.SealedSecret, col.MS(w.CreatedAt), w.CreatedBy)
		if isUniqueViolation(err) {
			return registry.Errorf(registry.CodeConflict, "a webhook named %q already exists; delete it first or choose another name", w.Name)
		}
		if err != nil {
			return err
		}
		return t.audit(p.Audit)
	})
}

func (s *Store) WebhookList(ctx context.Context) ([]registry.Webhook, error) {
	rows, err := s.query(ctx, "SELECT "+record.WebhookCols+" FROM webhooks ORDER BY name, organization")
	if err != nil {
		return nil, s.wrap(err, "read webhooks")
	}
	defer rows.Close()
	out := []registry.Webhook{}
	for rows.Next() {
		w, err := record.ScanWebhook(rows)
		if err != nil {
			return nil, s.wrap(err, "read webhooks")
		}
		out = append(out, w)
	}
	return out, s.wrap(rows.Err(), "read webhooks")
}

func (s *Store) WebhookDelete(ctx context.Context, p registry.WebhookDeleteParams) error {
	return s.write(ctx, func(t *txn) error {
		res, err := t.exec("DELETE FROM webhooks WHERE id = ?", p.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return registry.Errorf(registry.CodeNotFound, "webhook %s does not exist", p.ID)
		}
		return t.audit(p.Audit)
	})
}

func (s *Store) WebhookDeliveries(ctx context.Context, webhookID string, limit int) ([]registry.WebhookDelivery, error) {
	rows, err := s.query(ctx, "SELECT "+record.DeliveryCols+" FROM webhook_deliveries WHERE webhook_id = ? ORDER BY id DESC LIMIT ?", webhookID, limit)
	if err != nil {
		return nil, s.wrap(err, "read webhook deliveries")
	}
	defer rows.Close()
	out := []registry.WebhookDelivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, s.wrap(err, "read webhook deliveries")
		}
		out = append(out, d)
	}
	return out, s.wrap(rows.Err(), "read webhook deliveries")
}

// WebhookDeliveriesClaim is one statement; SQLite's single writer makes it
// exclusive.
func (s *Store) WebhookDeliveriesClaim(ctx context.Context, p registry.WebhookClaimParams) ([]registry.WebhookDelivery, error) {
	var out []registry.WebhookDelivery
	err := s.write(ctx, func(t *txn) error {
		out = nil
		rows, err := t.query(`UPDATE webhook_deliveries SET next_attempt_at = ?, attempts = attempts + 1
			WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?)
			RETURNING `+record.DeliveryCols, col.MS(p.Until), col.MS(p.Now), p.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

func (s *Store) WebhookDeliveryRecord(ctx context.Context, p registry.WebhookRecordParams) error {
	return s.write(ctx, func(t *txn) error {
		next := col.MS(p.NextAt)
		if p.NextAt.IsZero() {
			next = col.MS(p.FinishedAt)
		}
		_, err := t.exec(`UPDATE webhook_deliveries SET state = ?, next_attempt_at = ?, last_status = ?, last_error = ?, finished_at = ?
			WHERE id = ? AND attempts = ? AND next_attempt_at = ? AND state = 'pending'`,
			p.State, next, p.Status, strings.ToValidUTF8(p.Error, "\uFFFD"), col.MS(p.FinishedAt), p.ID, p.Attempts, col.MS(p.ClaimedUntil))
		return err
	})
}

func (s *Store) WebhookUpdate(ctx context.Context, p registry.WebhookUpdateParams) (registry.Webhook, error) {
	var out registry.Webhook
	err := s.write(ctx, func(t *txn) error {
		var err error
		out, err = record.ScanWebhook(t.queryRow(`UPDATE webhooks SET name = ?, url = ?, events = ?, version = version + 1
			WHERE id = ? AND version = ? RETURNING `+record.WebhookCols, p.Name, p.URL, col.JSONText(p.Events), p.ID, p.Version))
		if isUniqueViolation(err) {
			return registry.Errorf(registry.CodeConflict, "a webhook named %q already exists; choose another name", p.Name)
		}
		if errors.Is(err, sql.ErrNoRows) {
			var version int64
			if err := t.queryRow("SELECT version FROM webhooks WHERE id = ?", p.ID).Scan(&version); errors.Is(err, sql.ErrNoRows) {
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
		return t.audit(p.Audit)
	})
	return out, err
}

func (s *Store) WebhookRotateSecret(ctx context.Context, p registry.WebhookRotateParams) (registry.Webhook, error) {
	var out registry.Webhook
	err := s.write(ctx, func(t *txn) error {
		var err error
		keep := !p.PreviousUntil.IsZero()
		out, err = record.ScanWebhook(t.queryRow(`UPDATE webhooks SET
				sealed_previous_secret = CASE WHEN ? THEN sealed_secret END, previous_secret_until = ?,
				sealed_secret = ?, version = version + 1
			WHERE id = ? RETURNING `+record.WebhookCols, keep, col.MS(p.PreviousUntil), p.Sealed, p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "webhook %s does not exist", p.ID)
		}
		if err != nil {
			return err
		}
		return t.audit(p.Audit)
	})
	return out, err
}

func (s *Store) WebhookDelivery(ctx context.Context, id int64) (registry.WebhookDelivery, error) {
	d, err := scanDelivery(s.queryRow(ctx, "SELECT "+record.DeliveryCols+" FROM webhook_deliveries WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, registry.Errorf(registry.CodeNotFound, "no webhook delivery has the id wd-%d (tether webhook deliveries NAME lists a webhook's)", id)
	}
	return d, s.wrap(err, "read a webhook delivery")
}

// WebhookDeliveryAdd inserts only while the webhook exists: one that was
// deleted meanwhile inserts nothing, and says so.
func (s *Store) WebhookDeliveryAdd(ctx context.Context, p registry.WebhookDeliveryAddParams) (registry.WebhookDelivery, error) {
	var out registry.WebhookDelivery
	err := s.write(ctx, func(t *txn) error {
		d := &p.Delivery
		var err error
		out, err = scanDelivery(t.queryRow(`INSERT INTO webhook_deliveries (webhook_id, event, cluster_id, subject_id, data, created_at,
				next_attempt_at, redelivery_of, first_created_at)
			SELECT id, ?, ?, ?, ?, ?, ?, ?, ? FROM webhooks WHERE id = ?
			RETURNING `+record.DeliveryCols,
			d.Event, d.ClusterID, d.SubjectID, string(d.Data), col.MS(d.CreatedAt), col.MS(d.CreatedAt), nullID(d.RedeliveryOf), col.MS(d.FirstCreatedAt), d.WebhookID))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "webhook %s does not exist", d.WebhookID)
		}
		if err != nil {
			return err
		}
		return t.audit(p.Audit)
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

// WebhookDeliveriesPending counts the entries of the partial index
// webhook_deliveries_due, which holds the pending deliveries alone.
func (s *Store) WebhookDeliveriesPending(ctx context.Context) (int64, error) {
	var n int64
	err := s.queryRow(ctx, "SELECT count(*) FROM webhook_deliveries INDEXED BY webhook_deliveries_due WHERE state = 'pending'").Scan(&n)
	return n, s.wrap(err, "count pending webhook deliveries")
}
