package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

// Tests of PROTOCOL.md, row by row, over real HTTP.

func TestUnknownPathAndWrongMethodHaveTheErrorShape(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	for _, path := range []string{"/", "/api/agent", "/api/agent/nope", "/api/agent/jobs/j-1/explode", "/api/agent/jobs//ack", "/api/agent/jobs/j-1/ack/more"} {
		a.do(http.MethodGet, path).wantError(t, http.StatusNotFound, "not_found")
	}
	cases := []struct{ method, path, allow string }{
		{http.MethodPost, "/api/agent/jobs", "GET"},
		{http.MethodGet, "/api/agent/register", "POST"},
		{http.MethodDelete, "/api/agent/jobs/j-1/ack", "POST"},
		{http.MethodPut, "/api/agent/events", "POST"},
		{http.MethodPost, "/healthz", "GET, HEAD"},
		// A HEAD poll would hand out jobs whose body nobody reads.
		{http.MethodHead, "/api/agent/jobs", "GET"},
	}
	for _, c := range cases {
		r := a.do(c.method, c.path)
		if c.method == http.MethodHead {
			r.want(t, http.StatusMethodNotAllowed) // no body to say more
		} else {
			r.wantError(t, http.StatusMethodNotAllowed, "method_not_allowed")
		}
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow = %q, want %q", c.method, c.path, got, c.allow)
		}
	}
}

func TestEveryAnswerHasARequestID(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	seen := map[string]bool{}
	for _, r := range []*response{a.poll(0), e.do(http.MethodGet, "/healthz"), e.getMetrics(), a.do(http.MethodGet, "/x")} {
		id := r.header.Get("X-Request-Id")
		if !strings.HasPrefix(id, "rq-") || seen[id] {
			t.Errorf("X-Request-Id = %q: want a fresh rq- id", id)
		}
		seen[id] = true
	}
	// The id is on the request's log line too.
	for id := range seen {
		if !strings.Contains(e.logs.String(), "request_id="+id) {
			t.Errorf("request id %s is not in the log", id)
		}
	}
}

func TestAcceptRules(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	ok := []string{"", "*/*", "application/json", mediaV1, "application/*", "application/vnd.vworkspace.agent.v2+json, " + mediaV1 + ";q=0.5", "text/html, application/json"}
	for _, accept := range ok {
		r := a.do(http.MethodGet, "/api/agent/jobs?cluster="+a.clusterID+"&wait=0", withHeader("Accept", accept))
		r.want(t, http.StatusOK)
		if ct := r.header.Get("Content-Type"); ct != mediaV1 {
			t.Errorf("Accept %q: Content-Type = %q, want %q", accept, ct, mediaV1)
		}
	}
	bad := []string{"application/vnd.vworkspace.agent.v2+json", "text/html", "application/json;q=0", "application/vnd.vworkspace.agent.v3+json, application/xml"}
	for _, accept := range bad {
		a.do(http.MethodGet, "/api/agent/jobs?cluster="+a.clusterID+"&wait=0", withHeader("Accept", accept)).
			wantError(t, http.StatusNotAcceptable, "not_acceptable")
	}
	// Register is under the same rule, before anything else.
	e.do(http.MethodPost, "/api/agent/register", withHeader("Accept", "application/vnd.vworkspace.agent.v2+json"), withJSON(map[string]string{"registrationToken": "x"})).
		wantError(t, http.StatusNotAcceptable, "not_acceptable")
}

