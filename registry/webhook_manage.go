package registry

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// What an admin does to a webhook after creating it: edit it, rotate its
// secret, send it a test, send a delivery again.

// Secret rotation: how long the previous secret signs beside the new one
// unless told otherwise, and at most.
const (
	DefaultWebhookSecretOverlap = 24 * time.Hour
	MaxWebhookSecretOverlap     = 30 * 24 * time.Hour
)

// GetWebhook returns a subscription by id or name.
func (r *Registry) GetWebhook(ctx context.Context, ref string) (*Webhook, error) {
	return r.webhookByRef(ctx, ref)
}

// WebhookEdit is what webhook edit changes; nil fields are kept.
type WebhookEdit struct {
	Name   *string
	URL    *string
	Events []string
}

// UpdateWebhook changes a subscription's name, URL or events, provided it
// is still at version (the version the caller read): a concurrent change is
// CodeConflict. A new URL is checked as at creation (webhook_dest.go). The
// secret and the deliveries are kept; deliveries not yet sent go to the new
// URL.
func (r *Registry) UpdateWebhook(ctx context.Context, ref string, version int64, edit WebhookEdit) (*Webhook, error) {
	w, err := r.webhookByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	next := *w
	var changes []string
	if edit.Name != nil {
		if next.Name, err = checkWebhookName(*edit.Name); err != nil {
			return nil, err
		}
		if next.Name != w.Name {
			changes = append(changes, "name "+w.Name+" → "+next.Name)
		}
	}
	if edit.URL != nil {
		if next.URL, err = r.checkWebhookURL(*edit.URL); err != nil {
			return nil, err
		}
		if next.URL != w.URL {
			// By origin, as at creation: the audit trail is read by
			// viewers, and a path often holds a secret.
			changes = append(changes, "URL → "+webhookURLShown(next.URL))
		}
	}
	if edit.Events != nil {
		if next.Events, err = checkWebhookEvents(edit.Events); err != nil {
			return nil, err
		}
		if strings.Join(next.Events, ",") != strings.Join(w.Events, ",") {
			changes = append(changes, "events → "+strings.Join(next.Events, ","))
		}
	}
	if len(changes) == 0 {
		changes = []string{"nothing changed"}
	}
	updated, err := r.store.WebhookUpdate(ctx, WebhookUpdateParams{
		ID: w.ID, Version: version, Name: next.Name, URL: next.URL, Events: next.Events,
		Audit: r.auditEntry(ctx, "webhook.update", "", "webhook", w.ID, next.Name+": "+strings.Join(changes, "; ")),
	})
	if err != nil {
		return nil, err
	}
	return &updated, nil
}

// RotateWebhookSecret gives a subscription a new signing secret, returned
// this once. For overlap after it, deliveries are signed with both the new
// and the previous secret, so that the receiver may switch at any moment
// of it; an overlap of zero retires the previous secret at once (a leaked
// one). A rotation during an overlap retires the secret before the
// previous one.
func (r *Registry) RotateWebhookSecret(ctx context.Context, ref string, overlap time.Duration) (*Webhook, Secret, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, "", err
	}
	if overlap < 0 || overlap > MaxWebhookSecretOverlap {
		return nil, "", Errorf(CodeInvalid, "the overlap %s must be from 0 (the previous secret stops signing at once) to %s", overlap, fmtDays(MaxWebhookSecretOverlap))
	}
	w, err := r.webhookByRef(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	if r.cfg.Keyring == nil {
		return nil, "", Errorf(CodeUnavailable, "webhooks need the sealing key file to keep their secrets; start tether with one")
	}
	secret := newWebhookSecret()
	sealed, err := r.cfg.Keyring.Seal([]byte(secret.Reveal()), []byte(w.ID))
	if err != nil {
		return nil, "", Internal(err, "seal the webhook secret")
	}
	now := r.Now()
	p := WebhookRotateParams{ID: w.ID, Sealed: sealed}
	reason := w.Name + ": the previous secret no longer signs"
	if overlap > 0 {
		p.PreviousUntil = now.Add(overlap)
		reason = w.Name + ": the previous secret also signs until " + p.PreviousUntil.UTC().Format(time.RFC3339)
	}
	p.Audit = r.auditEntry(ctx, "webhook.rotate-secret", "", "webhook", w.ID, reason)
	rotated, err := r.store.WebhookRotateSecret(ctx, p)
	if err != nil {
		return nil, "", err
	}
	return &rotated, secret, nil
}

