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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
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
	if max := s.cfg.MaxConnsPerAddress; max >= 0 {
		if max == 0 {
			max = DefaultMaxConnsPerAddress
		}
		limit := newConnLimit(ln, max, s.isTrusted)
		hs.ConnState = limit.connState
		ln = limit
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.drain()
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
	if err != nil {
		_ = hs.Close()
		return fmt.Errorf("shutdown: requests still in flight after %s were cut off: %w", s.cfg.ShutdownTimeout, err)
	}
	s.log.Info("shut down")
	return nil
}

// drain makes held long-polls answer now, and new ones answer at once.
func (s *Server) drain() { s.drainOnce.Do(func() { close(s.draining) }) }

func (s *Server) isDraining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}

// --- routes ---

type authMode int

const (
	authNone   authMode = iota
	authAgent           // a credential with full access
	authRotate          // a credential that may at least rotate
	authAdmin           // an admin token (the admin API)
)

// route is one method on one path.
type route struct {
	pattern  string // the path pattern: metric label and log field
	method   string
	agentAPI bool     // under /api/agent: the Accept and Content-Type rules apply
	auth     authMode // which credential it needs, if any
	signed   bool     // writes that hmac credentials must sign
	maxBody  int64    // 0: the body is not read
	quiet    bool     // log at debug (probes and scrapes)
	// head: HEAD is answered as GET is, without the body. Only routes that
	// change nothing (the probes and /metrics): a HEAD poll would hand out
	// jobs whose body nobody reads.
	head bool
	// perAddress limits the route per client address: registration, whose
	// caller has no cluster yet to be limited by.
	perAddress bool
	// span names the operation of a traced route (tracing.go): submit,
	// poll, ack, status, result. Empty: not traced.
	span  string
	serve func(*call) error
}

func (s *Server) buildRoutes() {
	body, events := s.cfg.MaxBodyBytes, s.cfg.MaxEventsBodyBytes
	fixed := []*route{
		{pattern: "/api/agent/register", method: http.MethodPost, agentAPI: true, maxBody: body, perAddress: true, serve: s.handleRegister},
		{pattern: "/api/agent/credentials/rotate", method: http.MethodPost, agentAPI: true, auth: authRotate, signed: true, maxBody: body, serve: s.handleRotate},
		{pattern: "/api/agent/jobs", method: http.MethodGet, agentAPI: true, auth: authAgent, span: "poll", serve: s.handlePoll},
		{pattern: "/api/agent/events", method: http.MethodPost, agentAPI: true, auth: authAgent, signed: true, maxBody: events, serve: s.handleEvents},
		{pattern: "/api/agent/keys", method: http.MethodGet, agentAPI: true, auth: authAgent, serve: s.handleKeys},
		{pattern: "/healthz", method: http.MethodGet, quiet: true, head: true, serve: s.handleHealth},
		{pattern: "/readyz", method: http.MethodGet, quiet: true, head: true, serve: s.handleReady},
		{pattern: "/metrics", method: http.MethodGet, quiet: true, head: true, serve: s.handleMetrics},
	}
	perJob := []*route{
		{pattern: "/api/agent/jobs/{id}/ack", method: http.MethodPost, span: "ack", serve: s.handleAck},
		{pattern: "/api/agent/jobs/{id}/status", method: http.MethodPost, span: "status", serve: s.handleStatus},
		{pattern: "/api/agent/jobs/{id}/heartbeat", method: http.MethodPost, serve: s.handleHeartbeat},
		{pattern: "/api/agent/jobs/{id}/result", method: http.MethodPost, span: "result", serve: s.handleResult},
	}
	s.routes, s.jobs = map[string][]*route{}, map[string][]*route{}
	for _, rt := range fixed {
		s.routes[rt.pattern] = append(s.routes[rt.pattern], rt)
	}
	for _, rt := range perJob {
		rt.agentAPI, rt.auth, rt.signed, rt.maxBody = true, authAgent, true, body
		action := rt.pattern[strings.LastIndexByte(rt.pattern, '/')+1:]
		s.jobs[action] = append(s.jobs[action], rt)
	}
	s.buildAdminRoutes()
}

const jobsPrefix = "/api/agent/jobs/"