func TestContentTypeRules(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	a.ack(job).wantNoContent(t)
	for _, ct := range []string{"text/plain", "application/xml", "application/vnd.vworkspace.agent.v2+json", "not a media type"} {
		a.status(job, withHeader("Content-Type", ct)).wantError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	a.status(job, withoutHeader("Content-Type")).wantError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	for _, ct := range []string{mediaV1, "application/json", "application/json; charset=utf-8", mediaV1 + "; charset=UTF-8"} {
		a.status(job, withHeader("Content-Type", ct)).wantNoContent(t)
	}
	// An ack or a heartbeat with no body needs no Content-Type.
	job2 := e.submit(a.clusterID)
	a.ack(job2, withHeader("Content-Type", "text/plain")).wantNoContent(t) // no body: nothing to type
	a.heartbeat(job2).wantNoContent(t)
}

func TestRegister(t *testing.T) {
	e := newEnv(t)
	c, tok := e.cluster("prod")
	r := e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": tok}))
	r.want(t, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != mediaV1 {
		t.Errorf("Content-Type = %q, want %q", ct, mediaV1)
	}
	var ans credentialAnswer
	r.decode(t, &ans)
	if ans.ClusterID != c.ID || !strings.HasPrefix(ans.Token, "tether_cred_") {
		t.Fatalf("answer = %+v, want cluster %s and a credential", ans, c.ID)
	}
	now := e.clock.Now()
	for name, v := range map[string]string{"expiresAt": ans.ExpiresAt, "rotateAfter": ans.RotateAfter} {
		got, err := time.Parse(time.RFC3339, v)
		if err != nil || !got.After(now) {
			t.Errorf("%s = %q: want an RFC 3339 time after %s (%v)", name, v, now, err)
		}
	}
	if ans.HMACKey != "" || ans.LeaseSeconds != 0 || ans.GraceUntil != "" {
		t.Errorf("a client that negotiated nothing got hmacKey %q, leaseSeconds %d, graceUntil %q", ans.HMACKey, ans.LeaseSeconds, ans.GraceUntil)
	}
	// The token is one-time.
	e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": tok})).
		wantError(t, http.StatusUnauthorized, "registration_token_invalid")
}

func TestRegisterReadsTheTokenFromTokenFieldOrHeader(t *testing.T) {
	e := newEnv(t)
	_, tok1 := e.cluster("a")
	e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"token": tok1})).want(t, http.StatusOK)
	_, tok2 := e.cluster("b")
	e.do(http.MethodPost, "/api/agent/register", withBearer(tok2)).want(t, http.StatusOK)
	_, tok3 := e.cluster("c")
	e.do(http.MethodPost, "/api/agent/register", withBearer(tok3), withBody(`{}`)).want(t, http.StatusOK)
	// No token anywhere.
	e.do(http.MethodPost, "/api/agent/register", withBody(`{}`)).wantError(t, http.StatusUnauthorized, "registration_token_invalid")
}

func TestRegisterRefusalsAllLookTheSame(t *testing.T) {
	e := newEnv(t)
	_, used := e.cluster("used")
	e.register(used)
	_, expired := e.cluster("expired")
	_, revokedTok := e.cluster("revoked")
	if _, err := e.reg.RevokeToken(adminCtx(), revokedTok, "test"); err != nil {
		t.Fatal(err)
	}
	_, superseded := e.cluster("superseded")
	if _, err := e.reg.IssueToken(adminCtx(), "superseded", 0); err != nil {
		t.Fatal(err)
	}
	// A token whose id exists but whose secret is wrong.
	wrongSecret := used[:len(used)-4] + "aaaa"
	e.clock.Advance(registry.DefaultTokenTTL + time.Second) // "expired" is past its 24 h (the others are refused for their own reasons first)
	messages := map[string]bool{}
	for _, tok := range map[string]string{
		"unknown": "tether_reg_01hxyza1b2c3d4e5f6g7h8j9k0_abcdefghijklmnopqrstuvwxyz234567", "garbage": "hello",
		"used": used, "expired": expired, "revoked": revokedTok, "superseded": superseded, "wrong secret": wrongSecret,
	} {
		ans := e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": tok})).
			wantError(t, http.StatusUnauthorized, "registration_token_invalid")
		messages[ans.Message] = true
	}
	if len(messages) != 1 {
		t.Errorf("refusals have %d different messages, want 1 (the reason goes to the audit log only): %v", len(messages), messages)
	}
	// The reasons of refusals that named a real token are in the audit trail;
	// unknown and garbage tokens are not (anyone can send those).
	audit, err := e.reg.ListAudit(context.Background(), registry.AuditListParams{Action: registry.AuditRegisterFailed, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 5 {
		t.Errorf("audit has %d register_failed entries, want 5 (used, expired, revoked, superseded, wrong secret)", len(audit))
	}
}

func TestRegisterIsRateLimitedPerAddress(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.RateLimit = 0 }) // the defaults
	limited := 0
	for range server.RegisterRateBurst + 20 {
		ans := e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": "hello"}))
		if ans.status == http.StatusTooManyRequests {
			if ans.header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			limited++
		}
	}
	if limited == 0 {
		t.Fatalf("%d registration attempts from one address in a burst were never limited", server.RegisterRateBurst+20)
	}
}

