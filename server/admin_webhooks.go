package server

import (
	"net/http"
	"strconv"

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
