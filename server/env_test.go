package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

const mediaV1 = "application/vnd.vworkspace.agent.v1+json"

// patience bounds every wait in these tests: generous, because they run on
// slow shared machines; a correct server answers in milliseconds.
const patience = 20 * time.Second

// env is a real server on 127.0.0.1 over a real SQLite file, with a fake
// clock for the registry.
type env struct {
	t      testing.TB
	dbPath string
	store  registry.Store
	reg    *registry.Registry
	clock  *clocktest.Clock
	srv    *server.Server
	url    string
	client *http.Client
	logs   *syncBuffer
	// scraper is the admin token getMetrics scrapes with (issued on first
	// use).
	scraper string

	cancel context.CancelFunc
	served chan error
}

type envOption func(*server.Config)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	return newEnvWith(t, registry.Config{}, opts...)
}

// withoutVisibility is the registry of PROTOCOL.md's first version: every
// poll sees every queued job (for tests of wake-ups and ack races).
var withoutVisibility = registry.Config{VisibilityWindow: -1}

// newEnvWith is newEnv with a registry configuration (its clock and keyring
// are the env's).
func newEnvWith(t testing.TB, rc registry.Config, opts ...envOption) *env {
	t.Helper()
	return newEnvOn(t, func(path string) (registry.Store, error) {
		return sqlite.Open(context.Background(), path, sqlite.Options{})
	}, rc, opts...)
}

// newEnvOn is newEnvWith over a store of the caller's (open gets a file
// path in the test's directory, which a SQLite store may use).
func newEnvOn(t testing.TB, open func(path string) (registry.Store, error), rc registry.Config, opts ...envOption) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dbPath: filepath.Join(dir, "tether.db"), clock: clocktest.New(), logs: &syncBuffer{}}
	st, err := open(e.dbPath)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	e.store = st
	rc.Clock, rc.Keyring = e.clock, registry.NewKeyFile(registry.KeyFilePath(e.dbPath))
	e.reg = registry.New(st, rc)
	cfg := server.Config{
		Logger:    slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RateLimit: -1, // most tests make many requests quickly; the rate-limit tests set their own
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.srv = server.New(e.reg, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	e.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.served = cancel, make(chan error, 1)
	go func() { e.served <- e.srv.Serve(ctx, ln) }()
	e.client = &http.Client{Timeout: 2 * patience, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
		e.client.CloseIdleConnections()
		e.reg.Close()
		e.store.Close()
	})
	return e
}

// stop ends Serve's context and waits for it to return (once).
func (e *env) stop() error {
	e.cancel()
	select {
	case err, ok := <-e.served:
		if ok {
			close(e.served)
		}
		return err
	case <-time.After(patience):
		return fmt.Errorf("Serve did not return within %s of its context ending", patience)
	}
}

func adminCtx() context.Context {
	return registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
}

// cluster creates a cluster that allows everything, and returns it with its
// one-time registration token.
func (e *env) cluster(name string, edit ...func(*registry.ClusterSpec)) (*registry.Cluster, string) {
	e.t.Helper()
	spec := registry.ClusterSpec{
		Name: name, Organization: "org", AllowedNamespaces: []string{"*"}, AllowedCatalogEntries: []string{"*"},
		AllowedOperationTemplates: []string{"*"}, Policy: registry.DefaultPolicy(),
	}
	for _, f := range edit {
		f(&spec)
	}
	c, tok, err := e.reg.CreateCluster(adminCtx(), spec, 0)
	if err != nil {
		e.t.Fatalf("create cluster %s: %v", name, err)
	}
	return c, tok.Secret.Reveal()
}

// agent is a registered agent's credentials, as a client keeps them.
type agent struct {
	e            *env
	clusterID    string
	token        string
	hmacKey      []byte
	leaseSeconds int
}

type credentialAnswer struct {
	ClusterID    string   `json:"clusterId"`
	Token        string   `json:"token"`
	ExpiresAt    string   `json:"expiresAt"`
	RotateAfter  string   `json:"rotateAfter"`
	GraceUntil   string   `json:"graceUntil"`
	HMACKey      string   `json:"hmacKey"`
	LeaseSeconds int      `json:"leaseSeconds"`
	Capabilities []string `json:"capabilities"`
}