func TestRegisterDisabledClusterAndRequiredCapability(t *testing.T) {
	e := newEnv(t)
	_, tok := e.cluster("off")
	if _, err := e.reg.SetClusterEnabled(adminCtx(), "off", false, "test"); err != nil {
		t.Fatal(err)
	}
	e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": tok})).
		wantError(t, http.StatusForbidden, "cluster_disabled")

	_, tok2 := e.cluster("strict", func(s *registry.ClusterSpec) { s.Policy.RequiredCapabilities = []string{"hmac"} })
	e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": tok2, "capabilities": []string{"lease"}})).
		wantError(t, http.StatusBadRequest, "capability_required")
	// The refusal did not use the token up.
	a := e.register(tok2, "hmac", "lease", "future-thing")
	if a.hmacKey == nil || a.leaseSeconds != registry.DefaultLeaseSeconds {
		t.Errorf("hmac+lease registration: hmacKey %v, leaseSeconds %d; want a key and %d", a.hmacKey != nil, a.leaseSeconds, registry.DefaultLeaseSeconds)
	}
}

func TestRegisterConcurrentRedemptionsExactlyOneWins(t *testing.T) {
	e := newEnv(t)
	_, tok := e.cluster("race")
	const n = 10
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": tok})).status
		}()
	}
	wg.Wait()
	won := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			won++
		case http.StatusUnauthorized:
		default:
			t.Errorf("a redemption answered %d", c)
		}
	}
	if won != 1 {
		t.Errorf("%d redemptions won, want exactly 1 (codes %v)", won, codes)
	}
}

func TestBearerAuth401And403(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	path := "/api/agent/jobs?cluster=" + a.clusterID + "&wait=0"
	e.do(http.MethodGet, path).wantError(t, http.StatusUnauthorized, "unauthorized")
	e.do(http.MethodGet, path, withHeader("Authorization", "Basic Zm9vOmJhcg==")).wantError(t, http.StatusUnauthorized, "unauthorized")
	e.do(http.MethodGet, path, withBearer("nonsense")).wantError(t, http.StatusUnauthorized, "unauthorized")
	r := e.do(http.MethodGet, path, withBearer(a.token[:len(a.token)-3]+"xyz"))
	r.wantError(t, http.StatusUnauthorized, "unauthorized")
	if r.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	// A lowercase scheme is still a bearer token.
	e.do(http.MethodGet, path, withHeader("Authorization", "bearer "+a.token)).want(t, http.StatusOK)

	// Disabled cluster: 403 cluster_disabled on every endpoint.
	job := e.submit(a.clusterID)
	if _, err := e.reg.SetClusterEnabled(adminCtx(), a.clusterID, false, "test"); err != nil {
		t.Fatal(err)
	}
	a.poll(0).wantError(t, http.StatusForbidden, "cluster_disabled")
	a.ack(job).wantError(t, http.StatusForbidden, "cluster_disabled")
	a.events(heartbeatBody(a.clusterID)).wantError(t, http.StatusForbidden, "cluster_disabled")
	a.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`)).wantError(t, http.StatusForbidden, "cluster_disabled")
	if _, err := e.reg.SetClusterEnabled(adminCtx(), a.clusterID, true, "test"); err != nil {
		t.Fatal(err)
	}
	a.poll(0).want(t, http.StatusOK)

	// Revocation is immediate.
	if _, err := e.reg.RevokeCredentials(adminCtx(), a.clusterID, "test"); err != nil {
		t.Fatal(err)
	}
	a.poll(0).wantError(t, http.StatusUnauthorized, "unauthorized")
	a.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`)).wantError(t, http.StatusUnauthorized, "unauthorized")
}

