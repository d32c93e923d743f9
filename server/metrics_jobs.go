package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tetherhq/tether/registry"
)

// jobLatencyBuckets span what a job waits and runs: from a second (an agent
// polling an idle queue acks at once) to hours (a queue that stood still
// overnight, a long migration). Thirteen buckets: with the +Inf bucket, the
// sum and the count, 16 series per cluster and histogram.
var jobLatencyBuckets = []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400}

// jobLatency is tether_job_wait_seconds and tether_job_run_seconds.
//
// Per cluster, they cost 32 series a cluster: 32 000 for a fleet of a
// thousand, which a Prometheus holds but a small one may not want; serve
// --metrics-per-cluster=false drops the label (one histogram of each for the
// fleet). The label is the cluster's name as people type it (its id when it
// has none), as the fleet gauges have it.
type jobLatency struct {
	wait, run  *prometheus.HistogramVec
	perCluster bool
}

func newJobLatency(perCluster bool) *jobLatency {
	var labels []string
	if perCluster {
		labels = []string{"cluster"}
	}
	return &jobLatency{
		perCluster: perCluster,
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_job_wait_seconds",
			Help:    "Time from a job's submission to its first ack, observed by the replica that recorded the ack (later attempts are not: their wait would count the runs before them).",
			Buckets: jobLatencyBuckets,
		}, labels),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_job_run_seconds",
			Help:    "Time from a job's ack to its result, observed by the replica that recorded the result.",
			Buckets: jobLatencyBuckets,
		}, labels),
	}
}

func (l *jobLatency) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.wait, l.run}
}

func (l *jobLatency) labels(c *registry.Cluster) []string {
	if !l.perCluster {
		return nil
	}
	name := c.Name
	if name == "" {
		name = c.ID
	}
	return []string{name}
}

// acked observes a first attempt's wait, from the claim's timestamps (the
// registry's clock: one source of time for every replica).
func (l *jobLatency) acked(c *registry.Cluster, j *registry.Job) {
	if j == nil || j.Attempt != 1 || j.CreatedAt.IsZero() || j.ClaimedAt.IsZero() {
		return
	}
	l.wait.WithLabelValues(l.labels(c)...).Observe(seconds(j.ClaimedAt.Sub(j.CreatedAt)))
}

// finished observes a run, from its ack to its result (the update's time). A
// noop result for a job never acked (an agent skipping an expired job) did
// not run.
func (l *jobLatency) finished(c *registry.Cluster, j *registry.Job) {
	if j == nil || j.ClaimedAt.IsZero() || j.UpdatedAt.IsZero() {
		return
	}
	l.run.WithLabelValues(l.labels(c)...).Observe(seconds(j.UpdatedAt.Sub(j.ClaimedAt)))
}

func seconds(d time.Duration) float64 { return max(0, d.Seconds()) }
