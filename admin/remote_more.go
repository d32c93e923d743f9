package admin

import (
	"bytes"
	"context"
	"encoding/pem"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// Remote's rollouts, webhooks, feeds and CA.

func (r *Remote) CreateRollout(ctx context.Context, spec registry.RolloutSpec) (*registry.Rollout, error) {
	// The payload travels inside the request's JSON: one that is not JSON
	// is refused here, in the registry's words.
	if err := registry.PayloadJSONError(spec.Payload); err != nil {
		return nil, err
	}
	body := adminclient.RolloutSpec{Name: spec.Name, Selector: spec.Selector, Kind: string(spec.Kind),
		Payload: bytes.TrimSpace(spec.Payload), MaxParallel: spec.MaxParallel, MaxFailures: spec.MaxFailures,
		Order: string(spec.Order), DryRun: spec.DryRun}
	if spec.PauseBetween > 0 {
		body.PauseBetween = spec.PauseBetween.String()
	}
	var ro registry.Rollout
	_, err := r.c.CreateRollout(ctx, body, adminclient.Into(&ro))
	return one(r, &ro, err)
}

// ListRollouts is every page of the rollouts in p's states (p.Limit
// aside).
func (r *Remote) ListRollouts(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error) {
	q := adminclient.RolloutQuery{Limit: remotePage}
	for _, s := range p.States {
		q.States = append(q.States, string(s))
	}
	return allPages[registry.Rollout](r, func(cursor string, into adminclient.CallOption) error {
		q.Cursor = cursor
		_, err := r.c.ListRollouts(ctx, q, into)
		return err
	})
}

func (r *Remote) GetRollout(ctx context.Context, ref string) (*registry.Rollout, error) {
	var ro registry.Rollout
	_, err := r.c.GetRollout(ctx, ref, adminclient.Into(&ro))
	return one(r, &ro, err)
}

func (r *Remote) rolloutAction(ctx context.Context, ref, action, reason string) (*registry.Rollout, error) {
	var ro registry.Rollout
	_, err := r.c.RolloutAction(ctx, ref, action, reason, adminclient.Into(&ro))
	return one(r, &ro, err)
}

func (r *Remote) PauseRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.rolloutAction(ctx, ref, "pause", reason)
}

func (r *Remote) ResumeRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.rolloutAction(ctx, ref, "resume", reason)
}

func (r *Remote) AbortRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.rolloutAction(ctx, ref, "abort", reason)
}

func (r *Remote) RetryFailedRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.rolloutAction(ctx, ref, "retry-failed", reason)
}

// StepRollout reads the rollout: the server advances it.
func (r *Remote) StepRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	return r.GetRollout(ctx, id)
}

// secretAnswer is a webhook with its secret, as creating one or rotating
// its secret answers it.
type secretAnswer struct {
	registry.Webhook
	Secret string `json:"secret"`
}

func (r *Remote) CreateWebhook(ctx context.Context, name, url string, events []string, org string) (*registry.Webhook, registry.Secret, error) {
	var out secretAnswer
	_, _, err := r.c.CreateWebhook(ctx, adminclient.WebhookSpec{Name: name, URL: url, Events: events, Org: org}, adminclient.Into(&out))
	if err != nil {
		return nil, "", r.fail(err)
	}
	return &out.Webhook, registry.Secret(out.Secret), nil
}

func (r *Remote) ListWebhooks(ctx context.Context) ([]registry.Webhook, error) {
	var page adminclient.Page[registry.Webhook]
	if _, err := r.c.ListWebhooks(ctx, adminclient.Into(&page)); err != nil {
		return nil, r.fail(err)
	}
	return page.Items, nil
}

func (r *Remote) GetWebhook(ctx context.Context, ref string) (*registry.Webhook, error) {
	var w registry.Webhook
	_, err := r.c.GetWebhook(ctx, ref, adminclient.Into(&w))
	return one(r, &w, err)
}

func (r *Remote) UpdateWebhook(ctx context.Context, ref string, version int64, edit registry.WebhookEdit) (*registry.Webhook, error) {
	var w registry.Webhook
	_, err := r.c.UpdateWebhook(ctx, ref, version, adminclient.WebhookEdit{Name: edit.Name, URL: edit.URL, Events: edit.Events},
		adminclient.Into(&w))
	return one(r, &w, err)
}

func (r *Remote) DeleteWebhook(ctx context.Context, ref string) (*registry.Webhook, error) {
	var w registry.Webhook
	err := r.c.DeleteWebhook(ctx, ref, adminclient.Into(&w))
	return one(r, &w, err)
}

