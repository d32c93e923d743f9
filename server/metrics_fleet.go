package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tetherhq/tether/internal/buildinfo"
	"github.com/tetherhq/tether/registry"
)

// The series operators alert on, read from the registry at scrape time so
// that every replica reports the same fleet-wide truth. Cardinality is
// bounded by the registry itself: one series per registered cluster (the
// cluster label is its name, as people type it), never per job or agent
// instance, and the other labels come from closed sets (states, outcomes,
// kinds).

var (
	queueDepthDesc = prometheus.NewDesc("tether_queue_depth",
		"Jobs waiting in a cluster's queue (state queued).", []string{"cluster"}, nil)
	queueOldestDesc = prometheus.NewDesc("tether_queue_oldest_job_age_seconds",
		"Age of the oldest job waiting in a cluster's queue, since it was submitted; 0 when the queue is empty.", []string{"cluster"}, nil)
	notDrainingDesc = prometheus.NewDesc("tether_queue_not_draining",
		"1 when a cluster's queue is not draining: jobs wait, none is in flight and none was claimed for registry.NotDrainingAfter, "+
			"while its agent heartbeats and the queue is not paused (registry.QueueHealth); else 0.", []string{"cluster"}, nil)
	inFlightDesc = prometheus.NewDesc("tether_jobs_in_flight",
		"Jobs a cluster's agent has claimed and not finished (state in_progress).", []string{"cluster"}, nil)
	clustersDesc = prometheus.NewDesc("tether_clusters",
		"Registered clusters by lifecycle state.", []string{"state"}, nil)
	silentDesc = prometheus.NewDesc("tether_clusters_silent",
		"Active clusters whose agent has sent no heartbeat for "+
			"registry.SilentAfterHeartbeats heartbeat intervals.", nil, nil)
	heartbeatAgeDesc = prometheus.NewDesc("tether_cluster_heartbeat_age_seconds",
		"Seconds since an active cluster's agent last sent a heartbeat (absent for a cluster that never did).", []string{"cluster"}, nil)
	scrapeErrorsDesc = prometheus.NewDesc("tether_metrics_scrape_errors",
		"1 when the last scrape could not read the fleet from the store (the fleet series are then missing).", nil, nil)
)

// fleetCollector reads the fleet at scrape time: the clusters, one grouped
// count of jobs, and the fleet's queue health (a few index ranges per
// cluster: its oldest job, the not-draining flag).
type fleetCollector struct {
	reg *registry.Registry
	log *slog.Logger
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueDepthDesc, queueOldestDesc, notDrainingDesc, inFlightDesc, clustersDesc, silentDesc, heartbeatAgeDesc, scrapeErrorsDesc} {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	failed := 0.0
	defer func() { ch <- prometheus.MustNewConstMetric(scrapeErrorsDesc, prometheus.GaugeValue, failed) }()
	clusters, err := c.reg.ListClusters(ctx, registry.ClusterListParams{})
	if err != nil {
		c.log.Warn("metrics: cannot list clusters", "err", err)
		failed = 1
		return
	}
	counts, err := c.reg.JobCounts(ctx)
	if err != nil {
		c.log.Warn("metrics: cannot read job counts", "err", err)
		failed = 1
		return
	}
	queued := map[string]int64{}
	inFlight := map[string]int64{}
	for _, jc := range counts {
		switch jc.State {
		case registry.JobQueued:
			queued[jc.ClusterID] += jc.Count
		case registry.JobInProgress:
			inFlight[jc.ClusterID] += jc.Count
		}
	}
	queues, err := c.reg.QueueHealthOf(ctx, clusters)
	if err != nil {
		c.log.Warn("metrics: cannot read queue health", "err", err)
		failed = 1
	}
	health := make(map[string]*registry.QueueHealth, len(queues))
	for i := range queues {
		health[queues[i].ClusterID] = &queues[i]
	}
	now := c.reg.Now()
	byState := map[registry.ClusterState]int{}
	silent := 0
	for i := range clusters {
		cl := &clusters[i]
		byState[cl.State]++
		if cl.Silent(now) {
			silent++
		}
		name := cl.Name
		if name == "" {
			name = cl.ID
		}
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(queued[cl.ID]), name)
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(inFlight[cl.ID]), name)
		if q := health[cl.ID]; q != nil {
			ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, q.OldestQueuedAge().Seconds(), name)
			flag := 0.0
			if q.NotDraining {
				flag = 1
			}
			ch <- prometheus.MustNewConstMetric(notDrainingDesc, prometheus.GaugeValue, flag, name)
		}
		if last := cl.Status.LastHeartbeatAt; cl.State == registry.ClusterActive && !last.IsZero() {
			ch <- prometheus.MustNewConstMetric(heartbeatAgeDesc, prometheus.GaugeValue, max(0, now.Sub(last).Seconds()), name)
		}
	}
	for _, st := range []registry.ClusterState{registry.ClusterPending, registry.ClusterActive, registry.ClusterDisabled} {
		ch <- prometheus.MustNewConstMetric(clustersDesc, prometheus.GaugeValue, float64(byState[st]), string(st))
	}
	ch <- prometheus.MustNewConstMetric(silentDesc, prometheus.GaugeValue, float64(silent))
}

