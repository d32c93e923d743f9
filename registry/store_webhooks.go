package registry

import (
	"context"
	"time"
)

// WebhookStore is the part of Store that keeps webhook subscriptions and
// their delivery outbox. The stores write deliveries themselves, in the
// transaction of the change they report (see the webhooks migration).
// Every method that writes is atomic, as Store's are.
type WebhookStore interface {
	// WebhookCreate inserts a subscription and p.Audit. CodeConflict if the
	// name is taken in its organization ('' for fleet-wide webhooks); other
	// organizations may use it.
	WebhookCreate(ctx context.Context, p WebhookCreateParams) error
	// WebhookList returns every subscription, by name.
	WebhookList(ctx context.Context) ([]Webhook, error)
	// WebhookUpdate changes a subscription's name, URL and events if it is
	// still at p.Version, with p.Audit, and returns it as changed (its
	// version one more). CodeNotFound if it does not exist; CodeConflict if
	// its version moved on or the name is taken in its organization.
	WebhookUpdate(ctx context.Context, p WebhookUpdateParams) (Webhook, error)
	// WebhookRotateSecret replaces a subscription's sealed secret with
	// p.Sealed; the replaced one becomes its previous secret until
	// p.PreviousUntil, or is dropped when that is zero (as is any older
	// previous secret). The version goes up by one; p.Audit is written with
	// it. It returns the subscription as changed. CodeNotFound.
	WebhookRotateSecret(ctx context.Context, p WebhookRotateParams) (Webhook, error)
	// WebhookDelete deletes a subscription and its deliveries.
	WebhookDelete(ctx context.Context, p WebhookDeleteParams) error
	// WebhookDeliveries returns a subscription's deliveries, newest first.
	WebhookDeliveries(ctx context.Context, webhookID string, limit int) ([]WebhookDelivery, error)
	// WebhookDelivery returns one delivery. CodeNotFound.
	WebhookDelivery(ctx context.Context, id int64) (WebhookDelivery, error)
	// WebhookDeliveryAdd queues a delivery an admin asked for (a test, a
	// redelivery), pending and due at its CreatedAt, with p.Audit, and
	// returns it with its id. CodeNotFound if its webhook does not exist.
	WebhookDeliveryAdd(ctx context.Context, p WebhookDeliveryAddParams) (WebhookDelivery, error)
	// WebhookDeliveriesClaim takes up to p.Limit pending deliveries due at
	// p.Now, oldest first, for one sender: it moves their next attempt to
	// p.Until (so no other sender takes them meanwhile, and a sender that
	// dies releases them then) and counts the attempt. Concurrent claims
	// never return the same delivery.
	WebhookDeliveriesClaim(ctx context.Context, p WebhookClaimParams) ([]WebhookDelivery, error)
	// WebhookDeliveryRecord records an attempt's outcome, provided the
	// delivery is still held by that attempt's claim (p.Attempts and
	// p.ClaimedUntil): a sender whose claim ran out and was taken over, or
	// that records twice, changes nothing.
	WebhookDeliveryRecord(ctx context.Context, p WebhookRecordParams) error
	// WebhookDeliveriesPrune deletes up to limit deliveries that ended
	// (delivered or failed) before before, oldest first, and says how many.
	// Pending deliveries are never deleted.
	WebhookDeliveriesPrune(ctx context.Context, before time.Time, limit int) (int, error)
	// WebhookDeliveriesPending counts the deliveries not yet delivered nor
	// given up on, through the index of pending deliveries (a scrape reads
	// it: its cost is the pending deliveries', not the table's).
	WebhookDeliveriesPending(ctx context.Context) (int64, error)
}

type WebhookCreateParams struct {
	Webhook Webhook
	Audit   AuditEntry
}

type WebhookDeleteParams struct {
	ID    string
	Audit AuditEntry
}

type WebhookClaimParams struct {
	Now   time.Time
	Until time.Time
	Limit int
}

type WebhookRecordParams struct {
	ID           int64
	Attempts     int
	ClaimedUntil time.Time
	State        DeliveryState
	NextAt       time.Time // pending: the next attempt
	Status       int
	Error        string
	FinishedAt   time.Time // delivered or failed
}

type WebhookUpdateParams struct {
	ID      string
	Version int64 // the version the change was made to
	Name    string
	URL     string
	Events  []string
	Audit   AuditEntry
}

type WebhookRotateParams struct {
	ID     string
	Sealed []byte // the new secret, sealed
	// PreviousUntil is when the replaced secret stops signing; zero: it
	// is dropped at once.
	PreviousUntil time.Time
	Audit         AuditEntry
}

type WebhookDeliveryAddParams struct {
	Delivery WebhookDelivery // its id, state and attempts are the store's
	Audit    AuditEntry
}
