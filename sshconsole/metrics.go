package sshconsole

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	authFailures prometheus.Counter
	refused      *prometheus.CounterVec
	ended        *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_ssh_auth_failures_total",
			Help: "SSH connections to the console that tried to authenticate and did not (unknown keys, refused methods), or held the handshake past its timeout; each is charged to its source address.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_ssh_refusals_total",
			Help: "What the SSH console refused, by reason: rate_limited (an address past its failed-authentication allowance), too_many_connections, too_many_sessions, not_a_console (exec, subsystems, pty-less shells), unauthorized, shutting_down.",
		}, []string{"reason"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_ssh_sessions_ended_total",
			Help: "SSH console sessions that ended, by reason: quit (or disconnected), revoked (the identity stopped working), idle, shutdown.",
		}, []string{"reason"}),
	}
	for _, r := range []string{"rate_limited", "too_many_connections", "too_many_sessions", "not_a_console", "unauthorized", "shutting_down"} {
		m.refused.WithLabelValues(r)
	}
	for _, r := range []string{"quit", "revoked", "idle", "shutdown"} {
		m.ended.WithLabelValues(r)
	}
	return m
}

// Collectors are the server's Prometheus series, for the /metrics of the
// process serving it: the counters above and tether_ssh_sessions.
func (s *Server) Collectors() []prometheus.Collector {
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tether_ssh_sessions",
		Help: "SSH console sessions open.",
	}, func() float64 { return float64(s.Sessions()) })
	return []prometheus.Collector{s.metrics.authFailures, s.metrics.refused, s.metrics.ended, open}
}
