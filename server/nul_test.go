package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// TestNULIsRefusedNamingTheField: a NUL in agent text, a job id or an
// admin's reason is a 400 that says where, on every endpoint, never a 500.
func TestNULIsRefusedNamingTheField(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("prod", registry.CapabilityLease)
	id := e.submit(a.clusterID)
	ack := a.do(http.MethodPost, "/api/agent/jobs/"+id+"/ack", withBody(`{}`))
	ack.want(t, http.StatusNoContent)
	claim := withHeader("X-Claim-Id", ack.header.Get("X-Claim-Id"))

	for _, c := range []struct{ path, body, says string }{
		{"/api/agent/jobs/" + id + "/status", `{"phase":"Applying","message":"half\u0000way"}`, "message"},
		{"/api/agent/jobs/" + id + "/result", `{"outcome":"failed","error":"boom\u0000"}`, "error"},
		{"/api/agent/events", `{"events":[{"kind":"Audit","message":"x\u0000"}]}`, "events[0].message"},
		{"/api/agent/jobs/j-%00/ack", `{}`, "NUL"},
	} {
		r := a.do(http.MethodPost, c.path, withBody(c.body), claim)
		if r.status != http.StatusBadRequest && !(strings.Contains(c.path, "%00") && r.status == http.StatusNotFound) {
			t.Fatalf("POST %s with a NUL: %d %s, want 400", c.path, r.status, r.body)
		}
		if !strings.Contains(string(r.body), c.says) {
			t.Fatalf("POST %s: %s does not name %q", c.path, r.body, c.says)
		}
	}
	// The job is not stuck: a clean result is recorded.
	a.do(http.MethodPost, "/api/agent/jobs/"+id+"/result", withBody(`{"outcome":"succeeded"}`), claim).want(t, http.StatusNoContent)

	tok := e.adminToken("root", registry.RoleAdmin, "")
	r := e.api("POST", "/clusters/prod/disable", tok, map[string]string{"reason": "maint\x00enance"})
	wantAPIError(t, r, 400, "invalid", "reason")
	wantAPIError(t, e.api("GET", "/jobs?search=a%00b", tok, nil), 400, "invalid", "search")
}

// TestFailuresDoNotShowInternals: with its database gone, the server says
// what failed to agents and to the unauthenticated probe, never where (the
// SQLite path, a PostgreSQL URL); its log keeps the details.
func TestFailuresDoNotShowInternals(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("prod")
	e.store.Close()
	for _, r := range []*response{e.do(http.MethodGet, "/readyz"), a.poll(0)} {
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("status %d: %s, want 503", r.status, r.body)
		}
		if strings.Contains(string(r.body), e.dbPath) || strings.Contains(string(r.body), "tether.db") {
			t.Fatalf("answer %s shows the database's path", r.body)
		}
	}

	// A store whose failures name where it is, as PostgreSQL's do.
	secretish := "postgres://tether@db.internal:5432/prod"
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	failing := pingFails{Store: st, err: &registry.Error{Code: registry.CodeUnavailable, Message: "cannot reach the database " + secretish + "; try again", Err: io.EOF}}
	reg := registry.New(failing, registry.Config{})
	defer reg.Close()
	rec := httptest.NewRecorder()
	server.New(reg, server.Config{Logger: slog.New(slog.DiscardHandler)}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "db.internal") {
		t.Fatalf("/readyz answered %d %s: it must say not ready without naming the database", rec.Code, rec.Body)
	}
}

type pingFails struct {
	registry.Store
	err error
}

func (p pingFails) Ping(context.Context) error { return p.err }

// TestReplayIsRefusedByAnotherReplica: a signed request accepted by one
// server is refused as a replay by another over the same database (and so
// by the first after a restart, its memory gone).
func TestReplayIsRefusedByAnotherReplica(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("prod", registry.CapabilityHMAC)
	b := newSecondReplica(t, e)

	body := `{"events":[{"kind":"Audit","eventKey":"once","message":"hello"}]}`
	signed := func(url string) *response {
		req, _ := http.NewRequest(http.MethodPost, url+"/api/agent/events", strings.NewReader(body))
		req.Header.Set("Accept", mediaV1)
		req.Header.Set("Content-Type", mediaV1)
		req.Header.Set("Authorization", "Bearer "+a.token)
		a.sign(e.clock.Now())(req)
		return e.send(req)
	}
	if r := signed(e.url); r.status != http.StatusNoContent {
		t.Fatalf("first send: %d %s", r.status, r.body)
	}
	r := signed(b)
	if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "signature_replayed") {
		t.Fatalf("the same signed request on another replica: %d %s, want 401 signature_replayed", r.status, r.body)
	}
}

// newSecondReplica serves another server over the env's database file, key
// file and clock, as a second replica would, and returns its URL.
func newSecondReplica(t *testing.T, e *env) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), e.dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, registry.Config{Clock: e.clock, Keyring: registry.NewKeyFile(registry.KeyFilePath(e.dbPath))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = server.New(reg, server.Config{Logger: slog.New(slog.DiscardHandler), RateLimit: -1}).Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		reg.Close()
		st.Close()
	})
	return "http://" + ln.Addr().String()
}
