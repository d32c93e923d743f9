package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Webhook is a subscription: changes of the given types (in its
// organization, when it has one) are POSTed to URL, signed with its secret
// (and, for a while after a rotation, with its previous one too).
type Webhook struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Org       string    `json:"org,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy"`
	// Version goes up with every change (edit, rotation): an edit names
	// the version it read (If-Match), as a cluster's does.
	Version int64 `json:"version"`
	// PreviousSecretUntil is when the secret a rotation replaced stops
	// signing deliveries (zero: no previous secret signs).
	PreviousSecretUntil  time.Time `json:"previousSecretUntil,omitzero"`
	SealedSecret         []byte    `json:"-"`
	SealedPreviousSecret []byte    `json:"-"`
}

// Webhook event types.
const (
	WebhookJobFinished       = "job.finished"       // a job reached a terminal state, on any path
	WebhookCredentialRevoked = "credential.revoked" // an admin revoked a credential
	WebhookRolloutHalted     = "rollout.halted"     // a rollout passed its failure budget
	WebhookRolloutCompleted  = "rollout.completed"
)

// WebhookEvents lists every event type a webhook may subscribe to.
var WebhookEvents = []string{WebhookJobFinished, WebhookCredentialRevoked, WebhookRolloutHalted, WebhookRolloutCompleted}

// WebhookTest is the event of a test delivery (webhook test): sent to the
// one webhook an admin names, whatever it subscribes to.
const WebhookTest = "webhook.test"

// DeliveryState is where a delivery is.
type DeliveryState string

const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed" // gave up after WebhookRetryFor
)

// WebhookDelivery is one change to deliver to one webhook.
type WebhookDelivery struct {
	ID        int64  `json:"id"`
	WebhookID string `json:"webhookId"`
	// RedeliveryOf is, for a delivery an admin asked to send again, the id
	// of the delivery that first sent its message: receivers see that id
	// (MessageID), so that one that did process it ignores it.
	RedeliveryOf int64 `json:"redeliveryOf,omitempty"`
	// FirstCreatedAt is, for a redelivery, when the delivery that first
	// sent its message was created (the body's createdAt).
	FirstCreatedAt time.Time       `json:"-"`
	Event          string          `json:"event"`
	ClusterID      string          `json:"clusterId,omitempty"`
	SubjectID      string          `json:"subjectId"`
	Data           json.RawMessage `json:"data"`
	CreatedAt      time.Time       `json:"createdAt"`
	State          DeliveryState   `json:"state"`
	Attempts       int             `json:"attempts"`
	NextAt         time.Time       `json:"nextAttemptAt,omitzero"`
	LastStatus     int             `json:"lastStatus,omitempty"`
	LastError      string          `json:"lastError,omitempty"`
	FinishedAt     time.Time       `json:"finishedAt,omitzero"`
}

// DeliveryID names this delivery (webhook deliveries lists it, webhook
// redeliver takes it, serve's log names it).
func (d *WebhookDelivery) DeliveryID() string { return fmt.Sprintf("wd-%d", d.ID) }

// MessageID is what receivers de-duplicate on (webhook-id,
// X-Tether-Delivery, the body's id): the delivery's own id, or for a
// redelivery the id of the delivery that first sent the message.
func (d *WebhookDelivery) MessageID() string {
	if d.RedeliveryOf != 0 {
		return fmt.Sprintf("wd-%d", d.RedeliveryOf)
	}
	return d.DeliveryID()
}

// MessageCreatedAt is the body's createdAt: when the change was recorded,
// the same on a redelivery.
func (d *WebhookDelivery) MessageCreatedAt() time.Time {
	if d.RedeliveryOf != 0 && !d.FirstCreatedAt.IsZero() {
		return d.FirstCreatedAt
	}
	return d.CreatedAt
}

// Delivery retry policy: exponential backoff with jitter, for a day.
const (
	WebhookRetryFor     = 24 * time.Hour
	webhookFirstBackoff = 5 * time.Second
	webhookMaxBackoff   = time.Hour
	webhookSecretPrefix = "whsec_"
	// webhookSecretBytes is the random part of a secret. Standard Webhooks
	// wants 24 to 64 bytes, shown as whsec_ and their base64.
	webhookSecretBytes = 32
)

// newWebhookSecret is a Standard Webhooks secret: whsec_ and the standard
// base64 of random bytes, which the official libraries decode into their
// HMAC key. (Secrets made before, whsec_ and 32 base32 letters, decode the
// same way, to 24 bytes: they are Standard Webhooks secrets too.) The
// secret is sealed as this text; X-Tether-Signature keys its HMAC with the
// text itself, as it always has.
func newWebhookSecret() Secret {
	return Secret(webhookSecretPrefix + base64.StdEncoding.EncodeToString(randomBytes(webhookSecretBytes)))
}

