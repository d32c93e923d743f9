package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/tetherhq/tether/registry"
)

// --- finishing a request ---

// recorder remembers the status a handler wrote, and puts the request id in
// the answer's X-Request-Id header.
type recorder struct {
	http.ResponseWriter
	requestID string
	status    int
	wrote     bool
	// mediaType is the API's: the agent API's vendor type, or plain JSON
	// for the admin API. writeJSON and writeError use it.
	mediaType string
	// unreadBody: the request announced a body that was not read. net/http
	// would read it before answering (to reuse the connection), with no
	// deadline: a client that never sends it would never get an answer. The
	// answer closes the connection instead.
	unreadBody bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
		r.setRequestID()
		if r.unreadBody {
			r.Header().Set("Connection", "close")
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) setRequestID() {
	if r.requestID != "" {
		r.Header().Set(headerRequestID, r.requestID)
	}
}

// finish counts the request and writes its log line.
func (s *Server) finish(c *call) {
	status, pattern := c.rec.status, c.pattern
	if !c.rec.wrote {
		status = http.StatusOK
	}
	elapsed := time.Since(c.start)
	c.endSpan(status)
	s.metrics.requests.WithLabelValues(pattern, c.r.Method, fmt.Sprint(status)).Inc()
	s.metrics.latency.WithLabelValues(pattern).Observe(elapsed.Seconds())

	level := slog.LevelInfo
	if c.route != nil && c.route.quiet {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("method", c.r.Method),
		slog.String("path", truncate(c.r.URL.Path, 200)),
		slog.String("route", pattern),
		slog.Int("status", status),
		slog.Float64("ms", float64(elapsed.Microseconds())/1000),
		slog.String("remote", c.r.RemoteAddr),
	}
	if client := s.clientAddr(c.r); client != remoteHost(c.r.RemoteAddr) {
		attrs = append(attrs, slog.String("client", client))
	}
	if c.actor != "" {
		attrs = append(attrs, slog.String("actor", c.actor))
	}
	if c.err != nil {
		attrs = append(attrs, slog.String("code", string(registry.ErrorCode(c.err))))
		// A known credential refused (expired, revoked): whose agent is
		// locked out. Ids only; the token is never logged.
		var refusal *registry.CredentialRefusal
		if errors.As(c.err, &refusal) {
			attrs = append(attrs, slog.String("cluster", refusal.ClusterID), slog.String("credential", refusal.CredentialID),
				slog.String("credential_state", string(refusal.State)))
		}
		if c.expected {
			level = slog.LevelDebug
		} else if status >= 500 {
			level = slog.LevelError
			attrs = append(attrs, slog.Any("err", c.err)) // the cause, for the operator; callers saw only the message
			if cause := driverCause(c.err); cause != nil && registry.ErrorCode(c.err) != registry.CodeInternal {
				// An internal error's text holds its cause already; an
				// unavailable one's says only what failed (a read-only
				// database): the driver's words say where and why.
				attrs = append(attrs, slog.Any("cause", cause))
			}
		}
	}
	c.log().LogAttrs(context.Background(), level, "request", attrs...)
}