// RotateWebhookSecret takes overlap as the registry does: zero retires the
// previous secret at once (the client's negative overlap).
func (r *Remote) RotateWebhookSecret(ctx context.Context, ref string, overlap time.Duration) (*registry.Webhook, registry.Secret, error) {
	if overlap <= 0 {
		overlap = -1
	}
	var out secretAnswer
	if _, _, err := r.c.RotateWebhookSecret(ctx, ref, overlap, adminclient.Into(&out)); err != nil {
		return nil, "", r.fail(err)
	}
	return &out.Webhook, registry.Secret(out.Secret), nil
}

func (r *Remote) SendTestWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error) {
	var d registry.WebhookDelivery
	_, err := r.c.TestWebhook(ctx, ref, adminclient.Into(&d))
	return one(r, &d, err)
}

// WebhookDeliveries answers no subscription record: the API's answer is
// the deliveries alone.
func (r *Remote) WebhookDeliveries(ctx context.Context, ref string, limit int) (*registry.Webhook, []registry.WebhookDelivery, error) {
	var page adminclient.Page[registry.WebhookDelivery]
	if _, err := r.c.WebhookDeliveries(ctx, ref, limit, adminclient.Into(&page)); err != nil {
		return nil, nil, r.fail(err)
	}
	return nil, page.Items, nil
}

// GetWebhookDelivery answers no webhook record: the API's answer is the
// delivery alone.
func (r *Remote) GetWebhookDelivery(ctx context.Context, ref string) (*registry.WebhookDelivery, *registry.Webhook, error) {
	var d registry.WebhookDelivery
	if _, err := r.c.GetWebhookDelivery(ctx, ref, adminclient.Into(&d)); err != nil {
		return nil, nil, r.fail(err)
	}
	return &d, nil, nil
}

func (r *Remote) RedeliverWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error) {
	var d registry.WebhookDelivery
	_, err := r.c.RedeliverWebhookDelivery(ctx, ref, adminclient.Into(&d))
	return one(r, &d, err)
}

// feedQuery is the id paging of the events and audit lists: at most the
// API's page (and that when no limit is given).
func feedQuery(cluster string, before, after int64, limit int) adminclient.FeedQuery {
	if limit <= 0 || limit > remotePage {
		limit = remotePage
	}
	return adminclient.FeedQuery{Cluster: cluster, BeforeID: before, AfterID: after, Limit: limit}
}

func (r *Remote) ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error) {
	q := adminclient.EventQuery{FeedQuery: feedQuery(p.ClusterID, p.BeforeID, p.AfterID, p.Limit), Kinds: p.Kinds, FalseOnly: p.FalseOnly}
	var page adminclient.Page[registry.Event]
	if _, err := r.c.ListEvents(ctx, q, adminclient.Into(&page)); err != nil {
		return nil, r.fail(err)
	}
	return page.Items, nil
}

func (r *Remote) ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error) {
	q := adminclient.AuditQuery{FeedQuery: feedQuery(p.ClusterID, p.BeforeID, p.AfterID, p.Limit), Action: p.Action}
	var page adminclient.Page[registry.AuditEntry]
	if _, err := r.c.QueryAudit(ctx, q, adminclient.Into(&page)); err != nil {
		return nil, r.fail(err)
	}
	return page.Items, nil
}

// remoteCA is a CA as the API shows it: the record, with its certificate
// as PEM.
type remoteCA struct {
	registry.CertificateAuthority
	Certificate string `json:"certificate"`
}

func (c remoteCA) record() (registry.CertificateAuthority, error) {
	ca := c.CertificateAuthority
	block, _ := pem.Decode([]byte(c.Certificate))
	if block == nil || block.Type != "CERTIFICATE" {
		return ca, registry.Errorf(registry.CodeInternal, "tether answered CA %s without a PEM certificate", ca.ID)
	}
	ca.CertDER = block.Bytes
	return ca, nil
}

func (r *Remote) InitCA(ctx context.Context, replace bool) (*registry.CertificateAuthority, error) {
	var out remoteCA
	if _, err := r.c.InitCA(ctx, replace, adminclient.Into(&out)); err != nil {
		return nil, r.fail(err)
	}
	ca, err := out.record()
	return &ca, err
}

func (r *Remote) CAs(ctx context.Context) ([]registry.CertificateAuthority, error) {
	var page adminclient.Page[remoteCA]
	if _, err := r.c.CAs(ctx, adminclient.Into(&page)); err != nil {
		return nil, r.fail(err)
	}
	cas := make([]registry.CertificateAuthority, len(page.Items))
	for i, c := range page.Items {
		var err error
		if cas[i], err = c.record(); err != nil {
			return nil, err
		}
	}
	return cas, nil
}
