package record

import (
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// WebhookCols are a webhook's columns, as ScanWebhook reads them.
const WebhookCols = `id, name, url, events, organization, sealed_secret, created_at, created_by, version,
	sealed_previous_secret, previous_secret_until`

// ScanWebhook reads a row of WebhookCols.
func ScanWebhook(row Scanner) (registry.Webhook, error) {
	var w registry.Webhook
	err := row.Scan(&w.ID, &w.Name, &w.URL, col.JSON(&w.Events), &w.Org, &w.SealedSecret, col.Time(&w.CreatedAt), &w.CreatedBy, &w.Version,
		col.Bytes(&w.SealedPreviousSecret), col.Time(&w.PreviousSecretUntil))
	return w, err
}

// DeliveryCols are a webhook delivery's columns (each store reads them with its own scanner).
const DeliveryCols = `id, webhook_id, event, cluster_id, subject_id, data, created_at, state, attempts, next_attempt_at,
	last_status, last_error, finished_at, COALESCE(redelivery_of, 0), first_created_at`
