package server

import (
	"context"
	"log/slog"
	"slices"
	"time"

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

var webhooksPendingDesc = prometheus.NewDesc("tether_webhook_deliveries_pending",
	"Webhook deliveries waiting to be sent or retried, every webhook and replica together: it grows while a receiver is down.", nil, nil)

// webhooksCollector reads the pending deliveries at scrape time: one count
// over the index of pending deliveries, which holds nothing else.
type webhooksCollector struct {
	reg *registry.Registry
	log *slog.Logger
}

func (c *webhooksCollector) Describe(ch chan<- *prometheus.Desc) { ch <- webhooksPendingDesc }

func (c *webhooksCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := c.reg.PendingWebhookDeliveries(ctx)
	if err != nil {
		c.log.Warn("metrics: cannot count pending webhook deliveries", "err", err)
		ch <- prometheus.NewInvalidMetric(webhooksPendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(webhooksPendingDesc, prometheus.GaugeValue, float64(n))
}
