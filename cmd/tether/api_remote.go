package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/tui"
)

// remoteAPI is adminAPI over a tether's admin API: the console's remote
// backend, and the calls only the CLI makes.
type remoteAPI struct {
	*tui.Remote
	c *adminclient.Client
}

func (r *remoteAPI) call(ctx context.Context, method, path string, q url.Values, body, out any, opts ...adminclient.CallOption) error {
	return remoteError(r.c.Call(ctx, method, path, q, body, out, opts...))
}

// remoteError gives an admin API refusal the registry's shape: its code and
// message, which the CLI prints and maps to exit codes as it does locally.
func remoteError(err error) error {
	var ae *adminclient.Error
	if errors.As(err, &ae) {
		return registry.Errorf(registry.Code(ae.Code), "%s", ae.Message)
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return registry.Errorf(registry.CodeUnavailable, "cannot reach tether's admin API: %v", err)
	}
	return err
}

func apiPath(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + url.PathEscape(p))
	}
	return b.String()
}

func (r *remoteAPI) ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error) {
	q := url.Values{"limit": {"1000"}}
	for k, v := range map[string]string{"state": string(p.State), "org": p.Organization, "selector": p.Selector} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out []registry.Cluster
	for {
		var page struct {
			Items      []registry.Cluster `json:"items"`
			NextCursor string             `json:"nextCursor"`
		}
		if err := r.call(ctx, http.MethodGet, "/clusters", q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

func (r *remoteAPI) QueueHealth(ctx context.Context, cluster string) (*registry.QueueHealth, error) {
	var q registry.QueueHealth
	if err := r.call(ctx, http.MethodGet, apiPath("clusters", cluster, "queue"), nil, nil, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

func (r *remoteAPI) FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	var page struct {
		Items []registry.QueueHealth `json:"items"`
	}
	err := r.call(ctx, http.MethodGet, "/queues", nil, nil, &page)
	return page.Items, err
}

func (r *remoteAPI) SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, bool, error) {
	// The payload travels inside the request's JSON: one that is not JSON
	// is refused here, in the registry's words.
	if err := registry.PayloadJSONError(s.Payload); err != nil {
		return nil, false, err
	}
	body := map[string]any{"cluster": s.ClusterID, "kind": s.Kind}
	if p := bytes.TrimSpace(s.Payload); len(p) > 0 {
		body["payload"] = json.RawMessage(p)
	}
	if s.IdempotencyKey != "" {
		body["idempotencyKey"] = s.IdempotencyKey
	}
	if s.ExpiresIn > 0 {
		body["expiresIn"] = s.ExpiresIn.String()
	}
	var j registry.Job
	replayed := false
	err := r.call(ctx, http.MethodPost, "/jobs", nil, body, &j,
		adminclient.OnResponse(func(resp *http.Response) { replayed = resp.Header.Get("Idempotent-Replayed") == "true" }))
	if err != nil {
		return nil, false, err
	}
	return &j, !replayed, nil
}

func (r *remoteAPI) ListStuckJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	q := url.Values{"stuck": {"true"}}
	if len(p.ClusterIDs) > 0 {
		q.Set("cluster", strings.Join(p.ClusterIDs, ","))
	}
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, st := range p.States {
			states[i] = string(st)
		}
		q.Set("state", strings.Join(states, ","))
	}
	if p.Kind != "" {
		q.Set("kind", string(p.Kind))
	}
	if p.Search != "" {
		q.Set("search", p.Search)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(p.Limit, 1000)))
	}
	var page struct {
		Items []registry.Job `json:"items"`
	}
	err := r.call(ctx, http.MethodGet, "/jobs", q, nil, &page)
	return page.Items, err
}

