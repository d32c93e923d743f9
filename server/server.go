// Package server is tether's HTTP side: the agent API (/api/agent, the
// protocol of PROTOCOL.md), health and readiness probes, and Prometheus
// metrics, over a registry.Registry that holds every rule.
//
// The HTTP layer owns what only HTTP has: routes, media types, the error
// shape with its request id, body limits, bearer and HMAC authentication,
// per-cluster rate limits, and the one table that maps registry error codes
// to statuses (errors.go).
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/maintenance"
)

// Config tunes the server. Zero values take the defaults.
type Config struct {
	// Logger receives one line per request and the server's own events.
	// Secrets are redacted at the logger (RedactHandler) whatever handler it
	// has. Default: slog.Default().
	Logger *slog.Logger
	// RateLimit is the sustained requests per second each cluster's agent
	// may make (default DefaultRateLimit); negative turns rate limiting off.
	RateLimit float64
	// RateBurst is how many requests a cluster may make at once (default
	// DefaultRateBurst).
	RateBurst int
	// MaxBodyBytes bounds request bodies other than event batches (default
	// DefaultMaxBodyBytes); MaxEventsBodyBytes bounds event batches (default
	// DefaultMaxEventsBodyBytes).
	MaxBodyBytes       int64
	MaxEventsBodyBytes int64
	// ShutdownTimeout is how long Serve waits for in-flight requests once its
	// context ends (default DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// ReplayCacheSize bounds the signatures remembered to refuse replays
	// (default DefaultReplayCacheSize).
	ReplayCacheSize int
	// TrustedProxies are the load balancers and proxies whose
	// X-Forwarded-For is believed (see clientAddr); none by default, so
	// that the connection's peer is the client.
	TrustedProxies []netip.Prefix
	// ShutdownDelay is how long Serve keeps answering normally once its
	// context ends, with /readyz failing, so that a load balancer notices
	// and stops sending new requests before the server stops accepting.
	// Zero (the default) shuts down at once.
	ShutdownDelay time.Duration
	// BodyTimeout bounds how long a client may take to send a request's body
	// once its headers arrived (default DefaultBodyTimeout): a client that
	// stops sending is answered 408 and its connection closed, instead of
	// holding a connection and a goroutine forever.
	BodyTimeout time.Duration
	// MaxPollsPerCredential and MaxPollsPerAddress cap the long-polls (wait
	// > 0) one credential, and one client address (see TrustedProxies), may
	// have open at once; past a cap a poll is answered 429 too_many_polls
	// with Retry-After. Zero takes DefaultMaxPollsPerCredential and
	// DefaultMaxPollsPerAddress; negative sets no cap.
	MaxPollsPerCredential int
	MaxPollsPerAddress    int
	// MaxConnsPerAddress caps the connections one address (not a trusted
	// proxy) may have open at once, idle keep-alive ones included; at the
	// cap its longest-idle connection is closed to make room for a new one,
	// or, when none is idle, the new one is answered 429
	// too_many_connections and closed. Zero takes
	// DefaultMaxConnsPerAddress; negative sets no cap.
	MaxConnsPerAddress int
	// NoClusterLatencyLabel drops the cluster label of the job latency
	// histograms (tether_job_wait_seconds, tether_job_run_seconds): one
	// histogram of each for the fleet instead of one per cluster, for fleets
	// too large for 32 series a cluster (serve --metrics-per-cluster=false).
	NoClusterLatencyLabel bool
	// TracerProvider makes the spans of submit, poll, ack, status and result
	// requests (see tracing.go). Nil: no spans, at no cost.
	TracerProvider trace.TracerProvider
	// Services, when set, says what the process's background services are
	// doing (maintenance.Maintainer.Status): tether_service_up and
	// tether_service_failures_total are read from it at each scrape.
	Services func() []maintenance.Status
}

// Defaults of Config.
const (
	DefaultMaxBodyBytes       = 1 << 20 // a status or result: a job payload is at most 1 MiB too
	DefaultMaxEventsBodyBytes = 8 << 20 // up to 1000 events
	DefaultShutdownTimeout    = 30 * time.Second
	DefaultBodyTimeout        = 30 * time.Second
)