// A capability the cluster's policy starts requiring applies at the
// credential's next rotation: rotating without it is refused (the credential
// keeps working until it expires), rotating with it adds it.
func TestRotateAddsRequiredCapability(t *testing.T) {
	e := newEnv(t)
	old := e.newAgent("c1", "lease")
	if _, err := e.reg.ModifyCluster(adminCtx(), "c1", func(s *registry.ClusterSpec) error {
		s.Policy.RequiredCapabilities = []string{registry.CapabilityHMAC}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	old.poll(0).want(t, http.StatusOK)
	old.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`)).
		wantError(t, http.StatusBadRequest, "capability_required")
	r := old.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{"capabilities":["hmac"]}`))
	r.want(t, http.StatusOK)
	var ans credentialAnswer
	r.decode(t, &ans)
	if got := strings.Join(ans.Capabilities, ","); got != "hmac,lease" || ans.HMACKey == "" {
		t.Fatalf("rotation answered capabilities %q (hmacKey set: %v), want hmac,lease with a key", got, ans.HMACKey != "")
	}
	e.agentFrom(ans).poll(0).want(t, http.StatusOK)
}

func TestRotateGraceAndExpiry(t *testing.T) {
	e := newEnv(t)
	old := e.newAgent("c1", "lease")
	r := old.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`))
	r.want(t, http.StatusOK)
	var ans credentialAnswer
	r.decode(t, &ans)
	if ans.ClusterID != old.clusterID || ans.Token == "" || ans.Token == old.token {
		t.Fatalf("rotate answer %+v: want a new token for %s", ans, old.clusterID)
	}
	grace, err := time.Parse(time.RFC3339, ans.GraceUntil)
	if err != nil || !grace.Equal(e.clock.Now().Add(registry.DefaultRotationGrace)) {
		t.Errorf("graceUntil = %q, want now + 24h (%v)", ans.GraceUntil, err)
	}
	if ans.LeaseSeconds != registry.DefaultLeaseSeconds || !strings.Contains(strings.Join(ans.Capabilities, ","), "lease") {
		t.Errorf("rotation did not inherit the lease capability: %+v", ans)
	}
	fresh := e.agentFrom(ans)
	old.poll(0).want(t, http.StatusOK) // the old token works inside the grace
	fresh.poll(0).want(t, http.StatusOK)
	e.clock.Advance(registry.DefaultRotationGrace + time.Second)
	old.poll(0).wantError(t, http.StatusUnauthorized, "unauthorized")
	fresh.poll(0).want(t, http.StatusOK)

	// An expired credential may only rotate, inside its grace (and with no
	// body at all).
	e.clock.Advance(registry.DefaultCredentialTTL - registry.DefaultRotationGrace)
	fresh.poll(0).wantError(t, http.StatusUnauthorized, "unauthorized")
	r = fresh.do(http.MethodPost, "/api/agent/credentials/rotate")
	r.want(t, http.StatusOK)
	r.decode(t, &ans)
	e.agentFrom(ans).poll(0).want(t, http.StatusOK)
	// Malformed JSON is still refused.
	e.agentFrom(ans).do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{`)).wantError(t, http.StatusBadRequest, "invalid")
}

