package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// The agent listener's /metrics names every organization's clusters, and
// agents of every organization reach that listener: it answers only an admin
// token that no organization confines. --diag-listen's port, private by
// contract, needs none.
func TestMetricsNeedAnAdminTokenOfEveryOrganization(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("acme-prod") // organization "org"
	e.cluster("globex-edge", func(s *registry.ClusterSpec) { s.Organization = "globex" })
	viewer := e.adminToken("prometheus", registry.RoleViewer, "")
	acme := e.adminToken("org-ops", registry.RoleAdmin, "org")
	revoked := e.adminToken("old-scraper", registry.RoleViewer, "")
	if _, err := e.reg.RevokeAdminToken(adminCtx(), "old-scraper", "rotated"); err != nil {
		t.Fatal(err)
	}
	const remedy = "or scrape the --diag-listen listener, which needs none"

	for _, method := range []string{http.MethodGet, http.MethodHead} {
		for _, c := range []struct {
			name      string
			opts      []reqOption
			status    int
			code      string
			fragments []string
		}{
			{"no token", nil, 401, "unauthorized", []string{"needs a token", "Authorization: Bearer", "tether admin-token create", remedy}},
			{"not bearer", []reqOption{withHeader("Authorization", "Basic "+viewer)}, 401, "unauthorized", []string{"needs a token", remedy}},
			{"unknown admin token", []reqOption{withBearer("tether_adm_at-0000000000000000000000000000.nope")}, 401, "unauthorized", []string{"unknown, expired or revoked", remedy}},
			{"revoked admin token", []reqOption{withBearer(revoked)}, 401, "unauthorized", []string{"unknown, expired or revoked", remedy}},
			{"agent credential", []reqOption{withBearer(a.token)}, 401, "unauthorized", []string{"not an admin token", remedy}},
			{"organization's token", []reqOption{withBearer(acme)}, 403, "forbidden", []string{"org-ops", "confined to organization org", "without --org", "--diag-listen"}},
		} {
			r := e.do(method, "/metrics", c.opts...)
			if method == http.MethodHead {
				if r.status != c.status || len(r.body) != 0 {
					t.Errorf("HEAD /metrics, %s: %d with %d bytes, want %d and no body", c.name, r.status, len(r.body), c.status)
				}
				continue
			}
			wantAPIError(t, r, c.status, c.code, c.fragments...)
			if strings.Contains(string(r.body), "globex") || strings.Contains(string(r.body), "tether_") {
				t.Errorf("GET /metrics, %s: the refusal shows series or clusters: %s", c.name, r.body)
			}
			if c.name == "no token" && !strings.Contains(string(r.body), "Bearer <token>") {
				t.Errorf("GET /metrics, %s: the message's <token> is escaped for HTML in a JSON body: %s", c.name, r.body)
			}
			if c.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("GET /metrics, %s: 401 without WWW-Authenticate", c.name)
			}
		}
	}

	// An admin token over every organization, of the least role, scrapes
	// every cluster's series; so does any other role.
	for _, tok := range []string{viewer, e.adminToken("root", registry.RoleAdmin, "")} {
		r := e.do(http.MethodGet, "/metrics", withBearer(tok), withHeader("Accept", "text/plain"))
		r.want(t, http.StatusOK)
		for _, want := range []string{"tether_build_info", `cluster="acme-prod"`, `cluster="globex-edge"`} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("GET /metrics with an unconfined token lacks %s", want)
			}
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("GET /metrics: Content-Type %q, want the text format", ct)
		}
	}
	if r := e.do(http.MethodHead, "/metrics", withBearer(viewer)); r.status != 200 || len(r.body) != 0 {
		t.Errorf("HEAD /metrics with a viewer's token: %d with %d bytes, want 200 and no body", r.status, len(r.body))
	}
	// The scraper is named in the access log; its token never is.
	if logs := e.logs.String(); !strings.Contains(logs, "actor=admin-token:prometheus") || strings.Contains(logs, viewer) {
		t.Errorf("the access log should name the scraper's token, never show it:\n%s", logs)
	}

	// The probes stay open.
	e.do(http.MethodGet, "/healthz").want(t, http.StatusOK)
	e.do(http.MethodGet, "/readyz").want(t, http.StatusOK)

	// --diag-listen, on a port of its own over real HTTP, needs no token.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.srv.ServeDiag(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeDiag: %v", err)
		}
	}()
	resp, err := e.client.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `cluster="globex-edge"`) {
		t.Errorf("GET /metrics on --diag-listen without a token: %d, want 200 with every cluster's series:\n%.300s", resp.StatusCode, body)
	}
}