// match finds the routes of a path (several methods may share one) and the
// job id of a per-job path.
func (s *Server) match(path string) (routes []*route, jobID string) {
	if rts, ok := s.routes[path]; ok {
		return rts, ""
	}
	rest, ok := strings.CutPrefix(path, jobsPrefix)
	if !ok {
		return nil, ""
	}
	id, action, ok := strings.Cut(rest, "/")
	if !ok || id == "" || strings.Contains(action, "/") {
		return nil, ""
	}
	return s.jobs[action], id
}

// --- the request pipeline ---

const (
	headerRequestID      = "X-Request-Id"
	headerClaimID        = "X-Claim-Id"
	headerLeaseExpiresAt = "X-Lease-Expires-At"
	headerRotateAfter    = "X-Credential-Rotate-After"
)

// call is one request as handlers see it.
type call struct {
	w     http.ResponseWriter // &rec
	raw   http.ResponseWriter // as net/http gave it (MaxBytesReader, deadlines)
	rec   recorder            // wraps raw: records the status
	r     *http.Request
	ctx   context.Context // the request's, with the agent as actor
	route *route
	agent *registry.Agent
	body  []byte
	jobID string
	// params are an admin route's path parameters, actor its caller.
	params map[string]string
	actor  string
	err    error // the refusal, for the access log
	// expected marks a refusal that is the server working as meant (the
	// readiness probe failing during a graceful shutdown): logged at debug,
	// however high its status, so that a deploy pages nobody.
	expected bool

	s         *Server
	requestID string
	logWith   *slog.Logger // built on first use: a held poll should not carry one
	start     time.Time
	pattern   string     // the route's pattern ("unmatched" if none): metric label and log field
	span      trace.Span // the request's span, when traced (tracing.go)
}

// log returns the request's logger, with its request id and (once known) its
// cluster.
func (c *call) log() *slog.Logger {
	if c.logWith == nil {
		c.logWith = c.s.log.With("request_id", c.requestID)
		if c.agent != nil {
			c.logWith = c.logWith.With("cluster", c.agent.Cluster.ID)
		}
	}
	return c.logWith
}

func newRequestID() string { return "rq-" + strings.ToLower(ulid.Make().String()) }

// serveHTTP runs a request through the pipeline: routing and prepare
// (admit), then the route's handler (serve). A held long-poll waits inside
// its handler, on net/http's goroutine, and keeps that goroutine's stack as
// large as it ever grew: the frames below the handler are kept small, and
// the work before it runs in calls that return, so that the deepest calls
// of a poll fit in the 4 KiB stack net/http's goroutine starts with (see
// offStack). Every 8 KiB stack is 4 KiB per held poll.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	c := s.newCall(w, r)
	defer s.done(c)
	if s.admit(c) {
		s.serve(c)
	}
}

func (s *Server) newCall(w http.ResponseWriter, r *http.Request) *call {
	c := &call{s: s, raw: w, r: r, ctx: r.Context(), start: time.Now(), pattern: "unmatched"}
	c.requestID = newRequestID()
	// The recorder puts the id in the X-Request-Id header when it answers:
	// a header set now would be held, with the map net/http gives it (about
	// 600 bytes), for as long as a long-poll waits.
	c.rec = recorder{ResponseWriter: w, requestID: c.requestID, mediaType: mediaTypeV1, unreadBody: r.ContentLength != 0}
	if strings.HasPrefix(r.URL.Path, adminPrefix+"/") {
		c.rec.mediaType = mediaTypeAdmin
	}
	c.w = &c.rec
	return c
}

