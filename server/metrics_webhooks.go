package server

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tetherhq/tether/registry"
)

// newWebhookDeliveries is tether_webhook_deliveries_total.
func newWebhookDeliveries() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_webhook_deliveries_total",
		Help: "Webhook delivery attempts this replica made, by event and result: delivered (2xx), rejected (other HTTP status), unreachable (no HTTP answer).",
	}, []string{"event", "result"})
	for _, e := range registry.WebhookEvents {
		for _, r := range []string{"delivered", "rejected", "unreachable"} {
			v.WithLabelValues(e, r)
		}
	}
	return v
}

// RecordWebhookDelivery counts one delivery attempt; pass it (or call it
// from) webhook.Config.Report.
func (s *Server) RecordWebhookDelivery(event string, status int, err error) {
	if !slices.Contains(registry.WebhookEvents, event) {
		event = "other" // never an open-ended label
	}
	result := "delivered"
	switch {
	case err != nil && status == 0:
		result = "unreachable"
	case err != nil || status < 200 || status > 299:
		result = "rejected"
	}
	s.metrics.webhooks.WithLabelValues(event, result).Inc()
}