// CreateWebhook subscribes url to events. The signing secret is returned
// this once; the registry keeps it sealed by the key file, because it must
// sign every delivery.
func (r *Registry) CreateWebhook(ctx context.Context, name, rawURL string, events []string, org string) (*Webhook, Secret, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, "", err
	}
	name, err := checkWebhookName(name)
	if err != nil {
		return nil, "", err
	}
	u, err := r.checkWebhookURL(rawURL)
	if err != nil {
		return nil, "", err
	}
	evs, err := checkWebhookEvents(events)
	if err != nil {
		return nil, "", err
	}
	org = strings.TrimSpace(org)
	if scope := orgScope(ctx); scope != "" {
		if org != "" && org != scope {
			return nil, "", Errorf(CodeForbidden, "%s may only subscribe to organization %q, not %q", ActorFrom(ctx), scope, org)
		}
		org = scope
	}
	if r.cfg.Keyring == nil {
		return nil, "", Errorf(CodeUnavailable, "webhooks need the sealing key file to keep their secrets; start tether with one")
	}
	w := &Webhook{ID: "wh-" + newULID(), Name: name, URL: u, Events: evs, Org: org, CreatedAt: r.Now(), CreatedBy: ActorFrom(ctx).String(), Version: 1}
	secret := newWebhookSecret()
	if w.SealedSecret, err = r.cfg.Keyring.Seal([]byte(secret.Reveal()), []byte(w.ID)); err != nil {
		return nil, "", Internal(err, "seal the webhook secret")
	}
	err = r.store.WebhookCreate(ctx, WebhookCreateParams{
		Webhook: *w,
		Audit:   r.auditEntry(ctx, "webhook.create", "", "webhook", w.ID, name+" → "+webhookURLShown(w.URL)+" for "+strings.Join(evs, ",")),
	})
	if err != nil {
		return nil, "", err
	}
	return w, secret, nil
}

func checkWebhookName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if !adminTokenName.MatchString(name) {
		return "", Errorf(CodeInvalid, "webhook name %q must be 1 to 63 lowercase letters, digits, '.', '_' or '-'", name)
	}
	return name, nil
}

// checkWebhookURL reads a receiver's URL and checks that webhooks may be
// sent there (webhook_dest.go), at creation and at every edit.
func (r *Registry) checkWebhookURL(rawURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		shown := rawURL
		if err == nil {
			shown = u.Redacted() // the refusal must not repeat a password
		}
		return "", Errorf(CodeInvalid, "webhook URL %q must be an http:// or https:// URL without credentials in it", shown)
	}
	if u.Hostname() == "" {
		return "", Errorf(CodeInvalid, "webhook URL %s://%s names no host", u.Scheme, u.Host)
	}
	if err := r.checkWebhookHost(u); err != nil {
		return "", err
	}
	return u.String(), nil
}

func checkWebhookEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, Errorf(CodeInvalid, "a webhook needs at least one event type: %s", strings.Join(WebhookEvents, ", "))
	}
	var evs []string
	for _, e := range events {
		e = strings.TrimSpace(e)
		if !slices.Contains(WebhookEvents, e) {
			return nil, Errorf(CodeInvalid, "event type %q is not one of %s", e, strings.Join(WebhookEvents, ", "))
		}
		if !slices.Contains(evs, e) {
			evs = append(evs, e)
		}
	}
	return evs, nil
}

// ListWebhooks returns the subscriptions the actor may see.
func (r *Registry) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return nil, err
	}
	all, err := r.store.WebhookList(ctx)
	if err != nil {
		return nil, err
	}
	scope := orgScope(ctx)
	out := all[:0]
	for _, w := range all {
		if scope == "" || w.Org == scope {
			out = append(out, w)
		}
	}
	return out, nil
}

// webhookByRef finds a webhook by id, or by name among those the actor may
// see: names are unique within an organization only, so an
// organization-scoped admin's name is their organization's webhook, and a
// fleet admin naming one that several organizations use must say which by
// its id.
func (r *Registry) webhookByRef(ctx context.Context, ref string) (*Webhook, error) {
	all, err := r.ListWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	var named []int
	for i := range all {
		if all[i].ID == ref {
			return &all[i], nil
		}
		if all[i].Name == ref {
			named = append(named, i)
		}
	}
	switch len(named) {
	case 0:
		return nil, Errorf(CodeNotFound, "no webhook is named %q (tether webhook list shows them)", ref)
	case 1:
		return &all[named[0]], nil
	}
	var which []string
	for _, i := range named {
		org := "fleet-wide"
		if all[i].Org != "" {
			org = "organization " + all[i].Org
		}
		which = append(which, all[i].ID+" ("+org+")")
	}
	return nil, Errorf(CodeInvalid, "%d webhooks are named %q, in different organizations; name the one you mean by its id: %s",
		len(named), ref, strings.Join(which, ", "))
}

