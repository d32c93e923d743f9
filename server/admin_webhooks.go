package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The admin API's webhook subscriptions (admin role).

func (s *Server) adminListWebhooks(c *call) error {
	hooks, err := s.reg.ListWebhooks(c.ctx)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.Webhook]{Items: hooks})
}

func (s *Server) adminCreateWebhook(c *call) error {
	var b struct {
		Name   string   `json:"name"`
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Org    string   `json:"org"`
	}
	if err := decodeAdmin(c, &b, true); err != nil {
		return err
	}
	w, secret, err := s.reg.CreateWebhook(c.ctx, b.Name, b.URL, b.Events, b.Org)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusCreated, struct {
		*registry.Webhook
		Secret string `json:"secret"`
	}{w, secret.Reveal()}) // shown once, by design
}

func (s *Server) adminDeleteWebhook(c *call) error {
	w, err := s.reg.DeleteWebhook(c.ctx, c.params["w"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, w)
}

func (s *Server) adminWebhookDeliveries(c *call) error {
	limit := 0
	if v := c.r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return errf(registry.CodeInvalid, "limit %q must be a whole number from 1 to %d", v, maxPageSize)
		}
		limit = n
	}
	_, ds, err := s.reg.WebhookDeliveries(c.ctx, c.params["w"], limit)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.WebhookDelivery]{Items: ds})
}

func (s *Server) adminGetWebhook(c *call) error {
	w, err := s.reg.GetWebhook(c.ctx, c.params["w"])
	if err != nil {
		return err
	}
	setVersion(c.w, w.Version)
	return writeJSON(c.w, http.StatusOK, w)
}

// adminPatchWebhook changes a webhook's name, URL or events with
// compare-and-swap on If-Match, as a cluster's PATCH does. Every field is
// replaced whole, so a JSON body and an RFC 7396 merge patch mean the same;
// null removes nothing (each field is required).
func (s *Server) adminPatchWebhook(c *call) error {
	match := strings.Trim(strings.TrimPrefix(strings.TrimSpace(c.r.Header.Get("If-Match")), "W/"), `"`)
	if match == "" {
		return errf(CodePreconditionRequired, "PATCH needs If-Match: <version>, the version you read (the ETag of GET %s/webhooks/{webhook}), so that a concurrent change is not overwritten", adminPrefix)
	}
	version, err := strconv.ParseInt(match, 10, 64)
	if err != nil || version < 1 {
		return errf(registry.CodeInvalid, "If-Match %q is not a version: versions are whole numbers from 1", match)
	}
	var b struct {
		Name   *string  `json:"name"`
		URL    *string  `json:"url"`
		Events []string `json:"events"`
	}
	if isMergePatch(c.r.Header.Get("Content-Type")) {
		err = decodeAdminBody(c.body, &b, true)
	} else {
		err = decodeAdmin(c, &b, true)
	}
	if err != nil {
		return err
	}
	for _, f := range []string{"name", "url", "events"} {
		if patchIsNull(c.body, f) {
			return errf(registry.CodeInvalid, "%s cannot be removed from a webhook; give its new value", f)
		}
	}
	w, err := s.reg.UpdateWebhook(c.ctx, c.params["w"], version, registry.WebhookEdit{Name: b.Name, URL: b.URL, Events: b.Events})
	if err != nil {
		return err
	}
	setVersion(c.w, w.Version)
	return writeJSON(c.w, http.StatusOK, w)
}

// patchIsNull reports whether a JSON object body sets the field name to
// null.
func patchIsNull(body []byte, name string) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return false
	}
	for k, v := range fields {
		if strings.EqualFold(k, name) && string(bytes.TrimSpace(v)) == "null" {
			return true
		}
	}
	return false
}

// adminRotateWebhookSecret answers the new secret, shown this once. The
// overlap is 24 h when absent; "0s" retires the previous secret at once.
func (s *Server) adminRotateWebhookSecret(c *call) error {
	var b struct {
		Overlap *string `json:"overlap"`
	}
	if err := decodeAdmin(c, &b, false); err != nil {
		return err
	}
	overlap := registry.DefaultWebhookSecretOverlap
	if b.Overlap != nil {
		var err error
		if overlap, err = parseOverlap(*b.Overlap); err != nil {
			return err
		}
	}
	w, secret, err := s.reg.RotateWebhookSecret(c.ctx, c.params["w"], overlap)
	if err != nil {
		return err
	}
	setVersion(c.w, w.Version)
	return writeJSON(c.w, http.StatusOK, struct {
		*registry.Webhook
		Secret string `json:"secret"`
	}{w, secret.Reveal()}) // shown once, by design
}

// parseOverlap is parseDurationField that also takes zero.
func parseOverlap(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil && d == 0 {
		return 0, nil
	}
	d, err := parseDurationField("overlap", v)
	if err == nil && d == 0 {
		err = errf(registry.CodeInvalid, "overlap %q is not a duration such as 0s, 1h, 24h or 7d", v)
	}
	return d, err
}

// adminTestWebhook queues a webhook.test delivery; the answer is the
// delivery, pending (GET /webhook-deliveries/{id} tells how it went).
func (s *Server) adminTestWebhook(c *call) error {
	if err := decodeAdmin(c, &struct{}{}, false); err != nil {
		return err
	}
	d, err := s.reg.SendTestWebhook(c.ctx, c.params["w"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusAccepted, d)
}

func (s *Server) adminGetWebhookDelivery(c *call) error {
	d, _, err := s.reg.GetWebhookDelivery(c.ctx, c.params["id"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, d)
}

func (s *Server) adminRedeliverWebhook(c *call) error {
	if err := decodeAdmin(c, &struct{}{}, false); err != nil {
		return err
	}
	d, err := s.reg.RedeliverWebhook(c.ctx, c.params["id"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusAccepted, d)
}
