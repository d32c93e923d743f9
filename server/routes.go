package server

import (
	"net/http"
	"strings"
)

// The agent API's routes (the admin API's are in admin.go): two map
// lookups, an exact path and a per-job path, so that every answer, 404 and
// 405 included, is the protocol's JSON error and the route is known before
// the body is read (see docs/architecture.md).

type authMode int

const (
	authNone   authMode = iota
	authAgent           // a credential with full access
	authRotate          // a credential that may at least rotate
	authAdmin           // an admin token (the admin API)
	// authScrape: an admin token of any role that no organization confines
	// (/metrics: its series name every organization's clusters).
	authScrape
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
		// The series name every organization's clusters, and agents of
		// every organization reach this listener: an admin token that sees
		// them all, or --diag-listen's port, which needs none (diag.go).
		{pattern: metricsPath, method: http.MethodGet, auth: authScrape, quiet: true, head: true, serve: s.handleMetrics},
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
