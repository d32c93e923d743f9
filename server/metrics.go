package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tetherhq/tether/registry"
)

// metrics are the server's Prometheus series, in a registry of its own: two
// servers in one process (tests, the console) never collide, and nothing
// depends on global state.
type metrics struct {
	registry     *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	heldPolls    prometheus.Gauge
	adminWaits   prometheus.Gauge
	reaped       *prometheus.CounterVec
	leaseExpired prometheus.Counter
	reaperErrors prometheus.Counter
	pruned       *prometheus.CounterVec
	registerFail *prometheus.CounterVec
	finished     *prometheus.CounterVec
	// clusterExpired is tether_cluster_lease_expirations_total.
	clusterExpired *prometheus.CounterVec
	// webhooks is tether_webhook_deliveries_total.
	webhooks *prometheus.CounterVec
	// jobs is tether_job_wait_seconds and tether_job_run_seconds.
	jobs *jobLatency
}

func newMetrics(reg *registry.Registry, log *slog.Logger, perCluster bool) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tether_http_request_duration_seconds",
			Help: "Time to answer HTTP requests, by route pattern (long-polls include their wait).",
			// From sub-millisecond writes up to a long-poll's 300 s.
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"route"}),
		heldPolls: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tether_agent_longpolls_held",
			Help: "GET /api/agent/jobs requests currently waiting for a job.",
		}),
		adminWaits: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tether_admin_waits_held",
			Help: "Admin API requests with ?wait= (job submissions and reads) currently waiting for their job to end.",
		}),
		reaped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_reaper_jobs_total",
			Help: "Jobs the reaper changed, by action: requeued (lease expired), failed (lease expired on the last attempt), expired (never acked).",
		}, []string{"action"}),
		leaseExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_lease_expirations_total",
			Help: "Leases that expired and were handled by the reaper (requeued or failed).",
		}),
		reaperErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_reaper_errors_total",
			Help: "Reaper runs that failed.",
		}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_pruned_total",
			Help: "Records the pruner and retention deleted, by kind (events, changes; jobs, audit, webhook_deliveries, idempotency_keys).",
		}, []string{"kind"}),
		registerFail: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_registration_failures_total",
			Help: "Refused agent registrations, by reason (unknown, used, expired, revoked, malformed, missing, bad_request, or the refusal's error code).",
		}, []string{"reason"}),
		finished:       newFinished(),
		clusterExpired: newLeaseExpirations(),
		webhooks:       newWebhookDeliveries(),
		jobs:           newJobLatency(perCluster),
	}
	m.registry.MustRegister(m.jobs.collectors()...)
	for _, a := range []string{"requeued", "failed", "expired"} {
		m.reaped.WithLabelValues(a) // present at zero, so rate() works from the start
	}
	m.registry.MustRegister(
		m.requests, m.latency, m.heldPolls, m.adminWaits, m.reaped, m.leaseExpired, m.reaperErrors, m.pruned, m.registerFail,
		m.finished, m.clusterExpired, m.webhooks,
		&jobsCollector{reg: reg, log: log},
		&fleetCollector{reg: reg, log: log},
		&webhooksCollector{reg: reg, log: log},
		newBuildInfo(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// jobsCollector reads job counts at scrape time: the store keeps them up to
// date as jobs change, so a scrape costs one small query.
type jobsCollector struct {
	reg *registry.Registry
	log *slog.Logger
}

var jobsDesc = prometheus.NewDesc("tether_jobs", "Jobs by state, all clusters together.", []string{"state"}, nil)

func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.reg.JobCounts(ctx)
	if err != nil {
		c.log.Warn("metrics: cannot read job counts", "err", err)
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	byState := map[registry.JobState]int64{}
	for _, jc := range counts {
		byState[jc.State] += jc.Count
	}
	for _, st := range registry.JobStates {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(byState[st]), string(st))
	}
}

// RecordReap logs and counts one reaper run; pass it as the report function
// of registry.Reaper.Run.
func (s *Server) RecordReap(rep registry.ReapReport, err error) {
	if err != nil {
		s.metrics.reaperErrors.Inc()
		s.log.Error("reaper run failed", "err", err)
	}
	s.metrics.reaped.WithLabelValues("requeued").Add(float64(rep.Requeued))
	s.metrics.reaped.WithLabelValues("failed").Add(float64(rep.Failed))
	s.metrics.reaped.WithLabelValues("expired").Add(float64(rep.Expired))
	s.metrics.leaseExpired.Add(float64(rep.Requeued + rep.Failed))
	s.recordExpirationsByCluster(rep.ByCluster)
	if rep.Total() > 0 {
		s.log.Info("reaper", "requeued", rep.Requeued, "failed", rep.Failed, "expired", rep.Expired)
	}
}

// RecordPrune logs and counts one pruner run; pass it as the report function
// of registry.Pruner.Run.
func (s *Server) RecordPrune(rep registry.PruneReport, err error) {
	if err != nil {
		s.log.Error("pruner run failed", "err", err)
	}
	s.metrics.pruned.WithLabelValues("events").Add(float64(rep.Events))
	s.metrics.pruned.WithLabelValues("changes").Add(float64(rep.Changes))
	if rep.Events+rep.Changes > 0 {
		s.log.Info("pruner", "events", rep.Events, "changes", rep.Changes)
	}
}

// RecordRetention counts what one retention run deleted (finished jobs,
// audit entries, webhook deliveries, expired idempotency keys) in
// tether_pruned_total beside the pruner's kinds.
func (s *Server) RecordRetention(rep registry.RetentionReport) {
	s.metrics.pruned.WithLabelValues("jobs").Add(float64(rep.Jobs))
	s.metrics.pruned.WithLabelValues("audit").Add(float64(rep.Audit))
	s.metrics.pruned.WithLabelValues("webhook_deliveries").Add(float64(rep.WebhookDeliveries))
	s.metrics.pruned.WithLabelValues("idempotency_keys").Add(float64(rep.IdempotencyKeys))
}

// registrationReasons maps the registry's refusal reasons (audit text) to
// bounded metric labels. The registry does not export them as values; an
// unknown text is counted as "other" rather than becoming a label.
var registrationReasons = map[string]string{
	"malformed token":                       "malformed",
	"unknown token id":                      "unknown",
	"unknown token (secret does not match)": "unknown",
	"token used":                            "used",
	"token expired":                         "expired",
	"token revoked":                         "revoked",
}

// registrationFailed counts a refused registration. An agent's request for a
// client certificate that this tether cannot issue (no CA) is not a refusal:
// it is how the reference agent learns there is no CA, the token stays
// unused, and the agent registers again at once without a CSR. Counting it
// made every healthy registration look refused to the
// TetherRegistrationFailures alert.
func (m *metrics) registrationFailed(err error) {
	code := registry.ErrorCode(err)
	if code == registry.CodeNoCA {
		return
	}
	reason := string(code)
	if code == registry.CodeRegistrationTokenInvalid {
		reason = "other"
		var e *registry.Error
		if errors.As(err, &e) && e.Err != nil {
			if r, ok := registrationReasons[e.Err.Error()]; ok {
				reason = r
			}
		}
	}
	m.registerFail.WithLabelValues(reason).Inc()
}

// RegisterCollectors adds the series of another part of this process (the
// console over SSH) to the server's /metrics.
func (s *Server) RegisterCollectors(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := s.metrics.registry.Register(c); err != nil {
			return err
		}
	}
	return nil
}