// DeleteWebhook removes a subscription and its pending deliveries.
func (r *Registry) DeleteWebhook(ctx context.Context, ref string) (*Webhook, error) {
	w, err := r.webhookByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	return w, r.store.WebhookDelete(ctx, WebhookDeleteParams{ID: w.ID, Audit: r.auditEntry(ctx, "webhook.delete", "", "webhook", w.ID, w.Name)})
}

// WebhookDeliveries returns a subscription's recent deliveries.
func (r *Registry) WebhookDeliveries(ctx context.Context, ref string, limit int) (*Webhook, []WebhookDelivery, error) {
	w, err := r.webhookByRef(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	ds, err := r.store.WebhookDeliveries(ctx, w.ID, limit)
	return w, ds, err
}

// PendingWebhookDeliveries counts the deliveries of every webhook not yet
// delivered nor given up on: what /metrics reports, so that a receiver that
// is down shows as a growing number long before WebhookRetryFor gives up.
// It is fleet-wide, so an organization-scoped admin may not read it.
func (r *Registry) PendingWebhookDeliveries(ctx context.Context) (int64, error) {
	if err := authorizeFleet(ctx, "the count of pending webhook deliveries"); err != nil {
		return 0, err
	}
	return r.store.WebhookDeliveriesPending(ctx)
}

// DueDelivery is a claimed delivery with what sending it needs.
type DueDelivery struct {
	WebhookDelivery
	Name   string // the webhook's, for serve's log
	URL    string
	Secret Secret
	// Previous is the secret a rotation replaced, while it still signs
	// (webhook rotate-secret --overlap); "" otherwise.
	Previous Secret
}

// ClaimWebhookDeliveries takes up to limit due deliveries for one sender,
// for at most hold (after which another sender may take them).
func (r *Registry) ClaimWebhookDeliveries(ctx context.Context, limit int, hold time.Duration) ([]DueDelivery, error) {
	now := r.Now()
	claimed, err := r.store.WebhookDeliveriesClaim(ctx, WebhookClaimParams{Now: now, Until: now.Add(hold), Limit: limit})
	if err != nil || len(claimed) == 0 {
		return nil, err
	}
	hooks, err := r.store.WebhookList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DueDelivery, 0, len(claimed))
	for _, d := range claimed {
		i := slices.IndexFunc(hooks, func(w Webhook) bool { return w.ID == d.WebhookID })
		if i < 0 {
			continue // deleted meanwhile, with its deliveries
		}
		w := &hooks[i]
		secret, err := r.cfg.Keyring.Open(w.SealedSecret, []byte(w.ID))
		if err != nil {
			return nil, Internal(err, fmt.Sprintf("open the secret of webhook %s (%s) (is this the key file the webhook was created with?)", w.Name, w.ID))
		}
		due := DueDelivery{WebhookDelivery: d, Name: w.Name, URL: w.URL, Secret: Secret(secret)}
		if len(w.SealedPreviousSecret) > 0 && now.Before(w.PreviousSecretUntil) {
			previous, err := r.cfg.Keyring.Open(w.SealedPreviousSecret, []byte(w.ID))
			if err != nil {
				return nil, Internal(err, fmt.Sprintf("open the previous secret of webhook %s (%s) (is this the key file the webhook was created with?)", w.Name, w.ID))
			}
			due.Previous = Secret(previous)
		}
		out = append(out, due)
	}
	return out, nil
}

// RecordWebhookAttempt records how sending a claimed delivery went: status
// is the receiver's HTTP status (0 when none came), errText why it failed.
// A 2xx delivers it; otherwise it is tried again with exponential backoff
// and jitter, until WebhookRetryFor after its creation.
func (r *Registry) RecordWebhookAttempt(ctx context.Context, d *DueDelivery, status int, errText string) error {
	now := r.Now()
	p := WebhookRecordParams{ID: d.ID, Attempts: d.Attempts, ClaimedUntil: d.NextAt, Status: status, Error: truncateText(errText, 500)}
	switch {
	case status >= 200 && status < 300:
		p.State, p.FinishedAt = DeliveryDelivered, now
	case now.Sub(d.CreatedAt) >= WebhookRetryFor:
		p.State, p.FinishedAt = DeliveryFailed, now
	default:
		p.State, p.NextAt = DeliveryPending, now.Add(webhookBackoff(d.Attempts))
	}
	return r.store.WebhookDeliveryRecord(ctx, p)
}

// webhookBackoff is the wait after the attempts-th failure: 5 s doubling up
// to an hour, each with ±50 % jitter so that a receiver coming back is not
// hit by every sender at once.
func webhookBackoff(attempts int) time.Duration {
	d := webhookFirstBackoff
	for i := 1; i < attempts && d < webhookMaxBackoff; i++ {
		d *= 2
	}
	d = min(d, webhookMaxBackoff)
	return d/2 + rand.N(d)
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