// register redeems a registration token over HTTP.
func (e *env) register(token string, capabilities ...string) *agent {
	e.t.Helper()
	body := map[string]any{"registrationToken": token}
	if len(capabilities) > 0 {
		body["capabilities"] = capabilities
	}
	resp := e.do(http.MethodPost, "/api/agent/register", withJSON(body))
	resp.want(e.t, http.StatusOK)
	var ans credentialAnswer
	resp.decode(e.t, &ans)
	return e.agentFrom(ans)
}

func (e *env) agentFrom(ans credentialAnswer) *agent {
	e.t.Helper()
	a := &agent{e: e, clusterID: ans.ClusterID, token: ans.Token, leaseSeconds: ans.LeaseSeconds}
	if ans.HMACKey != "" {
		key, err := base64.RawURLEncoding.DecodeString(ans.HMACKey)
		if err != nil {
			e.t.Fatalf("hmacKey %q is not base64url: %v", ans.HMACKey, err)
		}
		a.hmacKey = key
	}
	return a
}

// newAgent creates a cluster and registers its agent.
func (e *env) newAgent(name string, capabilities ...string) *agent {
	e.t.Helper()
	_, tok := e.cluster(name)
	return e.register(tok, capabilities...)
}

var manifestN int
var manifestMu sync.Mutex

// submit queues an apply job for the cluster and returns its id.
func (e *env) submit(clusterID string) string {
	e.t.Helper()
	return submitTo(e.t, e.reg, clusterID)
}