// Server serves the agent API over a registry. Create it with New; it is safe
// for concurrent use.
type Server struct {
	reg     *registry.Registry
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	limits  *limiters
	// addrLimits bounds registration attempts per client address, so that
	// guessing tokens (or filling the audit trail) is slow.
	addrLimits *limiters
	replays    *replayCache
	polls      *heldPolls                  // long-polls open per credential and per address
	waits      *heldWaits                  // admin ?wait= requests held per token
	parker     *parker                     // parked long-polls, while Serve runs (park.go)
	refusals   *registry.SignatureRefusals // refused signatures, audited per credential per minute
	routes     map[string][]*route         // by exact path
	admin      []*adminRoute               // /api/admin/v1
	jobs       map[string][]*route         // /api/agent/jobs/{id}/{action}, by action
	promh      http.Handler
	tracer     trace.Tracer // nil: tracing is off

	trusted []netip.Prefix // Config.TrustedProxies

	drainOnce sync.Once
	draining  chan struct{} // closed when shutdown begins: held long-polls answer at once
	// leaving is set when the context ends, ShutdownDelay before draining:
	// /readyz fails while everything else still answers.
	leaving atomic.Bool
}

// New returns a server over reg.
func New(reg *registry.Registry, cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = slog.New(RedactHandler(cfg.Logger.Handler()))
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxEventsBodyBytes <= 0 {
		cfg.MaxEventsBodyBytes = DefaultMaxEventsBodyBytes
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.ReplayCacheSize <= 0 {
		cfg.ReplayCacheSize = DefaultReplayCacheSize
	}
	s := &Server{
		reg: reg, cfg: cfg, log: cfg.Logger,
		limits: newLimiters(cfg.RateLimit, cfg.RateBurst),
		// A fleet behind one NAT registers through one address: generous,
		// but far below what guessing needs. Off with the other limits.
		addrLimits: newLimiters(registerLimit(cfg.RateLimit), RegisterRateBurst),
		replays:    newReplayCache(cfg.ReplayCacheSize),
		polls:      newHeldPolls(cfg.MaxPollsPerCredential, cfg.MaxPollsPerAddress),
		waits:      &heldWaits{},
		refusals:   registry.NewSignatureRefusals(reg),
		draining:   make(chan struct{}),
		trusted:    cfg.TrustedProxies,
	}
	s.metrics = newMetrics(reg, s.log, !cfg.NoClusterLatencyLabel)
	if cfg.Services != nil {
		s.metrics.registry.MustRegister(servicesCollector(cfg.Services))
	}
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	s.promh = promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	})
	s.buildRoutes()
	return s
}

// Handler returns the server's HTTP handler: the agent API, /healthz,
// /readyz and /metrics. Serve uses it; an embedding program may mount it on
// its own http.Server (long-polls then end at their deadline, not at once, on
// that server's shutdown).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Serve answers requests on ln until ctx ends, then shuts down gracefully:
// it stops accepting, answers held long-polls at once with an empty job list,
// waits for in-flight requests (up to Config.ShutdownTimeout) and returns. It
// returns nil after a clean shutdown. A Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler: s.Handler(),
		// No ReadTimeout or WriteTimeout: a long-poll is held for up to
		// MaxWait, and net/http cancels a request whose connection passes its
		// read deadline. Headers have a deadline; bodies get one per request
		// (readBody).
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	var limit *connLimit
	if max := s.cfg.MaxConnsPerAddress; max >= 0 {
		if max == 0 {
			max = DefaultMaxConnsPerAddress
		}
		limit = newConnLimit(ln, max, s.isTrusted)
		hs.ConnState = limit.connState
		ln = limit
	}
	// Parked polls give their connections back through a listener of their
	// own, served by the same server.
	back := newHandback(ln.Addr())
	s.parker = newParker(s, limit, back)
	go func() { _ = hs.Serve(back) }()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.drain() // parked polls answer and close their connections
		_ = back.Close()
		s.parker.stop()
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.leaving.Store(true)
	if d := s.cfg.ShutdownDelay; d > 0 {
		// Keep serving while the load balancer sees /readyz fail and takes
		// this replica out; only then stop accepting.
		s.log.Info("shutting down after the shutdown delay: /readyz fails meanwhile so that load balancers stop sending requests", "delay", d)
		select {
		case err := <-errc:
			s.drain()
			s.parker.stop()
			return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
		case <-time.After(d):
		}
	}
	s.log.Info("shutting down: answering held long-polls and finishing in-flight requests", "timeout", s.cfg.ShutdownTimeout)
	s.drain()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	if perr := s.parker.wait(sctx); err == nil {
		err = perr
	}
	s.parker.stop()
	if err != nil {
		_ = hs.Close()
		return fmt.Errorf("shutdown: requests still in flight after %s were cut off: %w", s.cfg.ShutdownTimeout, err)
	}
	s.log.Info("shut down")
	return nil
}

// drain makes held long-polls answer now, and new ones answer at once.
func (s *Server) drain() {
	s.drainOnce.Do(func() {
		close(s.draining)
		if s.parker != nil {
			s.parker.drain()
		}
	})
}

func (s *Server) isDraining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}
