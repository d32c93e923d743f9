package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/tetherhq/tether/registry"
)

// metricsPath is where both listeners serve the Prometheus series.
const metricsPath = "/metrics"

// scrapeHelp is what every refused scrape of the agent listener's /metrics
// is told to do instead.
const scrapeHelp = "send an admin token that no organization confines, of any role, as Authorization: Bearer <token> " +
	"('tether admin-token create --name prometheus --role viewer' issues one), or scrape the --diag-listen listener, which needs none"

// authenticateScraper is prepare's step for the agent listener's /metrics.
// Its series name every cluster of every organization (the cluster label),
// with their heartbeats, queues and leases, and agents of every
// organization reach this listener: it takes an admin token of any role
// that no organization confines, as the admin API would need to show the
// same clusters. An organization's token is refused rather than answered
// with its own clusters' series: the registry's metrics are not split by
// organization, and a partial scrape would look like a whole one.
func (s *Server) authenticateScraper(c *call) error {
	bearer, ok := bearerToken(c.r)
	if !ok {
		return errf(registry.CodeUnauthorized, "/metrics on this listener needs a token: %s", scrapeHelp)
	}
	if !registry.IsAdminToken(bearer) {
		return errf(registry.CodeUnauthorized, "this is not an admin token (agent credentials and registration tokens do not reach /metrics): %s", scrapeHelp)
	}
	actor, err := offStack(func() (registry.Actor, error) { return s.reg.AuthenticateAdmin(c.ctx, bearer) })
	if registry.ErrorCode(err) == registry.CodeUnauthorized {
		return errf(registry.CodeUnauthorized, "%s: %s", registry.ErrorMessage(err), scrapeHelp)
	}
	if err != nil {
		return err
	}
	c.ctx = registry.WithActor(c.ctx, actor)
	c.actor = actor.String()
	if actor.Org != "" {
		return errf(registry.CodeForbidden, "admin token %s is confined to organization %s, and /metrics names every organization's clusters: "+
			"scrape with a token created without --org, or the --diag-listen listener, which needs none", actor.Name, actor.Org)
	}
	return nil
}

// handleMetrics serves the Prometheus series to an authenticated scraper.
func (s *Server) handleMetrics(c *call) error {
	s.promh.ServeHTTP(c.w, c.r)
	return nil
}

// DiagHandler serves what operators, not agents, ask for: /metrics (the same
// series as the agent port's, without a token) and Go's profiler under
// /debug/pprof/. It is meant for a port of its own (serve --diag-listen)
// that only the monitoring network reaches: the series name every
// organization's clusters, and profiles reveal the program's internals and
// cost CPU.
func (s *Server) DiagHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+metricsPath, s.promh)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	// No /debug/pprof/cmdline: serve's command line may hold a database
	// password (--db postgres://user:password@...), and the profiles need
	// none of it (go tool pprof reads profile and symbol).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// ServeDiag serves DiagHandler on ln until ctx ends, then closes it (a
// profile being taken is cut short: nothing here needs draining).
func (s *Server) ServeDiag(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.DiagHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("diagnostics on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	_ = hs.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