func TestPollParameters(t *testing.T) {
	e := newEnvWith(t, withoutVisibility)
	a := e.newAgent("c1")
	for i := 0; i < 12; i++ {
		e.submit(a.clusterID)
	}
	// No limit: one job, which a client that acks each job of an answer
	// only when it reaches it acks at once (TestPublicOperatorReplicasApplyEachJobOnce).
	if got := len(a.poll(0).jobIDs(t)); got != 1 {
		t.Errorf("a poll without limit gave %d jobs, want 1", got)
	}
	q := "/api/agent/jobs?cluster=" + a.clusterID + "&wait=0"
	if got := len(a.do(http.MethodGet, q+"&limit=3").jobIDs(t)); got != 3 {
		t.Errorf("limit=3 gave %d jobs", got)
	}
	if got := len(a.do(http.MethodGet, q+"&limit=1000").jobIDs(t)); got != 12 {
		t.Errorf("limit=1000 (capped at 100) gave %d jobs, want all 12", got)
	}
	// Over 300 is treated as 300: with jobs queued, it answers at once.
	a.do(http.MethodGet, "/api/agent/jobs?cluster="+a.clusterID+"&wait=100000").want(t, http.StatusOK)
	for _, bad := range []string{"wait=abc", "wait=-1", "wait=1.5", "wait=99999999999999999999999", "limit=0", "limit=-3", "limit=x"} {
		r := a.do(http.MethodGet, "/api/agent/jobs?cluster="+a.clusterID+"&"+bad)
		ans := r.wantError(t, http.StatusBadRequest, "invalid")
		field := strings.Split(bad, "=")[0]
		if !strings.Contains(ans.Message, field) {
			t.Errorf("%s: message %q does not name the field %s", bad, ans.Message, field)
		}
	}
	a.do(http.MethodGet, "/api/agent/jobs?wait=0").wantError(t, http.StatusBadRequest, "invalid") // cluster is required
}

func TestPollJobShape(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "lease")
	j, _, err := e.reg.SubmitJob(adminCtx(), registry.JobSubmission{
		ClusterID: a.clusterID, Kind: registry.KindApply, IdempotencyKey: "configmap/default/x@1", ExpiresIn: time.Hour,
		Payload: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	plain := e.newAgent("c2")
	e.submit(plain.clusterID)

	r := a.poll(0)
	got := r.jobs(t).Jobs
	if len(got) != 1 {
		t.Fatalf("got %d jobs", len(got))
	}
	g := got[0]
	if g.ID != j.ID || g.Kind != "apply" || g.IdempotencyKey != "configmap/default/x@1" || g.Attempt != 1 || g.LeaseSeconds != registry.DefaultLeaseSeconds {
		t.Errorf("job = %+v", g)
	}
	if !strings.Contains(string(g.Payload), `"name":"x"`) {
		t.Errorf("payload = %s", g.Payload)
	}
	for name, v := range map[string]*string{"createdAt": g.CreatedAt, "expiresAt": g.ExpiresAt} {
		if v == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if _, err := time.Parse(time.RFC3339, *v); err != nil {
			t.Errorf("%s = %q: %v", name, *v, err)
		}
	}
	// No expiry: the field is absent, never "". No lease client: no leaseSeconds.
	raw := string(plain.poll(0).body)
	if strings.Contains(raw, "expiresAt") || strings.Contains(raw, `""`) || strings.Contains(raw, "leaseSeconds") {
		t.Errorf("job without expiry or lease: %s", raw)
	}
}

func TestAckStatusHeartbeatResultLeaseClient(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "lease")
	job := e.submit(a.clusterID)
	r := a.ack(job)
	r.wantNoContent(t)
	claim := r.header.Get("X-Claim-Id")
	if claim == "" {
		t.Fatal("lease client's ack has no X-Claim-Id")
	}
	until, err := time.Parse(time.RFC3339, r.header.Get("X-Lease-Expires-At"))
	if want := e.clock.Now().Add(registry.DefaultLeaseSeconds * time.Second); err != nil || !until.Equal(want) {
		t.Errorf("X-Lease-Expires-At = %q, want %s (%v)", r.header.Get("X-Lease-Expires-At"), want, err)
	}
	a.ack(job).wantError(t, http.StatusConflict, "already_claimed")

	e.clock.Advance(30 * time.Second)
	a.status(job, withHeader("X-Claim-Id", claim)).wantNoContent(t)
	e.clock.Advance(10 * time.Second)
	r = a.heartbeat(job, withHeader("X-Claim-Id", claim))
	r.wantNoContent(t)
	until, err = time.Parse(time.RFC3339, r.header.Get("X-Lease-Expires-At"))
	if want := e.clock.Now().Add(registry.DefaultLeaseSeconds * time.Second); err != nil || !until.Equal(want) {
		t.Errorf("heartbeat X-Lease-Expires-At = %q, want %s", r.header.Get("X-Lease-Expires-At"), want)
	}
	a.heartbeat(job, withHeader("X-Claim-Id", "fc-not-mine")).wantError(t, http.StatusConflict, "stale_claim")
	a.result(job, `{"outcome":"succeeded"}`, withHeader("X-Claim-Id", claim)).wantNoContent(t)
	a.result(job, `{"outcome":"succeeded"}`).wantError(t, http.StatusConflict, "result_already_recorded")
	a.status(job).wantError(t, http.StatusConflict, "job_closed")
	a.ack(job).wantError(t, http.StatusConflict, "job_closed")
	a.ack("j-does-not-exist").wantError(t, http.StatusNotFound, "job_not_found")
	a.status("j-does-not-exist").wantError(t, http.StatusNotFound, "job_not_found")

	j, err := e.reg.GetJob(context.Background(), job)
	if err != nil || j.State != registry.JobSucceeded {
		t.Errorf("job = %+v, %v; want succeeded", j, err)
	}
	hist, _ := e.reg.JobHistory(context.Background(), job)
	sawStatus := false
	for _, h := range hist {
		sawStatus = sawStatus || (h.Type == registry.HistoryStatus && h.Phase == "Reconciling")
	}
	if !sawStatus {
		t.Errorf("status not in the job's timeline: %+v", hist)
	}
}

