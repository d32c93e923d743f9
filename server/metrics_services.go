package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tetherhq/tether/registry/maintenance"
)

var (
	serviceUpDesc = prometheus.NewDesc("tether_service_up",
		"Whether each background service of this process (reaper, pruner, retention, rollouts, webhook-sender, ...) is running: 0 while it waits to be restarted after a failure, has exited or has been stopped.",
		[]string{"service"}, nil)
	serviceFailuresDesc = prometheus.NewDesc("tether_service_failures_total",
		"Times each background service failed (returned an error or panicked) and was restarted after a backoff.",
		[]string{"service"}, nil)
)

// servicesCollector reads the background services' states at scrape time.
type servicesCollector func() []maintenance.Status

func (c servicesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- serviceUpDesc
	ch <- serviceFailuresDesc
}

func (c servicesCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c() {
		up := 0.0
		if st.Up() {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(serviceUpDesc, prometheus.GaugeValue, up, st.Name)
		ch <- prometheus.MustNewConstMetric(serviceFailuresDesc, prometheus.CounterValue, float64(st.Failures), st.Name)
	}
}