// newBuildInfo is tether_build_info: 1, with the build's identity as labels,
// to join on or to see which versions a fleet of replicas runs.
func newBuildInfo() prometheus.Collector {
	i := buildinfo.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tether_build_info",
		Help: "Always 1; the labels say which build of tether is running.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "commit": i.Commit, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}

// newFinished is tether_jobs_finished_total.
func newFinished() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_jobs_finished_total",
		Help: "Job results agents reported to this replica, by outcome and job kind.",
	}, []string{"outcome", "kind"})
	for _, o := range []registry.Outcome{registry.OutcomeSucceeded, registry.OutcomeFailed, registry.OutcomeNoop, registry.OutcomeConflict} {
		for _, k := range []registry.JobKind{registry.KindApply, registry.KindDelete, registry.KindIntent} {
			v.WithLabelValues(string(o), string(k)) // present at zero, so rate() works from the start
		}
	}
	return v
}

// jobFinished counts a result once the registry accepted it, by outcome and
// by the job's kind, which the accepted update returned (no read back).
func (s *Server) jobFinished(kind registry.JobKind, outcome registry.Outcome) {
	switch outcome {
	case registry.OutcomeSucceeded, registry.OutcomeFailed, registry.OutcomeNoop, registry.OutcomeConflict:
	default:
		return // the registry refuses others; never a label
	}
	switch kind {
	case registry.KindApply, registry.KindDelete, registry.KindIntent:
	default:
		kind = "unknown"
	}
	s.metrics.finished.WithLabelValues(string(outcome), string(kind)).Inc()
}

// newLeaseExpirations is tether_cluster_lease_expirations_total.
func newLeaseExpirations() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_cluster_lease_expirations_total",
		Help: "Leases that expired, by cluster and what the reaper did: requeued (reclaimed for another attempt) or failed (the last attempt).",
	}, []string{"cluster", "action"})
}

// recordExpirationsByCluster counts one reaper run's expired leases by
// cluster name (the id when the cluster is gone).
func (s *Server) recordExpirationsByCluster(by map[string]registry.ClusterReclaims) {
	if len(by) == 0 {
		return
	}
	names := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if clusters, err := s.reg.ListClusters(ctx, registry.ClusterListParams{}); err == nil {
		for _, c := range clusters {
			names[c.ID] = c.Name
		}
	}
	for id, c := range by {
		name := names[id]
		if name == "" {
			name = id
		}
		if c.Requeued > 0 {
			s.metrics.clusterExpired.WithLabelValues(name, "requeued").Add(float64(c.Requeued))
		}
		if c.Failed > 0 {
			s.metrics.clusterExpired.WithLabelValues(name, "failed").Add(float64(c.Failed))
		}
	}
}
