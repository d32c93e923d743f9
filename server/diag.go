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
)

// DiagHandler serves what operators, not agents, ask for: /metrics (the same
// series as the agent port's) and Go's profiler under /debug/pprof/. It is
// meant for a port of its own (serve --diag-listen) that only the monitoring
// network reaches: profiles reveal the program's internals and cost CPU.
func (s *Server) DiagHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.promh)
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