func TestAckWithoutLeaseHasNoLeaseHeaders(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	r := a.ack(job)
	r.wantNoContent(t)
	if r.header.Get("X-Claim-Id") != "" || r.header.Get("X-Lease-Expires-At") != "" {
		t.Errorf("a client without the lease capability got lease headers: %v", r.header)
	}
	r = a.heartbeat(job)
	r.wantNoContent(t)
	if r.header.Get("X-Lease-Expires-At") != "" {
		t.Errorf("heartbeat of an unleased job has X-Lease-Expires-At")
	}
}

func TestResultRules(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	a.ack(job).wantNoContent(t)
	ans := a.result(job, `{"outcome":"exploded"}`).wantError(t, http.StatusBadRequest, "invalid_outcome")
	if !strings.Contains(ans.Message, "outcome") {
		t.Errorf("message %q does not name the field", ans.Message)
	}
	a.result(job, `{}`).wantError(t, http.StatusBadRequest, "invalid_outcome")
	a.result(job, `{"outcome":"failed"}`).wantError(t, http.StatusBadRequest, "error_required")
	a.result(job, `{"outcome":"conflict","error":"  "}`).wantError(t, http.StatusBadRequest, "error_required")
	a.result(job, `{"outcome":"failed","error":"HelmReleaseFailed: boom","appliedRef":{"kind":"X","generation":7},"timestamp":"2026-05-28T10:01:00Z","futureField":[1,2]}`).wantNoContent(t)
	j, _ := e.reg.GetJob(context.Background(), job)
	if j.State != registry.JobFailed || j.Error != "HelmReleaseFailed: boom" || !strings.Contains(string(j.Result), "appliedRef") {
		t.Errorf("job = %s / %q / %s", j.State, j.Error, j.Result)
	}

	// A queued job (never acked) takes only noop: the expired-job path.
	q := e.submit(a.clusterID)
	a.result(q, `{"outcome":"succeeded"}`).wantError(t, http.StatusConflict, "stale_claim")
	a.result(q, `{"outcome":"noop","error":"expired"}`).wantNoContent(t)
}

func TestFencingStaleClaimAfterReclaim(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "lease")
	job := e.submit(a.clusterID)
	r := a.ack(job)
	r.wantNoContent(t)
	first := r.header.Get("X-Claim-Id")
	// The lease runs out; the reaper returns the job to the queue.
	e.clock.Advance(registry.DefaultLeaseSeconds*time.Second + time.Second)
	rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(context.Background())
	if err != nil || rep.Requeued != 1 {
		t.Fatalf("reaper: %+v, %v", rep, err)
	}
	e.srv.RecordReap(rep, nil)
	jobs := a.poll(0).jobs(t).Jobs
	if len(jobs) != 1 || jobs[0].Attempt != 2 {
		t.Fatalf("after reclaim: %+v, want the job again at attempt 2", jobs)
	}
	r = a.ack(job)
	r.wantNoContent(t)
	second := r.header.Get("X-Claim-Id")
	if second == first {
		t.Fatal("the new claim has the old fencing token")
	}
	a.status(job, withHeader("X-Claim-Id", first)).wantError(t, http.StatusConflict, "stale_claim")
	a.result(job, `{"outcome":"succeeded"}`, withHeader("X-Claim-Id", first)).wantError(t, http.StatusConflict, "stale_claim")
	a.result(job, `{"outcome":"succeeded"}`, withHeader("X-Claim-Id", second)).wantNoContent(t)
}

