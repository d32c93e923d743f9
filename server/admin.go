package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tetherhq/tether/registry"
)

// The admin API, /api/admin/v1: what producers, scripts and remote consoles
// use. It shares the agent API's listener, request ids, error shape, logging,
// metrics and status table; it differs in who may call it (admin tokens, with
// roles and organization scopes that the registry enforces) and in speaking
// plain application/json.

const (
	adminPrefix    = "/api/admin/v1"
	mediaTypeAdmin = "application/json"
	// Lists answer at most maxPageSize items per page (defaultPageSize when
	// ?limit= is absent).
	defaultPageSize = 100
	maxPageSize     = 1000
)

// adminRoute is one pattern of the admin API split into segments: literals,
// and "{name}" parameters.
type adminRoute struct {
	segs   []string
	routes []*route // one per method
}

// adminRoutes lists every admin endpoint. The pattern is also the metric
// label and the log's route field.
func (s *Server) adminRoutes() []*route {
	// A submission's envelope around a payload of the largest size the
	// registry accepts must fit.
	body := s.cfg.MaxBodyBytes + 64<<10
	read := func(pattern string, serve func(*call) error) *route {
		return &route{pattern: adminPrefix + pattern, method: http.MethodGet, auth: authAdmin, serve: serve}
	}
	write := func(method, pattern string, serve func(*call) error) *route {
		return &route{pattern: adminPrefix + pattern, method: method, auth: authAdmin, maxBody: body, serve: serve}
	}
	return []*route{
		read("/clusters", s.adminListClusters),
		write(http.MethodPost, "/clusters", s.adminCreateCluster),
		read("/clusters/{c}", s.adminGetCluster),
		write(http.MethodPatch, "/clusters/{c}", s.adminPatchCluster),
		write(http.MethodDelete, "/clusters/{c}", s.adminDeleteCluster),
		write(http.MethodPost, "/clusters/{c}/disable", s.adminSetEnabled(false)),
		write(http.MethodPost, "/clusters/{c}/enable", s.adminSetEnabled(true)),
		write(http.MethodPost, "/clusters/{c}/pause", s.adminSetPaused(true)),
		write(http.MethodPost, "/clusters/{c}/resume", s.adminSetPaused(false)),
		write(http.MethodPost, "/clusters/{c}/registration-tokens", s.adminIssueToken),
		read("/clusters/{c}/registration-tokens", s.adminListTokens),
		read("/registration-tokens", s.adminListTokens),
		read("/clusters/{c}/credentials", s.adminListCredentials),
		read("/clusters/{c}/queue", s.adminQueueHealth),
		read("/queues", s.adminFleetQueueHealth),
		write(http.MethodPost, "/clusters/{c}/credentials/rotate", s.adminForceRotation),
		write(http.MethodPost, "/clusters/{c}/credentials/revoke", s.adminRevokeCredentials),
		write(http.MethodPost, "/registration-tokens/{t}/revoke", s.adminRevokeToken),
		write(http.MethodPost, "/clusters/{c}/signing-keys/rotate", s.adminRotateSigningKey),
		read("/ca", s.adminGetCA),
		write(http.MethodPost, "/ca", s.adminInitCA),

		read("/jobs", s.adminListJobs),
		read("/jobs/count", s.adminCountJobs),
		traced(write(http.MethodPost, "/jobs", s.adminSubmitJob), "submit"),
		read("/jobs/{id}", s.adminGetJob),
		write(http.MethodPost, "/jobs/{id}/requeue", s.adminRequeueJob),
		write(http.MethodPost, "/jobs/{id}/cancel", s.adminCancelJob),
		write(http.MethodPost, "/jobs/{id}/extend-lease", s.adminExtendLease),
		write(http.MethodPost, "/jobs/{id}/retry", s.adminRetryJob),
		write(http.MethodDelete, "/jobs/{id}", s.adminDeleteJob),

		read("/rollouts", s.adminListRollouts),
		write(http.MethodPost, "/rollouts", s.adminCreateRollout),
		read("/rollouts/{r}", s.adminGetRollout),
		write(http.MethodPost, "/rollouts/{r}/pause", s.adminRolloutAction((*registry.Registry).PauseRollout)),
		write(http.MethodPost, "/rollouts/{r}/resume", s.adminRolloutAction((*registry.Registry).ResumeRollout)),
		write(http.MethodPost, "/rollouts/{r}/abort", s.adminRolloutAction((*registry.Registry).AbortRollout)),
		write(http.MethodPost, "/rollouts/{r}/retry-failed", s.adminRolloutAction((*registry.Registry).RetryFailedRollout)),

		read("/events", s.adminListEvents),
		read("/audit", s.adminListAudit),
		read("/stats", s.adminStats),
		read("/whoami", s.adminWhoami),
		read("/watch", s.adminWatch),
		read("/openapi.json", s.adminOpenAPI),

		read("/webhooks", s.adminListWebhooks),
		write(http.MethodPost, "/webhooks", s.adminCreateWebhook),
		read("/webhooks/{w}", s.adminGetWebhook),
		write(http.MethodPatch, "/webhooks/{w}", s.adminPatchWebhook),
		write(http.MethodDelete, "/webhooks/{w}", s.adminDeleteWebhook),
		write(http.MethodPost, "/webhooks/{w}/rotate-secret", s.adminRotateWebhookSecret),
		write(http.MethodPost, "/webhooks/{w}/test", s.adminTestWebhook),
		read("/webhooks/{w}/deliveries", s.adminWebhookDeliveries),
		read("/webhook-deliveries/{id}", s.adminGetWebhookDelivery),
		write(http.MethodPost, "/webhook-deliveries/{id}/redeliver", s.adminRedeliverWebhook),

		read("/admin-tokens", s.adminListAdminTokens),
		write(http.MethodPost, "/admin-tokens", s.adminCreateAdminToken),
		write(http.MethodPatch, "/admin-tokens/{name}", s.adminEditAdminToken),
		write(http.MethodDelete, "/admin-tokens/{name}", s.adminRevokeAdminToken),
	}
}

