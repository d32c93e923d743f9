package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/registry"
)

// The request pipeline: every request, agent or admin, is a call that is
// admitted (limits), prepared (route, media types, authentication, body),
// served, answered and logged here.

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
	// parked: the handler handed the request to a parked poll (park.go),
	// which answers and finishes it; net/http's goroutine leaves it alone.
	parked bool
	// lookSlot: the call holds one of the parker's look slots, taken before
	// admission, given back after its first look (park_early.go).
	lookSlot bool
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
	if s.parkBeforeAdmit(c) {
		return // a looker admits and serves it
	}
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
	if strings.HasPrefix(r.URL.Path, adminPrefix+"/") || r.URL.Path == metricsPath {
		// /metrics takes admin tokens: its refusals speak the admin API's
		// plain JSON.
		c.rec.mediaType = mediaTypeAdmin
	}
	c.w = &c.rec
	return c
}

// done is serveHTTP's deferred call: it answers a handler's panic with a
// 500, then counts and logs the request.
func (s *Server) done(c *call) {
	s.giveBackLookSlot(c)
	if c.parked {
		return // set by the handler as it returned: no panic to recover
	}
	s.finishCall(c, recover(), true)
}

// doneParked is done for a parked poll, in its own goroutine, where a panic
// (even http.ErrAbortHandler) is answered: nothing above it would recover.
func (s *Server) doneParked(c *call) { s.finishCall(c, recover(), false) }

func (s *Server) finishCall(c *call, p any, underNetHTTP bool) {
	if p != nil {
		if p == http.ErrAbortHandler && underNetHTTP {
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
	if rt.auth == authScrape {
		if err := s.authenticateScraper(c); err != nil {
			return err
		}
	} else if rt.auth == authAdmin {
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