// WaitJob asks the server to hold the answer until the job ends, again
// while it has not and ctx allows.
func (r *remoteAPI) WaitJob(ctx context.Context, id string) (*registry.Job, error) {
	for {
		var j registry.Job
		if err := r.call(ctx, http.MethodGet, apiPath("jobs", id), url.Values{"wait": {"300"}}, nil, &j); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if j.State.Terminal() {
			return &j, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (r *remoteAPI) RetryJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var j registry.Job
	if err := r.call(ctx, http.MethodPost, apiPath("jobs", id, "retry"), nil, body, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

func (r *remoteAPI) DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var j registry.Job
	if err := r.call(ctx, http.MethodDelete, apiPath("jobs", id), nil, body, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ModifyCluster applies edit to the cluster as it is and writes it with
// If-Match, again on the version a concurrent change left: what the
// registry's ModifyCluster does, over HTTP.
func (r *remoteAPI) ModifyCluster(ctx context.Context, ref string, edit func(*registry.ClusterSpec) error) (*registry.Cluster, error) {
	const attempts = 5
	var err error
	for range attempts {
		var c *registry.Cluster
		if c, err = r.GetCluster(ctx, ref); err != nil {
			return nil, err
		}
		spec := c.ClusterSpec
		if err := edit(&spec); err != nil {
			return nil, err
		}
		var updated *registry.Cluster
		updated, err = r.UpdateCluster(ctx, c.ID, c.Version, spec)
		if registry.ErrorCode(err) != registry.CodeConflict {
			return updated, err
		}
		// Only a lost compare-and-swap is worth another try.
		if now, gerr := r.GetCluster(ctx, c.ID); gerr != nil || now.Version == c.Version {
			return nil, err
		}
	}
	return nil, err
}

func (r *remoteAPI) RotateSigningKey(ctx context.Context, ref string, overlap time.Duration) (*registry.SigningKey, error) {
	var body any
	if overlap > 0 {
		body = map[string]string{"overlap": overlap.String()}
	}
	var out struct {
		ClusterID string       `json:"clusterId"`
		CreatedAt time.Time    `json:"createdAt"`
		Key       registry.JWK `json:"key"`
	}
	if err := r.call(ctx, http.MethodPost, apiPath("clusters", ref, "signing-keys", "rotate"), nil, body, &out); err != nil {
		return nil, err
	}
	pub, err := out.Key.Ed25519PublicKey()
	if err != nil {
		return nil, registry.Errorf(registry.CodeInternal, "tether answered a signing key that is not Ed25519: %v", err)
	}
	return &registry.SigningKey{ID: out.Key.Kid, ClusterID: out.ClusterID, PublicKey: pub, CreatedAt: out.CreatedAt,
		EndorsedBy: out.Key.EndorsedBy, Endorsement: out.Key.Endorsement}, nil
}

// RevokeToken names the token by its id: given the secret itself, it sends
// only the id the secret carries (a path ends up in logs).
func (r *remoteAPI) RevokeToken(ctx context.Context, id, reason string) (*registry.RegistrationToken, error) {
	var t registry.RegistrationToken
	err := r.call(ctx, http.MethodPost, apiPath("registration-tokens", registry.RegistrationTokenID(id), "revoke"), nil, reasonBody(reason), &t)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

func (r *remoteAPI) ForceRotationOutcome(ctx context.Context, cluster, reason string) (registry.ForcedRotation, error) {
	var out struct {
		Credentials          int       `json:"credentials"`
		RotationGraceSeconds int64     `json:"rotationGraceSeconds"`
		GraceUntil           time.Time `json:"graceUntil"`
		Warning              string    `json:"warning"`
	}
	err := r.call(ctx, http.MethodPost, apiPath("clusters", cluster, "credentials", "rotate"), nil, reasonBody(reason), &out)
	return registry.ForcedRotation{Credentials: out.Credentials, Grace: time.Duration(out.RotationGraceSeconds) * time.Second,
		GraceUntil: out.GraceUntil, Warning: out.Warning}, err
}

func reasonBody(reason string) any {
	if reason == "" {
		return nil
	}
	return map[string]string{"reason": reason}
}

func (r *remoteAPI) CreateRollout(ctx context.Context, spec registry.RolloutSpec) (*registry.Rollout, error) {
	// The payload travels inside the request's JSON: one that is not JSON
	// is refused here, in the registry's words.
	if err := registry.PayloadJSONError(spec.Payload); err != nil {
		return nil, err
	}
	body := map[string]any{"name": spec.Name, "selector": spec.Selector, "kind": spec.Kind, "maxParallel": spec.MaxParallel,
		"maxFailures": spec.MaxFailures, "order": spec.Order, "dryRun": spec.DryRun}
	if p := bytes.TrimSpace(spec.Payload); len(p) > 0 {
		body["payload"] = json.RawMessage(p)
	}
	if spec.PauseBetween > 0 {
		body["pauseBetween"] = spec.PauseBetween.String()
	}
	var ro registry.Rollout
	if err := r.call(ctx, http.MethodPost, "/rollouts", nil, body, &ro); err != nil {
		return nil, err
	}
	return &ro, nil
}

func (r *remoteAPI) ListRollouts(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error) {
	q := url.Values{"limit": {"1000"}}
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, s := range p.States {
			states[i] = string(s)
		}
		q.Set("state", strings.Join(states, ","))
	}
	out := []registry.Rollout{} // none is [], as over --db
	for {
		var page struct {
			Items      []registry.Rollout `json:"items"`
			NextCursor string             `json:"nextCursor"`
		}
		if err := r.call(ctx, http.MethodGet, "/rollouts", q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

func (r *remoteAPI) PauseRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.RolloutAction(ctx, ref, "pause", reason)
}

func (r *remoteAPI) ResumeRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.RolloutAction(ctx, ref, "resume", reason)
}

func (r *remoteAPI) AbortRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.RolloutAction(ctx, ref, "abort", reason)
}

func (r *remoteAPI) RetryFailedRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return r.RolloutAction(ctx, ref, "retry-failed", reason)
}

// StepRollout reads the rollout: the server advances it.
func (r *remoteAPI) StepRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	return r.GetRollout(ctx, id)
}

func (r *remoteAPI) CreateWebhook(ctx context.Context, name, hookURL string, events []string, org string) (*registry.Webhook, registry.Secret, error) {
	body := map[string]any{"name": name, "url": hookURL, "events": events}
	if org != "" {
		body["org"] = org
	}
	var out struct {
		registry.Webhook
		Secret string `json:"secret"`
	}
	if err := r.call(ctx, http.MethodPost, "/webhooks", nil, body, &out); err != nil {
		return nil, "", err
	}
	return &out.Webhook, registry.Secret(out.Secret), nil
}

func (r *remoteAPI) ListWebhooks(ctx context.Context) ([]registry.Webhook, error) {
	var page struct {
		Items []registry.Webhook `json:"items"`
	}
	err := r.call(ctx, http.MethodGet, "/webhooks", nil, nil, &page)
	return page.Items, err
}

func (r *remoteAPI) DeleteWebhook(ctx context.Context, ref string) (*registry.Webhook, error) {
	var w registry.Webhook
	if err := r.call(ctx, http.MethodDelete, apiPath("webhooks", ref), nil, nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// WebhookDeliveries answers no subscription record: the API's answer is
// the deliveries alone, and they are what the command shows.
func (r *remoteAPI) WebhookDeliveries(ctx context.Context, ref string, limit int) (*registry.Webhook, []registry.WebhookDelivery, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var page struct {
		Items []registry.WebhookDelivery `json:"items"`
	}
	err := r.call(ctx, http.MethodGet, apiPath("webhooks", ref, "deliveries"), q, nil, &page)
	return nil, page.Items, err
}

func (r *remoteAPI) GetWebhook(ctx context.Context, ref string) (*registry.Webhook, error) {
	var w registry.Webhook
	if err := r.call(ctx, http.MethodGet, apiPath("webhooks", ref), nil, nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

func (r *remoteAPI) UpdateWebhook(ctx context.Context, ref string, version int64, edit registry.WebhookEdit) (*registry.Webhook, error) {
	body := map[string]any{}
	if edit.Name != nil {
		body["name"] = *edit.Name
	}
	if edit.URL != nil {
		body["url"] = *edit.URL
	}
	if edit.Events != nil {
		body["events"] = edit.Events
	}
	h := http.Header{}
	h.Set("If-Match", `"`+strconv.FormatInt(version, 10)+`"`)
	var w registry.Webhook
	if err := r.call(ctx, http.MethodPatch, apiPath("webhooks", ref), nil, body, &w, adminclient.WithHeader(h)); err != nil {
		return nil, err
	}
	return &w, nil
}

func (r *remoteAPI) RotateWebhookSecret(ctx context.Context, ref string, overlap time.Duration) (*registry.Webhook, registry.Secret, error) {
	var out struct {
		registry.Webhook
		Secret string `json:"secret"`
	}
	if err := r.call(ctx, http.MethodPost, apiPath("webhooks", ref, "rotate-secret"), nil, map[string]string{"overlap": overlap.String()}, &out); err != nil {
		return nil, "", err
	}
	return &out.Webhook, registry.Secret(out.Secret), nil
}

func (r *remoteAPI) SendTestWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error) {
	var d registry.WebhookDelivery
	if err := r.call(ctx, http.MethodPost, apiPath("webhooks", ref, "test"), nil, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (r *remoteAPI) GetWebhookDelivery(ctx context.Context, ref string) (*registry.WebhookDelivery, *registry.Webhook, error) {
	var d registry.WebhookDelivery
	if err := r.call(ctx, http.MethodGet, apiPath("webhook-deliveries", ref), nil, nil, &d); err != nil {
		return nil, nil, err
	}
	return &d, nil, nil
}

func (r *remoteAPI) RedeliverWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error) {
	var d registry.WebhookDelivery
	if err := r.call(ctx, http.MethodPost, apiPath("webhook-deliveries", ref, "redeliver"), nil, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (r *remoteAPI) CreateAdminToken(ctx context.Context, name string, role registry.Role, org string, ttl time.Duration) (*registry.IssuedAdminToken, error) {
	return r.IssueAdminToken(ctx, registry.AdminTokenSpec{Name: name, Role: role, Org: org, TTL: ttl})
}

func (r *remoteAPI) IssueAdminToken(ctx context.Context, spec registry.AdminTokenSpec) (*registry.IssuedAdminToken, error) {
	body := map[string]any{"name": spec.Name, "role": spec.Role}
	if spec.Org != "" {
		body["org"] = spec.Org
	}
	if spec.TTL > 0 {
		body["expires"] = spec.TTL.String()
	}
	if len(spec.SSHKeys) > 0 {
		body["sshKeys"] = spec.SSHKeys
	}
	var out struct {
		registry.AdminToken
		ExpiresAt *time.Time `json:"expiresAt"`
		Token     string     `json:"token"`
	}
	if err := r.call(ctx, http.MethodPost, "/admin-tokens", nil, body, &out); err != nil {
		return nil, err
	}
	t := out.AdminToken
	if out.ExpiresAt != nil {
		t.ExpiresAt = *out.ExpiresAt
	}
	return &registry.IssuedAdminToken{Token: t, Secret: registry.Secret(out.Token)}, nil
}

func (r *remoteAPI) SetAdminTokenSSHKeys(ctx context.Context, ref string, keys []string) (*registry.AdminToken, error) {
	if keys == nil {
		keys = []string{}
	}
	var t registry.AdminToken
	if err := r.call(ctx, http.MethodPatch, apiPath("admin-tokens", ref), nil, map[string]any{"sshKeys": keys}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

func (r *remoteAPI) ListAdminTokens(ctx context.Context) ([]registry.AdminToken, error) {
	var page struct {
		Items []registry.AdminToken `json:"items"`
	}
	err := r.call(ctx, http.MethodGet, "/admin-tokens", nil, nil, &page)
	return page.Items, err
}

func (r *remoteAPI) RevokeAdminToken(ctx context.Context, ref, reason string) (*registry.AdminToken, error) {
	var q url.Values
	if reason != "" {
		q = url.Values{"reason": {reason}}
	}
	var t registry.AdminToken
	if err := r.call(ctx, http.MethodDelete, apiPath("admin-tokens", ref), q, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// remoteCA is a CA as the admin API shows it (GET and POST /ca).
type remoteCA struct {
	registry.CertificateAuthority
	Certificate string `json:"certificate"`
}

func (c remoteCA) record() (registry.CertificateAuthority, error) {
	ca := c.CertificateAuthority
	block, _ := pem.Decode([]byte(c.Certificate))
	if block == nil {
		return ca, registry.Errorf(registry.CodeInternal, "tether answered CA %s without a PEM certificate", ca.ID)
	}
	ca.CertDER = block.Bytes
	return ca, nil
}

func (r *remoteAPI) InitCA(ctx context.Context, replace bool) (*registry.CertificateAuthority, error) {
	var out remoteCA
	if err := r.call(ctx, http.MethodPost, apiPath("ca"), nil, map[string]bool{"replace": replace}, &out); err != nil {
		return nil, err
	}
	ca, err := out.record()
	return &ca, err
}

func (r *remoteAPI) CAs(ctx context.Context) ([]registry.CertificateAuthority, error) {
	var out struct {
		Items []remoteCA `json:"items"`
	}
	if err := r.call(ctx, http.MethodGet, apiPath("ca"), nil, nil, &out); err != nil {
		return nil, err
	}
	cas := make([]registry.CertificateAuthority, len(out.Items))
	for i, c := range out.Items {
		var err error
		if cas[i], err = c.record(); err != nil {
			return nil, err
		}
	}
	return cas, nil
}