func TestCanceledJobAnswersJobCanceled(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "lease")
	job := e.submit(a.clusterID)
	a.ack(job).wantNoContent(t)
	if _, err := e.reg.CancelJob(adminCtx(), job, "test"); err != nil {
		t.Fatal(err)
	}
	a.status(job).wantError(t, http.StatusConflict, "job_canceled")
	a.heartbeat(job).wantError(t, http.StatusConflict, "job_canceled")
	a.result(job, `{"outcome":"succeeded"}`).wantError(t, http.StatusConflict, "job_canceled")
	// A canceled queued job is closed for an ack.
	q := e.submit(a.clusterID)
	if _, err := e.reg.CancelJob(adminCtx(), q, "test"); err != nil {
		t.Fatal(err)
	}
	a.ack(q).wantError(t, http.StatusConflict, "job_closed")
}

func TestExpiredJobIsNotHandedOutAndAckIsClosed(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	j, _, err := e.reg.SubmitJob(adminCtx(), registry.JobSubmission{
		ClusterID: a.clusterID, Kind: registry.KindApply, ExpiresIn: time.Minute,
		Payload: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	if ids := a.poll(0).jobIDs(t); len(ids) != 0 {
		t.Errorf("expired job handed out: %v", ids)
	}
	a.ack(j.ID).wantError(t, http.StatusConflict, "job_closed")
	a.result(j.ID, `{"outcome":"noop","error":"expired"}`).wantNoContent(t)
}

func heartbeatBody(clusterID string) string {
	return fmt.Sprintf(`{"events":[{"kind":"ClusterHeartbeat","resourceRef":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Cluster","namespace":"","name":%q},"timestamp":"2026-05-28T10:01:30Z"}]}`, clusterID)
}

func TestEvents(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	a.events(heartbeatBody(a.clusterID)).wantNoContent(t)
	c, err := e.reg.GetCluster(context.Background(), a.clusterID)
	if err != nil || !c.Status.LastHeartbeatAt.Equal(e.clock.Now().Truncate(time.Millisecond)) {
		t.Errorf("heartbeat did not update last seen: %+v, %v", c.Status, err)
	}
	keyed := `{"clusterId":"` + a.clusterID + `","events":[{"kind":"Audit","eventKey":"rotation","message":"rotated","resourceRef":{"kind":"Cluster","name":"x"}}]}`
	a.events(keyed).wantNoContent(t)
	a.events(keyed).wantNoContent(t) // a duplicate: dropped, still 204
	count := func() int {
		evs, err := e.reg.ListEvents(context.Background(), registry.EventListParams{ClusterID: a.clusterID, Kinds: []string{"Audit"}})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	if n := count(); n != 1 {
		t.Errorf("%d Audit events after a duplicate, want 1", n)
	}
	e.clock.Advance(registry.DefaultEventReplayWindow + time.Second) // the same key later is a new event
	a.events(keyed).wantNoContent(t)
	if n := count(); n != 2 {
		t.Errorf("%d Audit events after the replay window, want 2", n)
	}
	a.events(`{"events":[]}`).wantError(t, http.StatusBadRequest, "invalid")
	a.events(`{"events":[{"kind":""}]}`).wantError(t, http.StatusBadRequest, "invalid")
	var many strings.Builder
	many.WriteString(`{"events":[`)
	for i := range 1001 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`{"kind":"Audit"}`)
	}
	many.WriteString(`]}`)
	a.events(many.String()).wantError(t, http.StatusRequestEntityTooLarge, "too_large")
}

func TestBodyLimitIsAClear413(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxBodyBytes = 64 << 10 })
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	a.ack(job).wantNoContent(t)
	huge := `{"phase":"` + strings.Repeat("x", 1<<20) + `"}`
	a.status(job, withBody(huge)).wantError(t, http.StatusRequestEntityTooLarge, "too_large")
	// Without a Content-Length (chunked), the limit holds as the body streams.
	r := a.status(job, withBody(huge), func(r *http.Request) { r.ContentLength = -1 })
	r.wantError(t, http.StatusRequestEntityTooLarge, "too_large")
	a.status(job).wantNoContent(t) // the server is fine
}