// done is serveHTTP's deferred call: it answers a handler's panic with a
// 500, then counts and logs the request.
func (s *Server) done(c *call) {
	if p := recover(); p != nil {
		if p == http.ErrAbortHandler {
			panic(p)
		}
		c.log().Error("panic while handling a request", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		if !c.rec.wrote {
			writeError(&c.rec, errf(registry.CodeInternal, "the server failed while handling this request"))
		}
	}
	if !c.rec.wrote {
		// net/http answers for a handler that wrote nothing.
		c.rec.setRequestID()
	}
	if c.rec.unreadBody {
		// Answered before the body was read (a refusal, a 408): the answer
		// closes the connection, but net/http first reads what remains of
		// the body, up to 256 KiB, with no deadline of its own. A client
		// that never sends it would hold the connection, and its slot under
		// the per-address cap, for good. It gets a moment to finish sending
		// (closing on unread data would reset the connection under the
		// answer), then the connection closes.
		_ = http.NewResponseController(c.raw).SetReadDeadline(time.Now().Add(unreadBodyGrace))
	}
	s.finish(c)
}

// unreadBodyGrace is how long a connection answered before its request's
// body was read waits for the rest of that body before it closes: as long
// as net/http waits before closing a connection whose body it gave up on.
const unreadBodyGrace = 500 * time.Millisecond

// admit finds the request's route and runs prepare. It returns false when
// it has answered the request (with a refusal).
func (s *Server) admit(c *call) bool {
	r := c.r
	routes, jobID := s.match(r.URL.Path)
	if len(routes) == 0 {
		routes, c.params = s.matchAdmin(r.URL.Path)
	}
	if len(routes) == 0 {
		c.err = errf(registry.CodeNotFound, "no such endpoint: %s %s", r.Method, truncate(r.URL.Path, 200))
		writeError(c.w, c.err)
		return false
	}
	c.pattern = routes[0].pattern
	for _, rt := range routes {
		if rt.method == r.Method || rt.head && r.Method == http.MethodHead {
			c.route = rt
		}
	}
	if c.route == nil {
		var allowed []string
		for _, rt := range routes {
			allowed = append(allowed, rt.method)
			if rt.head {
				allowed = append(allowed, http.MethodHead)
			}
		}
		c.raw.Header().Set("Allow", strings.Join(allowed, ", "))
		c.err = errf(CodeMethodNotAllowed, "%s does not accept %s; use %s", c.pattern, r.Method, strings.Join(allowed, ", "))
		writeError(c.w, c.err)
		return false
	}
	c.jobID = jobID
	s.startSpan(c)
	if err := s.prepare(c); err != nil {
		c.err = err
		writeError(c.w, err)
		return false
	}
	return true
}

// serve runs the route's handler and answers its error.
func (s *Server) serve(c *call) {
	if err := c.route.serve(c); err != nil {
		s.answerError(c, err)
	}
}

func (s *Server) answerError(c *call, err error) {
	c.err = err
	if c.r.Context().Err() != nil && registry.ErrorCode(err) == registry.CodeInternal {
		// The client went away and the registry call was cut short:
		// nobody reads this answer; do not report it as a failure.
		err = errf(registry.CodeUnavailable, "request canceled")
		c.err = err
	}
	writeError(c.w, err)
}

// prepare runs the checks every route of its kind needs, in the order that
// gives a client the most useful refusal: media type, credential, rate
// limit, body, signature.
func (s *Server) prepare(c *call) error {
	rt := c.route
	if rt.agentAPI {
		if err := checkAccept(c.r.Header.Get("Accept")); err != nil {
			return err
		}
	}
	if rt.perAddress {
		host := s.clientAddr(c.r)
		// The registry's clock, not the wall's: tests drive it, so a slow
		// machine refilling a bucket mid-test cannot change the answer.
		if ok, wait := s.addrLimits.allow(host, s.reg.Now()); !ok {
			c.w.Header().Set("Retry-After", fmt.Sprint(retryAfterSeconds(wait)))
			return errf(registry.CodeRateLimited, "too many registration attempts from %s; retry after %d s", host, retryAfterSeconds(wait))
		}
	}
	if rt.auth == authAdmin {
		if err := s.authenticateAdmin(c); err != nil {
			return err
		}
		// url.Values drops a pair it cannot unescape: ?cluster=%zzprod
		// would list every cluster's jobs instead of refusing the filter.
		// (Not on the agent API: see refuseBadText on parsing a poll's query.)
		if _, err := url.ParseQuery(c.r.URL.RawQuery); err != nil {
			return errf(registry.CodeInvalid, "the query string is malformed (%v): escape a literal %% as %%25", err)
		}
	} else if rt.auth != authNone {
		purpose := registry.AuthAny
		if rt.auth == authRotate {
			purpose = registry.AuthRotate
		}
		bearer, ok := bearerToken(c.r)
		if !ok {
			return errf(registry.CodeUnauthorized, "a bearer credential is required: Authorization: Bearer <token>")
		}
		if registry.IsAdminToken(bearer) {
			return errf(registry.CodeUnauthorized, "an admin token is not an agent credential: the agent API takes the credential a cluster's agent got at registration")
		}
		a, err := offStack(func() (*registry.Agent, error) { return s.authenticateAgent(c, bearer, purpose) })
		if err != nil {
			return err
		}
		if err := refuseOtherClustersCert(c.r, a); err != nil {
			return err
		}
		c.agent = a
		c.ctx = registry.WithActor(c.ctx, a.Actor())
		if ra := a.Credential.RotateAfter; !ra.IsZero() && !ra.After(s.reg.Now()) {
			// Due for rotation (an admin may have forced it): clients that
			// know the extension rotate now; the credential keeps working
			// until its expiry either way.
			c.w.Header().Set(headerRotateAfter, ra.UTC().Format(time.RFC3339Nano))
		}
		if ok, wait := s.limits.allow(a.Cluster.ID, s.reg.Now()); !ok {
			c.w.Header().Set("Retry-After", fmt.Sprint(retryAfterSeconds(wait)))
			return errf(registry.CodeRateLimited, "cluster %s is over its rate limit; retry after %d s", a.Cluster.ID, retryAfterSeconds(wait))
		}
	}
	if rt.maxBody > 0 {
		if err := c.readBody(rt.maxBody); err != nil {
			return err
		}
		if len(c.body) > 0 && rt.agentAPI {
			if err := checkContentType(c.r.Header.Get("Content-Type")); err != nil {
				return err
			}
		}
	}
	if err := refuseBadText(c.r, c.body); err != nil {
		return err
	}
	if rt.signed && c.agent != nil && c.agent.Credential.Signed() {
		if c.r.TLS != nil && certMatchesCluster(c.r.TLS.VerifiedChains, c.agent.Cluster.ID) {
			return nil // mTLS identifies the cluster: it replaces the signature
		}
		if err := s.verifySignature(c.r, c.body, c.agent); err != nil {
			if code := registry.ErrorCode(err); strings.HasPrefix(string(code), "signature_") {
				s.refusals.Record(c.agent, code)
			}
			return err
		}
	}
	return nil
}

// authenticateAgent checks the bearer credential, and the client
// certificate the request came with: one issued by tether's CA works only
// while the credential it was issued with does (registry
// CheckClientCertificate).
func (s *Server) authenticateAgent(c *call, bearer string, purpose registry.AuthPurpose) (*registry.Agent, error) {
	a, err := s.reg.Authenticate(c.ctx, bearer, purpose)
	if err != nil {
		return nil, err
	}
	if c.r.TLS != nil {
		if err := s.reg.CheckClientCertificate(c.ctx, c.r.TLS.VerifiedChains, purpose); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// offStack runs f on a goroutine of its own and waits for it. A held
// long-poll keeps its goroutine's stack for as long as it waits (stacks only
// shrink when the collector runs), and the store's queries need a deep stack
// (SQLite is C translated to Go): done elsewhere, they leave each of
// thousands of held polls with a small one. It costs a goroutine start, about
// a microsecond.
func offStack[T any](f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	r := <-done
	return r.v, r.err
}

// bearerToken returns the Authorization header's bearer token.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// readBody reads the whole body, refusing more than limit bytes without ever
// holding more than that in memory.
func (c *call) readBody(limit int64) error {
	if c.r.ContentLength > limit {
		return errf(registry.CodeTooLarge, "request body is %d bytes; the limit is %d", c.r.ContentLength, limit)
	}
	rc := http.NewResponseController(c.raw)
	_ = rc.SetReadDeadline(time.Now().Add(c.s.cfg.BodyTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	body, err := io.ReadAll(http.MaxBytesReader(c.raw, c.r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return errf(registry.CodeTooLarge, "request body is larger than the limit of %d bytes", limit)
	case isTimeout(err):
		// The connection is closed after this answer: what remains of the
		// body may still arrive, and would be read as the next request.
		c.w.Header().Set("Connection", "close")
		return errf(CodeRequestTimeout, "the request body did not arrive within %s; send it right after the headers", c.s.cfg.BodyTimeout)
	case err != nil:
		return errf(registry.CodeInvalid, "could not read the request body: %v", err)
	}
	c.body = body
	if rec, ok := c.w.(*recorder); ok {
		rec.unreadBody = false
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