// SendTestWebhook queues a webhook.test delivery to one subscription,
// through the outbox like any other: the sender (tether serve) sends it
// within a second or so, and GetWebhookDelivery tells how it went.
func (r *Registry) SendTestWebhook(ctx context.Context, ref string) (*WebhookDelivery, error) {
	w, err := r.webhookByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	now := r.Now()
	data, _ := json.Marshal(struct {
		WebhookID   string    `json:"webhookId"`
		Name        string    `json:"name"`
		RequestedBy string    `json:"requestedBy"`
		RequestedAt time.Time `json:"requestedAt"`
	}{w.ID, w.Name, ActorFrom(ctx).String(), now})
	d, err := r.store.WebhookDeliveryAdd(ctx, WebhookDeliveryAddParams{
		Delivery: WebhookDelivery{WebhookID: w.ID, Event: WebhookTest, SubjectID: w.ID, Data: data, CreatedAt: now},
		Audit:    r.auditEntry(ctx, "webhook.test", "", "webhook", w.ID, w.Name+": a webhook.test delivery"),
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// parseDeliveryID reads wd-<n> (as tether shows it) or <n>.
func parseDeliveryID(ref string) (int64, error) {
	ref = strings.TrimSpace(ref)
	n, err := strconv.ParseInt(strings.TrimPrefix(ref, "wd-"), 10, 64)
	if err != nil || n < 1 {
		return 0, Errorf(CodeInvalid, "%q is not a delivery id: delivery ids are wd-<number>, as tether webhook deliveries shows them", ref)
	}
	return n, nil
}

// GetWebhookDelivery returns a delivery by id (wd-<n>), if the actor may
// see its webhook.
func (r *Registry) GetWebhookDelivery(ctx context.Context, ref string) (*WebhookDelivery, *Webhook, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, nil, err
	}
	id, err := parseDeliveryID(ref)
	if err != nil {
		return nil, nil, err
	}
	d, err := r.store.WebhookDelivery(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	w, err := r.webhookByRef(ctx, d.WebhookID)
	if ErrorCode(err) == CodeNotFound {
		// Of another organization's webhook: not to be told apart from
		// one that does not exist.
		return nil, nil, Errorf(CodeNotFound, "no webhook delivery has the id wd-%d (tether webhook deliveries NAME lists a webhook's)", id)
	}
	if err != nil {
		return nil, nil, err
	}
	return &d, w, nil
}

// RedeliverWebhook sends a delivery that ended (delivered or failed) again,
// as a new delivery with attempts and a retry window of its own. It
// carries the same message: the same event and data, and the id receivers
// de-duplicate on (webhook-id) of the delivery that first sent it. An
// admin redelivers because the receiver lost or refused the message, and a
// receiver that did process it is right to ignore it again.
func (r *Registry) RedeliverWebhook(ctx context.Context, ref string) (*WebhookDelivery, error) {
	d, w, err := r.GetWebhookDelivery(ctx, ref)
	if err != nil {
		return nil, err
	}
	if d.State == DeliveryPending {
		return nil, Errorf(CodeConflict, "delivery %s is still pending (attempt %d, the next one at %s): it is being sent; redeliver it once it was delivered or failed",
			d.DeliveryID(), d.Attempts, d.NextAt.UTC().Format(time.RFC3339))
	}
	again := WebhookDelivery{WebhookID: w.ID, Event: d.Event, ClusterID: d.ClusterID, SubjectID: d.SubjectID, Data: d.Data,
		CreatedAt: r.Now(), RedeliveryOf: d.ID, FirstCreatedAt: d.CreatedAt}
	if d.RedeliveryOf != 0 { // a redelivery of a redelivery: still the first's message
		again.RedeliveryOf, again.FirstCreatedAt = d.RedeliveryOf, d.MessageCreatedAt()
	}
	added, err := r.store.WebhookDeliveryAdd(ctx, WebhookDeliveryAddParams{
		Delivery: again,
		Audit:    r.auditEntry(ctx, "webhook.redeliver", "", "webhook", w.ID, w.Name+": "+d.DeliveryID()+" ("+d.Event+") sent again as message "+again.MessageID()),
	})
	if err != nil {
		return nil, err
	}
	return &added, nil
}

// fmtDays writes a whole number of days as "30d".
func fmtDays(d time.Duration) string { return strconv.Itoa(int(d/(24*time.Hour))) + "d" }