func TestRateLimit429WithRetryAfter(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.RateLimit, c.RateBurst = 0.01, 2 })
	a := e.newAgent("c1")
	b := e.newAgent("c2")
	a.poll(0).want(t, http.StatusOK)
	a.poll(0).want(t, http.StatusOK)
	r := a.poll(0)
	r.wantError(t, http.StatusTooManyRequests, "rate_limited")
	if got := r.header.Get("Retry-After"); got != "100" {
		t.Errorf("Retry-After = %q, want 100 (one token at 0.01/s)", got)
	}
	b.poll(0).want(t, http.StatusOK) // per cluster: another cluster is not affected
	if !strings.Contains(string(e.getMetrics().body), `tether_http_requests_total{code="429",method="GET",route="/api/agent/jobs"} 1`) {
		t.Error("429 not counted in metrics")
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	e := newEnv(t)
	e.do(http.MethodGet, "/healthz").want(t, http.StatusOK)
	e.do(http.MethodGet, "/readyz").want(t, http.StatusOK)
	// Some load balancers and uptime checks probe with HEAD. (The probes
	// take no token; /metrics takes an admin token: metrics_auth_test.go.)
	scraper := withBearer(e.adminToken("head-scraper", registry.RoleViewer, ""))
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := e.do(http.MethodHead, path, scraper); r.status != http.StatusOK || len(r.body) != 0 {
			t.Errorf("HEAD %s: %d with %d bytes of body, want 200 and none", path, r.status, len(r.body))
		}
	}

	a := e.newAgent("c1", "lease")
	e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]string{"registrationToken": "garbage"})).want(t, http.StatusUnauthorized)
	_, usedTok := e.cluster("used")
	e.register(usedTok)
	e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]string{"registrationToken": usedTok})).want(t, http.StatusUnauthorized)
	e.do(http.MethodPost, "/api/agent/register", withBody(`{}`)).want(t, http.StatusUnauthorized)
	job := e.submit(a.clusterID)
	e.submit(a.clusterID)
	a.ack(job).wantNoContent(t)
	e.clock.Advance(time.Hour)
	rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.srv.RecordReap(rep, nil)
	a2 := e.newAgent("c2")
	held := make(chan *response, 1)
	go func() { held <- a2.poll(30) }()
	var text string
	eventually(t, "the long-poll to be held", func() bool {
		r := e.getMetrics()
		r.want(t, http.StatusOK)
		text = string(r.body)
		return strings.Contains(text, "tether_agent_longpolls_held 1")
	})
	for _, want := range []string{
		`tether_http_requests_total{code="204",method="POST",route="/api/agent/jobs/{id}/ack"} 1`,
		`tether_http_requests_total{code="401",method="POST",route="/api/agent/register"} 3`,
		`tether_http_request_duration_seconds_bucket{route="/api/agent/jobs/{id}/ack",le=`,
		`tether_jobs{state="queued"} 2`,
		`tether_jobs{state="in_progress"} 0`,
		`tether_reaper_jobs_total{action="requeued"} 1`,
		`tether_lease_expirations_total 1`,
		`tether_registration_failures_total{reason="malformed"} 1`,
		`tether_registration_failures_total{reason="used"} 1`,
		`tether_registration_failures_total{reason="missing"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	e.submit(a2.clusterID)
	(<-held).want(t, http.StatusOK)
	eventually(t, "the held gauge to drop", func() bool {
		return strings.Contains(string(e.getMetrics().body), "tether_agent_longpolls_held 0")
	})
}