func submitTo(t testing.TB, reg *registry.Registry, clusterID string) string {
	t.Helper()
	manifestMu.Lock()
	manifestN++
	n := manifestN
	manifestMu.Unlock()
	payload := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"default"},"data":{"marker":"payload-of-%s"}}`, n, clusterID)
	j, _, err := reg.SubmitJob(adminCtx(), registry.JobSubmission{ClusterID: clusterID, Kind: registry.KindApply, Payload: json.RawMessage(payload)})
	if err != nil {
		t.Fatalf("submit a job to %s: %v", clusterID, err)
	}
	return j.ID
}

// --- requests ---

type reqOption func(*http.Request)

// withBody sends raw bytes with the v1 Content-Type.
func withBody(b string) reqOption {
	return func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Type", mediaV1)
	}
}

func withJSON(v any) reqOption {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return withBody(string(b))
}

func withHeader(k, v string) reqOption { return func(r *http.Request) { r.Header.Set(k, v) } }

func withoutHeader(k string) reqOption { return func(r *http.Request) { r.Header.Del(k) } }

func withBearer(token string) reqOption { return withHeader("Authorization", "Bearer "+token) }

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with Accept: v1 (as agents do) and the options.
func (e *env) do(method, path string, opts ...reqOption) *response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Accept", mediaV1)
	for _, o := range opts {
		o(req)
	}
	return e.send(req)
}

// getMetrics GETs the agent listener's /metrics as a Prometheus configured
// for it does: with a viewer's admin token that no organization confines.
func (e *env) getMetrics(opts ...reqOption) *response {
	e.t.Helper()
	if e.scraper == "" {
		issued, err := e.reg.CreateAdminToken(adminCtx(), "prometheus", registry.RoleViewer, "", 0)
		if err != nil {
			e.t.Fatalf("create the scraper's admin token: %v", err)
		}
		e.scraper = issued.Secret.Reveal()
	}
	return e.do(http.MethodGet, "/metrics", append([]reqOption{withBearer(e.scraper)}, opts...)...)
}

func (e *env) send(req *http.Request) *response {
	e.t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: body}
}

// do sends a request as the agent: its bearer token, and a signature when
// it negotiated hmac and the request is a write.
func (a *agent) do(method, path string, opts ...reqOption) *response {
	a.e.t.Helper()
	opts = append([]reqOption{withBearer(a.token)}, opts...)
	if a.hmacKey != nil && method == http.MethodPost {
		opts = append(opts, a.sign(a.e.clock.Now()))
	}
	return a.e.do(method, path, opts...)
}

// sign signs the request as it is when this option runs (add it last).
func (a *agent) sign(at time.Time) reqOption {
	return func(r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		ts := strconv.FormatInt(at.Unix(), 10)
		r.Header.Set("X-Agent-Timestamp", ts)
		r.Header.Set("X-Agent-Signature", server.Sign(a.hmacKey, server.CanonicalRequest(r.Method, r.URL.RequestURI(), ts, body)))
	}
}

func (a *agent) poll(wait int) *response {
	a.e.t.Helper()
	return a.do(http.MethodGet, fmt.Sprintf("/api/agent/jobs?cluster=%s&wait=%d", a.clusterID, wait))
}

type jobsAnswer struct {
	Jobs []struct {
		ID             string          `json:"id"`
		Kind           string          `json:"kind"`
		Payload        json.RawMessage `json:"payload"`
		IdempotencyKey string          `json:"idempotencyKey"`
		CreatedAt      *string         `json:"createdAt"`
		ExpiresAt      *string         `json:"expiresAt"`
		Attempt        int             `json:"attempt"`
		LeaseSeconds   int             `json:"leaseSeconds"`
	} `json:"jobs"`
}

func (r *response) jobs(t testing.TB) jobsAnswer {
	t.Helper()
	r.want(t, http.StatusOK)
	var ans jobsAnswer
	r.decode(t, &ans)
	if ans.Jobs == nil {
		t.Fatalf("jobs answer %s has no jobs array", r.body)
	}
	return ans
}

func (r *response) jobIDs(t testing.TB) []string {
	t.Helper()
	var ids []string
	for _, j := range r.jobs(t).Jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

func (a *agent) ack(jobID string, opts ...reqOption) *response {
	a.e.t.Helper()
	return a.do(http.MethodPost, "/api/agent/jobs/"+jobID+"/ack", opts...)
}

func (a *agent) status(jobID string, opts ...reqOption) *response {
	a.e.t.Helper()
	opts = append([]reqOption{withBody(`{"phase":"Reconciling","message":"working"}`)}, opts...)
	return a.do(http.MethodPost, "/api/agent/jobs/"+jobID+"/status", opts...)
}

func (a *agent) heartbeat(jobID string, opts ...reqOption) *response {
	a.e.t.Helper()
	return a.do(http.MethodPost, "/api/agent/jobs/"+jobID+"/heartbeat", opts...)
}

func (a *agent) result(jobID, body string, opts ...reqOption) *response {
	a.e.t.Helper()
	opts = append([]reqOption{withBody(body)}, opts...)
	return a.do(http.MethodPost, "/api/agent/jobs/"+jobID+"/result", opts...)
}

func (a *agent) events(body string, opts ...reqOption) *response {
	a.e.t.Helper()
	opts = append([]reqOption{withBody(body)}, opts...)
	return a.do(http.MethodPost, "/api/agent/events", opts...)
}

// --- checks ---

func (r *response) want(t testing.TB, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body: %s", r.status, status, r.body)
	}
}

func (r *response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %q is not JSON: %v", r.body, err)
	}
}

// wantNoContent checks a 204 with an empty body (the public operator needs
// exactly that).
func (r *response) wantNoContent(t testing.TB) {
	t.Helper()
	r.want(t, http.StatusNoContent)
	if len(r.body) != 0 {
		t.Fatalf("204 answer has a body: %q", r.body)
	}
}

type errorAnswer struct {
	Error     string `json:"error"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
}

// wantError checks status, machine code, the error shape and its request id.
func (r *response) wantError(t testing.TB, status int, code string) errorAnswer {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (%s); body: %s", r.status, status, code, r.body)
	}
	var ans errorAnswer
	if err := json.Unmarshal(r.body, &ans); err != nil {
		t.Fatalf("error answer %q is not JSON: %v", r.body, err)
	}
	if ans.Error != code {
		t.Fatalf("error = %q, want %q (message %q)", ans.Error, code, ans.Message)
	}
	if ans.Message == "" {
		t.Errorf("error %s has an empty message", code)
	}
	if ans.RequestID == "" || ans.RequestID != r.header.Get("X-Request-Id") {
		t.Errorf("requestId = %q, X-Request-Id = %q: want the same non-empty id", ans.RequestID, r.header.Get("X-Request-Id"))
	}
	if ct := r.header.Get("Content-Type"); ct != mediaV1 {
		t.Errorf("error Content-Type = %q, want %q", ct, mediaV1)
	}
	return ans
}

// eventually polls cond until it holds or patience runs out. It waits for a
// state to be reached; it never stands in for an assertion about timing.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