func (s *Server) buildAdminRoutes() {
	byPattern := map[string]*adminRoute{}
	for _, rt := range s.adminRoutes() {
		ar := byPattern[rt.pattern]
		if ar == nil {
			ar = &adminRoute{segs: strings.Split(strings.TrimPrefix(rt.pattern, adminPrefix+"/"), "/")}
			byPattern[rt.pattern] = ar
			s.admin = append(s.admin, ar)
		}
		ar.routes = append(ar.routes, rt)
	}
}

// matchAdmin finds the routes of an admin API path and its parameters.
// Literal segments win over parameters ("/jobs/stats" would not be a job).
func (s *Server) matchAdmin(path string) ([]*route, map[string]string) {
	rest, ok := strings.CutPrefix(path, adminPrefix+"/")
	if !ok {
		return nil, nil
	}
	segs := strings.Split(rest, "/")
	var best *adminRoute
	bestLiterals := -1
	for _, ar := range s.admin {
		if len(ar.segs) != len(segs) {
			continue
		}
		literals, match := 0, true
		for i, seg := range ar.segs {
			switch {
			case strings.HasPrefix(seg, "{"):
				match = match && segs[i] != ""
			case seg == segs[i]:
				literals++
			default:
				match = false
			}
		}
		if match && literals > bestLiterals {
			best, bestLiterals = ar, literals
		}
	}
	if best == nil {
		return nil, nil
	}
	params := map[string]string{}
	for i, seg := range best.segs {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			v, err := url.PathUnescape(segs[i])
			if err != nil {
				v = segs[i]
			}
			params[strings.TrimSuffix(name, "}")] = v
		}
	}
	return best.routes, params
}

// authenticateAdmin is prepare's step for admin routes: an admin token, never
// an agent credential.
func (s *Server) authenticateAdmin(c *call) error {
	bearer, ok := bearerToken(c.r)
	if !ok {
		return errf(registry.CodeUnauthorized, "an admin token is required: Authorization: Bearer <token> (tether admin-token create issues one)")
	}
	if !registry.IsAdminToken(bearer) {
		return errf(registry.CodeUnauthorized, "this is not an admin token: the admin API takes tokens from 'tether admin-token create', not agent credentials or registration tokens")
	}
	actor, err := offStack(func() (registry.Actor, error) { return s.reg.AuthenticateAdmin(c.ctx, bearer) })
	if err != nil {
		return err
	}
	c.ctx = registry.WithActor(c.ctx, actor)
	c.actor = actor.String()
	return nil
}

// tokenStillWorks checks again, on a request that has been held (a watch
// stream, a ?wait= on a job), the admin token it was authenticated with: a
// token revoked or expired since must not go on receiving changes. It goes
// through the registry's cache, which a revocation evicts before the feed
// delivers anything after it.
func (s *Server) tokenStillWorks(c *call) error {
	_, err := offStack(func() (registry.Actor, error) { return s.reg.AuthenticateAdmin(c.ctx, bearerOf(c.r)) })
	return err
}

// decodeAdmin decodes a JSON request body, refusing unknown fields so that a
// misspelt field is an error rather than silently ignored.
func decodeAdmin(c *call, v any, required bool) error {
	if len(c.body) > 0 {
		if err := checkContentType(c.r.Header.Get("Content-Type")); err != nil {
			return err
		}
	}
	return decodeAdminBody(c.body, v, required)
}

// decodeAdminBody is decodeAdmin for a body whose media type was checked.
func decodeAdminBody(body []byte, v any, required bool) error {
	// The common case, a well-formed object of known fields, is decoded
	// once; anything else is decoded again for the message that says what
	// is wrong.
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if dec.Decode(v) == nil && dec.InputOffset() == int64(len(trimmed)) {
			return nil
		}
	}
	if err := decodeJSON(body, v, required); err != nil {
		return err
	}
	if len(body) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
		return errf(registry.CodeInvalid, "request body has an unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return nil
}

// list is the shape of every list answer.
type list[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// pageParams reads ?limit= and ?cursor=.
func pageParams(q url.Values) (limit int, cursor string, err error) {
	limit = defaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return 0, "", errf(registry.CodeInvalid, "limit %q must be a whole number from 1 to %d", v, maxPageSize)
		}
		limit = n
	}
	return limit, q.Get("cursor"), nil
}

// Cursors are opaque to clients: base64url of a small JSON position.
func encodeCursor(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return errf(registry.CodeInvalid, "cursor %q is not one this server gave out; start again without it", truncate(s, 100))
	}
	return nil
}

// reasonBody is the optional body of actions: why, for the audit trail.
type reasonBody struct {
	Reason string `json:"reason"`
}

func readReason(c *call) (string, error) {
	var b reasonBody
	err := decodeAdmin(c, &b, false)
	return b.Reason, err
}

// queryOrBodyReason is a DELETE's reason: ?reason= (what the CLI and the
// console send), else the optional {"reason"} body other actions take.
func queryOrBodyReason(c *call) (string, error) {
	reason, err := readReason(c)
	if err != nil {
		return "", err
	}
	if q := c.r.URL.Query().Get("reason"); q != "" {
		reason = q
	}
	return reason, nil
}

// traced marks an admin route as traced, its span named op (tracing.go).
func traced(rt *route, op string) *route {
	rt.span = op
	return rt
}
