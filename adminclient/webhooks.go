package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Webhook is a subscription: changes of its event types are POSTed to its
// URL, signed as Standard Webhooks sign them (docs/webhooks.md).
type Webhook struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Org       string    `json:"org"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy"`
	Version   int64     `json:"version"`
	// PreviousSecretUntil is when the secret a rotation replaced stops
	// signing (zero: none does).
	PreviousSecretUntil time.Time `json:"previousSecretUntil"`
}

// WebhookSpec is what CreateWebhook takes.
type WebhookSpec struct {
	Name   string   `json:"name"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Org    string   `json:"org,omitempty"`
}

// WebhookEdit is what UpdateWebhook changes; nil fields are kept.
type WebhookEdit struct {
	Name   *string  `json:"name,omitempty"`
	URL    *string  `json:"url,omitempty"`
	Events []string `json:"events,omitempty"`
}

// WebhookDelivery is one message to one webhook, and how sending it went.
type WebhookDelivery struct {
	ID        int64  `json:"id"`
	WebhookID string `json:"webhookId"`
	// RedeliveryOf is, for a redelivery, the id of the delivery that first
	// sent its message (receivers see wd-<RedeliveryOf> as webhook-id).
	RedeliveryOf  int64           `json:"redeliveryOf"`
	Event         string          `json:"event"`
	ClusterID     string          `json:"clusterId"`
	SubjectID     string          `json:"subjectId"`
	Data          json.RawMessage `json:"data"`
	CreatedAt     time.Time       `json:"createdAt"`
	State         string          `json:"state"` // pending, delivered, failed
	Attempts      int             `json:"attempts"`
	NextAttemptAt time.Time       `json:"nextAttemptAt"`
	LastStatus    int             `json:"lastStatus"`
	LastError     string          `json:"lastError"`
	FinishedAt    time.Time       `json:"finishedAt"`
}

// DeliveryID is the delivery's id as tether shows and takes it: wd-<n>.
func (d *WebhookDelivery) DeliveryID() string { return "wd-" + strconv.FormatInt(d.ID, 10) }

// Attempted reports whether an attempt to send the delivery has ended
// (delivered, failed for good, or failed and to be tried again).
func (d *WebhookDelivery) Attempted() bool {
	return d.State != "pending" || d.LastStatus != 0 || d.LastError != ""
}

// ListWebhooks returns the webhooks, by name.
func (c *Client) ListWebhooks(ctx context.Context, opts ...CallOption) ([]Webhook, error) {
	var out Page[Webhook]
	return out.Items, c.call(ctx, request{method: http.MethodGet, path: "/webhooks", out: &out}, opts)
}

// GetWebhook returns a webhook by id or name.
func (c *Client) GetWebhook(ctx context.Context, webhook string, opts ...CallOption) (*Webhook, error) {
	var out Webhook
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("webhooks", webhook), out: &out}, opts)
}

// CreateWebhook subscribes a URL to events and returns the webhook with its
// signing secret (whsec_...), shown this once.
func (c *Client) CreateWebhook(ctx context.Context, spec WebhookSpec, opts ...CallOption) (*Webhook, string, error) {
	var out struct {
		Webhook
		Secret string `json:"secret"`
	}
	if err := c.call(ctx, request{method: http.MethodPost, path: "/webhooks", body: spec, out: &out}, opts); err != nil {
		return nil, "", err
	}
	return &out.Webhook, out.Secret, nil
}

// UpdateWebhook changes a webhook if it is still at version (GetWebhook's
// Version); a concurrent change is an *Error with code "conflict".
func (c *Client) UpdateWebhook(ctx context.Context, webhook string, version int64, edit WebhookEdit, opts ...CallOption) (*Webhook, error) {
	var out Webhook
	h := http.Header{}
	h.Set("If-Match", `"`+strconv.FormatInt(version, 10)+`"`)
	return &out, c.call(ctx, request{method: http.MethodPatch, path: path("webhooks", webhook), body: edit, header: h, out: &out}, opts)
}

// DeleteWebhook deletes a webhook and its pending deliveries.
func (c *Client) DeleteWebhook(ctx context.Context, webhook string, opts ...CallOption) error {
	return c.call(ctx, request{method: http.MethodDelete, path: path("webhooks", webhook)}, opts)
}

// RotateWebhookSecret gives a webhook a new secret, returned this once. For
// overlap after it, deliveries are signed with the previous secret too; a
// negative overlap asks for none (the previous secret stops signing at
// once), zero for the server's default (24 h).
func (c *Client) RotateWebhookSecret(ctx context.Context, webhook string, overlap time.Duration, opts ...CallOption) (*Webhook, string, error) {
	var body any
	switch {
	case overlap < 0:
		body = map[string]string{"overlap": "0s"}
	case overlap > 0:
		body = map[string]string{"overlap": overlap.String()}
	}
	var out struct {
		Webhook
		Secret string `json:"secret"`
	}
	if err := c.call(ctx, request{method: http.MethodPost, path: path("webhooks", webhook, "rotate-secret"), body: body, out: &out}, opts); err != nil {
		return nil, "", err
	}
	return &out.Webhook, out.Secret, nil
}

// TestWebhook queues a webhook.test delivery to the webhook; poll
// GetWebhookDelivery until Attempted to learn how it went.
func (c *Client) TestWebhook(ctx context.Context, webhook string, opts ...CallOption) (*WebhookDelivery, error) {
	var out WebhookDelivery
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("webhooks", webhook, "test"), out: &out}, opts)
}

// WebhookDeliveries returns a webhook's deliveries, newest first (limit
// zero: the server's default).
func (c *Client) WebhookDeliveries(ctx context.Context, webhook string, limit int, opts ...CallOption) ([]WebhookDelivery, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out Page[WebhookDelivery]
	return out.Items, c.call(ctx, request{method: http.MethodGet, path: path("webhooks", webhook, "deliveries"), query: q, out: &out}, opts)
}

// GetWebhookDelivery returns a delivery by id (wd-<n>).
func (c *Client) GetWebhookDelivery(ctx context.Context, id string, opts ...CallOption) (*WebhookDelivery, error) {
	var out WebhookDelivery
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("webhook-deliveries", id), out: &out}, opts)
}

// RedeliverWebhookDelivery sends a delivery that ended again, with the same
// webhook-id (receivers that processed it ignore it); it returns the new
// delivery.
func (c *Client) RedeliverWebhookDelivery(ctx context.Context, id string, opts ...CallOption) (*WebhookDelivery, error) {
	var out WebhookDelivery
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("webhook-deliveries", id, "redeliver"), out: &out}, opts)
}
