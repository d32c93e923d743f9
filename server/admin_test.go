package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// adminToken issues an admin token and returns its secret.
func (e *env) adminToken(name string, role registry.Role, org string) string {
	e.t.Helper()
	issued, err := e.reg.CreateAdminToken(adminCtx(), name, role, org, 0)
	if err != nil {
		e.t.Fatalf("create admin token %s: %v", name, err)
	}
	return issued.Secret.Reveal()
}

// api calls the admin API with token and, for non-nil body, a JSON body.
func (e *env) api(method, path, token string, body any, opts ...reqOption) *response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+"/api/admin/v1"+path, nil)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		withBody(string(b))(req)
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	return e.send(req)
}

type apiError struct {
	Error     string `json:"error"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
}

// wantAPIError checks a refusal's status, code and message fragments, and
// the shape every error shares.
func wantAPIError(t *testing.T, r *response, status int, code string, fragments ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var e apiError
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %q is not the error shape: %v", r.body, err)
	}
	if e.Error != code || e.RequestID == "" || e.RequestID != r.header.Get("X-Request-Id") {
		t.Fatalf("error %+v (request id header %q), want code %s", e, r.header.Get("X-Request-Id"), code)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q, want application/json", ct)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Fatalf("message %q does not say %q", e.Message, f)
		}
	}
}

func decodeAs[T any](t *testing.T, r *response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return v
}

type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

func TestAdminAPIAuthentication(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("prod")
	admin := e.adminToken("root", registry.RoleAdmin, "")

	wantAPIError(t, e.api("GET", "/clusters", "", nil), 401, "unauthorized", "admin token is required")
	wantAPIError(t, e.api("GET", "/clusters", a.token, nil), 401, "unauthorized", "not an admin token")
	wantAPIError(t, e.api("GET", "/clusters", "tether_adm_01aaaaaaaaaaaaaaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", nil), 401, "unauthorized")
	if r := e.api("GET", "/clusters", admin, nil); r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /clusters with an admin token: %d %s", r.status, r.header.Get("Content-Type"))
	}
	// An admin token is not an agent credential.
	r := e.do("GET", "/api/agent/jobs?cluster="+a.clusterID, withBearer(admin))
	if r.status != 401 || !strings.Contains(string(r.body), "admin token is not an agent credential") {
		t.Fatalf("admin token on the agent API: %d %s", r.status, r.body)
	}
	if _, err := e.reg.RevokeAdminToken(adminCtx(), "root", ""); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, e.api("GET", "/clusters", admin, nil), 401, "unauthorized")

	other := e.adminToken("other", registry.RoleAdmin, "")
	wantAPIError(t, e.api("GET", "/nope", other, nil), 404, "not_found", "no such endpoint")
	wantAPIError(t, e.api("PUT", "/clusters", other, nil), 405, "method_not_allowed")
	wantAPIError(t, e.api("GET", "/jobs?limit=0", other, nil), 400, "invalid", "limit")
	wantAPIError(t, e.api("GET", "/jobs?cursor=garbage", other, nil), 400, "invalid", "cursor")
	wantAPIError(t, e.api("POST", "/clusters", other, map[string]any{"name": "x", "nmae": "typo"}), 400, "invalid", "unknown field")
	for _, body := range []string{`{"name":"x"}}`, `{"name":"x"} {}`, `{"name":"x"} junk`, `{"name":1}`, `{"name":"x"`} {
		wantAPIError(t, e.api("POST", "/clusters", other, nil, withBody(body), withHeader("Content-Type", "application/json")), 400, "invalid")
	}
	if logs := e.logs.String(); strings.Contains(logs, other[len(other)-32:]) || !strings.Contains(logs, "actor=admin-token:other") {
		t.Fatalf("access log shows the token, or not its name:\n%s", logs)
	}
}

func TestAdminAPIClusters(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")

	r := e.api("POST", "/clusters", tok, map[string]any{
		"name": "prod-eu", "organization": "payments", "labels": map[string]string{"env": "prod"},
		"allowedNamespaces": []string{"apps"}, "allowedCatalogEntries": []string{"*"}, "registrationTokenTtl": "2h",
	})
	if r.status != 201 || r.header.Get("ETag") != `"1"` {
		t.Fatalf("create: %d %s (ETag %q)", r.status, r.body, r.header.Get("ETag"))
	}
	created := decodeAs[struct {
		Cluster           registry.Cluster `json:"cluster"`
		RegistrationToken struct {
			Token string `json:"token"`
		} `json:"registrationToken"`
	}](t, r)
	if created.Cluster.Policy.LeaseSeconds != registry.DefaultLeaseSeconds || created.Cluster.Labels["env"] != "prod" {
		t.Fatalf("created cluster %+v: a spec without a policy gets the default one", created.Cluster)
	}
	// The token shown once registers the agent.
	e.register(created.RegistrationToken.Token)

	r = e.api("GET", "/clusters/prod-eu", tok, nil)
	if r.status != 200 || decodeAs[registry.Cluster](t, r).State != registry.ClusterActive {
		t.Fatalf("get by name: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("PATCH", "/clusters/prod-eu", tok, map[string]any{"allowedNamespaces": []string{"apps", "web"}}), 428, "precondition_required", "If-Match")
	r = e.api("PATCH", "/clusters/prod-eu", tok, map[string]any{"allowedNamespaces": []string{"apps", "web"}}, withHeader("If-Match", `"1"`))
	if r.status != 200 || r.header.Get("ETag") != `"2"` {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	if c := decodeAs[registry.Cluster](t, r); strings.Join(c.AllowedNamespaces, ",") != "apps,web" || c.Labels["env"] != "prod" || c.Organization != "payments" {
		t.Fatalf("patched cluster %+v: fields not in the patch must stay", c)
	}
	wantAPIError(t, e.api("PATCH", "/clusters/prod-eu", tok, map[string]any{"mode": "push"}, withHeader("If-Match", "1")), 409, "conflict", "version 2")

	r = e.api("POST", "/clusters/prod-eu/disable", tok, map[string]string{"reason": "maintenance"})
	if r.status != 200 || decodeAs[registry.Cluster](t, r).State != registry.ClusterDisabled {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if r = e.api("POST", "/clusters/prod-eu/enable", tok, nil); r.status != 200 {
		t.Fatalf("enable: %d %s", r.status, r.body)
	}
	r = e.api("POST", "/clusters/prod-eu/registration-tokens", tok, map[string]string{"ttl": "1h"})
	if r.status != 201 || !strings.HasPrefix(decodeAs[map[string]any](t, r)["token"].(string), "tether_reg_") {
		t.Fatalf("issue token: %d %s", r.status, r.body)
	}
	creds := decodeAs[page[map[string]any]](t, e.api("GET", "/clusters/prod-eu/credentials", tok, nil))
	if len(creds.Items) != 1 || creds.Items[0]["state"] != "active" || strings.Contains(fmt.Sprint(creds.Items), "tether_cred_") {
		t.Fatalf("credentials: %+v", creds.Items)
	}
	if r = e.api("POST", "/clusters/prod-eu/credentials/revoke", tok, map[string]string{"reason": "test"}); r.status != 200 || !strings.Contains(string(r.body), `"credentials":1`) {
		t.Fatalf("revoke credentials: %d %s", r.status, r.body)
	}

	// Keyset pages through every cluster exactly once.
	for i := range 5 {
		e.cluster(fmt.Sprintf("c%d", i))
	}
	var names []string
	cursor := ""
	for pages := 0; ; pages++ {
		p := decodeAs[page[registry.Cluster]](t, e.api("GET", "/clusters?limit=2&cursor="+cursor, tok, nil))
		for _, c := range p.Items {
			names = append(names, c.Name)
		}
		if cursor = p.NextCursor; cursor == "" || pages > 10 {
			break
		}
	}
	if got := strings.Join(names, ","); got != "c0,c1,c2,c3,c4,prod-eu" {
		t.Fatalf("paged clusters = %s", got)
	}
	if p := decodeAs[page[registry.Cluster]](t, e.api("GET", "/clusters?selector=env%3Dprod", tok, nil)); len(p.Items) != 1 {
		t.Fatalf("selector env=prod matched %d clusters", len(p.Items))
	}

	if r = e.api("DELETE", "/clusters/c0?reason=cleanup", tok, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("GET", "/clusters/c0", tok, nil), 404, "not_found")
	audit := decodeAs[page[registry.AuditEntry]](t, e.api("GET", "/audit?cluster="+created.Cluster.ID, tok, nil))
	if len(audit.Items) < 5 {
		t.Fatalf("audit of prod-eu: %+v", audit.Items)
	}
	for _, a := range audit.Items {
		if a.Actor != "admin-token:root" && !strings.HasPrefix(a.Actor, "agent:") {
			t.Fatalf("audit entry %+v: API actions are audited as admin-token:NAME", a)
		}
	}
}

func TestAdminAPIJobs(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("producer", registry.RoleOperator, "")
	c, regToken := e.cluster("prod", func(s *registry.ClusterSpec) { s.AllowedNamespaces = []string{"apps"} })
	a := e.register(regToken, registry.CapabilityLease)
	cm := func(ns, name string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q}}`, name, ns))
	}

	r := e.api("POST", "/jobs", tok, map[string]any{"cluster": "prod", "kind": "apply", "payload": cm("apps", "one")})
	if r.status != 202 || !strings.HasPrefix(r.header.Get("Location"), "/api/admin/v1/jobs/j-") {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	first := decodeAs[registry.Job](t, r)
	wantAPIError(t, e.api("POST", "/jobs", tok, map[string]any{"cluster": "prod", "kind": "apply", "payload": cm("kube-system", "x")}),
		422, "namespace_not_allowed", `"kube-system"`, "apps")
	wantAPIError(t, e.api("POST", "/jobs", tok, map[string]any{"cluster": "nowhere", "kind": "apply", "payload": cm("apps", "x")}), 404, "not_found")
	wantAPIError(t, e.api("POST", "/jobs", tok, map[string]any{"kind": "apply"}), 400, "invalid", "cluster is required")

	// The same Idempotency-Key returns the open job.
	r1 := e.api("POST", "/jobs", tok, map[string]any{"cluster": c.ID, "kind": "apply", "payload": cm("apps", "two")}, withHeader("Idempotency-Key", "deploy-42"))
	r2 := e.api("POST", "/jobs", tok, map[string]any{"cluster": c.ID, "kind": "apply", "payload": cm("apps", "two")}, withHeader("Idempotency-Key", "deploy-42"))
	if decodeAs[registry.Job](t, r1).ID != decodeAs[registry.Job](t, r2).ID || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("idempotent resubmission made another job: %s / %s", r1.body, r2.body)
	}

	// A blocking submission is answered when the agent finishes the job.
	done := make(chan *response, 1)
	go func() {
		done <- e.api("POST", "/jobs?wait=30", tok, map[string]any{"cluster": "prod", "kind": "apply", "payload": cm("apps", "blocking"), "idempotencyKey": "blocking"})
	}()
	var blockingID string
	for blockingID == "" {
		jobs := decodeAs[page[registry.Job]](t, e.api("GET", "/jobs?state=queued&search=blocking", tok, nil))
		if len(jobs.Items) == 1 {
			blockingID = jobs.Items[0].ID
		}
	}
	claim := a.do("POST", "/api/agent/jobs/"+blockingID+"/ack", withBody(`{}`))
	claim.want(t, 204)
	a.do("POST", "/api/agent/jobs/"+blockingID+"/result", withHeader("X-Claim-Id", claim.header.Get("X-Claim-Id")), withBody(`{"outcome":"succeeded"}`)).want(t, 204)
	r = <-done
	if r.status != 200 || decodeAs[registry.Job](t, r).State != registry.JobSucceeded {
		t.Fatalf("blocking submit: %d %s", r.status, r.body)
	}

	// A wait that elapses answers 202 with the job as it stands.
	if r = e.api("GET", "/jobs/"+first.ID+"?wait=1", tok, nil); r.status != 202 {
		t.Fatalf("elapsed wait: %d %s", r.status, r.body)
	}
	detail := decodeAs[struct {
		registry.Job
		Timeline []registry.JobHistoryEntry `json:"timeline"`
	}](t, e.api("GET", "/jobs/"+blockingID, tok, nil))
	if len(detail.Timeline) < 3 || detail.State != registry.JobSucceeded {
		t.Fatalf("job detail %+v", detail)
	}

	if r = e.api("POST", "/jobs/"+first.ID+"/cancel", tok, map[string]string{"reason": "not needed"}); r.status != 200 || decodeAs[registry.Job](t, r).State != registry.JobCanceled {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("POST", "/jobs/"+first.ID+"/cancel", tok, nil), 409, "conflict", "already canceled")
	r = e.api("POST", "/jobs/"+first.ID+"/retry", tok, map[string]string{"reason": "try again"})
	if retried := decodeAs[registry.Job](t, r); r.status != 201 || retried.RetryOf != first.ID || retried.State != registry.JobQueued {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("POST", "/jobs/"+blockingID+"/retry", tok, nil), 409, "conflict", "only failed")
	wantAPIError(t, e.api("POST", "/jobs/j-nope/requeue", tok, nil), 404, "not_found")
	wantAPIError(t, e.api("GET", "/jobs?state=sideways", tok, nil), 400, "invalid", "sideways")

	stats := decodeAs[struct {
		Jobs     map[string]int64            `json:"jobs"`
		Clusters map[string]map[string]int64 `json:"clusters"`
	}](t, e.api("GET", "/stats", tok, nil))
	if stats.Jobs["succeeded"] != 1 || stats.Jobs["canceled"] != 1 || stats.Clusters[c.ID]["queued"] != 2 {
		t.Fatalf("stats %+v", stats)
	}
	if audit := decodeAs[page[registry.AuditEntry]](t, e.api("GET", "/audit?action=job.submit", tok, nil)); len(audit.Items) != 3 || audit.Items[0].Actor != "admin-token:producer" {
		t.Fatalf("submissions audited as %+v", audit.Items)
	}
}

// TestAdminAPIRoleMatrix calls every endpoint with each role: a viewer reads
// everything, an operator also runs the queues, only an admin manages
// clusters, credentials and tokens.
func TestAdminAPIRoleMatrix(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster("prod")
	tokens := map[registry.Role]string{}
	for _, role := range registry.Roles {
		tokens[role] = e.adminToken(string(role), role, "")
	}
	job := func() string { return e.submit(c.ID) }
	for _, tc := range []struct {
		method, path string
		body         any
		least        registry.Role
	}{
		{"GET", "/clusters", nil, registry.RoleViewer},
		{"GET", "/clusters/prod", nil, registry.RoleViewer},
		{"GET", "/clusters/prod/credentials", nil, registry.RoleViewer},
		{"GET", "/jobs", nil, registry.RoleViewer},
		{"GET", "/events", nil, registry.RoleViewer},
		{"GET", "/audit", nil, registry.RoleViewer},
		{"GET", "/stats", nil, registry.RoleViewer},
		{"GET", "/queues", nil, registry.RoleViewer},
		{"GET", "/clusters/prod/queue", nil, registry.RoleViewer},
		{"GET", "/rollouts", nil, registry.RoleViewer},
		{"POST", "/jobs", map[string]any{"cluster": "prod", "kind": "apply", "payload": json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m","namespace":"x"}}`)}, registry.RoleOperator},
		{"POST", "/jobs/{job}/cancel", nil, registry.RoleOperator},
		{"POST", "/clusters", map[string]any{"name": "new-{role}"}, registry.RoleAdmin},
		{"POST", "/clusters/prod/registration-tokens", nil, registry.RoleAdmin},
		{"POST", "/clusters/prod/credentials/rotate", nil, registry.RoleAdmin},
		{"POST", "/clusters/prod/signing-keys/rotate", nil, registry.RoleAdmin},
		{"POST", "/registration-tokens/{token}/revoke", nil, registry.RoleAdmin},
		{"GET", "/admin-tokens", nil, registry.RoleAdmin},
		{"GET", "/webhooks", nil, registry.RoleAdmin},
		{"POST", "/webhooks", map[string]any{"name": "hook-{role}", "url": "https://example.com/x", "events": []string{"job.finished"}}, registry.RoleAdmin},
	} {
		for _, role := range registry.Roles {
			path := strings.ReplaceAll(tc.path, "{job}", job())
			if strings.Contains(path, "{token}") {
				issued, err := e.reg.IssueToken(adminCtx(), c.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				path = strings.ReplaceAll(path, "{token}", issued.Token.ID)
			}
			body := tc.body
			if m, ok := body.(map[string]any); ok && m["name"] != nil {
				named := map[string]any{}
				for k, v := range m {
					named[k] = v
				}
				named["name"] = strings.ReplaceAll(m["name"].(string), "{role}", string(role))
				body = named
			}
			r := e.api(tc.method, path, tokens[role], body)
			allowed := slicesIndex(registry.Roles, role) >= slicesIndex(registry.Roles, tc.least)
			switch {
			case allowed && r.status >= 300:
				t.Errorf("%s %s as %s: %d %s, want success", tc.method, tc.path, role, r.status, r.body)
			case !allowed && r.status != 403:
				t.Errorf("%s %s as %s: %d, want 403", tc.method, tc.path, role, r.status)
			case !allowed && !strings.Contains(string(r.body), "needs the "+string(tc.least)+" role"):
				t.Errorf("%s %s as %s: %s does not name the role needed", tc.method, tc.path, role, r.body)
			}
		}
	}
}

func slicesIndex(roles []registry.Role, r registry.Role) int {
	for i, v := range roles {
		if v == r {
			return i
		}
	}
	return -1
}

// TestAdminAPIOrgIsolation: an organization-scoped token sees its
// organization's clusters and everything they own, and nothing else: the
// rest answers exactly as if it did not exist.
func TestAdminAPIOrgIsolation(t *testing.T) {
	e := newEnv(t)
	mine, _ := e.cluster("acme-prod", func(s *registry.ClusterSpec) { s.Organization = "acme" })
	theirs, _ := e.cluster("globex-prod", func(s *registry.ClusterSpec) { s.Organization = "globex" })
	myJob, theirJob := e.submit(mine.ID), e.submit(theirs.ID)
	acme := e.adminToken("acme-ops", registry.RoleAdmin, "acme")

	if p := decodeAs[page[registry.Cluster]](t, e.api("GET", "/clusters", acme, nil)); len(p.Items) != 1 || p.Items[0].ID != mine.ID {
		t.Fatalf("acme lists %d clusters", len(p.Items))
	}
	if p := decodeAs[page[registry.Job]](t, e.api("GET", "/jobs", acme, nil)); len(p.Items) != 1 || p.Items[0].ID != myJob {
		t.Fatalf("acme lists %d jobs", len(p.Items))
	}
	missing := e.api("GET", "/clusters/no-such-cluster", acme, nil)
	for _, path := range []string{"/clusters/globex-prod", "/clusters/" + theirs.ID, "/clusters/globex-prod/credentials"} {
		r := e.api("GET", path, acme, nil)
		wantAPIError(t, r, 404, "not_found")
		if strings.Contains(string(r.body), "globex") && !strings.Contains(path, "globex") {
			t.Fatalf("%s leaks the other organization: %s", path, r.body)
		}
	}
	wantAPIError(t, missing, 404, "not_found")
	wantAPIError(t, e.api("GET", "/jobs/"+theirJob, acme, nil), 404, "not_found")
	wantAPIError(t, e.api("POST", "/jobs/"+theirJob+"/cancel", acme, nil), 404, "not_found")
	wantAPIError(t, e.api("POST", "/jobs", acme, map[string]any{"cluster": "globex-prod", "kind": "apply", "payload": json.RawMessage(`{}`)}), 404, "not_found")
	wantAPIError(t, e.api("GET", "/jobs?cluster=globex-prod", acme, nil), 404, "not_found")
	wantAPIError(t, e.api("DELETE", "/clusters/globex-prod", acme, nil), 404, "not_found")
	wantAPIError(t, e.api("POST", "/clusters/globex-prod/signing-keys/rotate", acme, nil), 404, "not_found")
	theirToken, err := e.reg.IssueToken(adminCtx(), theirs.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, e.api("POST", "/registration-tokens/"+theirToken.Token.ID+"/revoke", acme, nil), 404, "not_found")
	if stats := decodeAs[struct {
		Clusters map[string]any `json:"clusters"`
	}](t, e.api("GET", "/stats", acme, nil)); len(stats.Clusters) != 1 || stats.Clusters[theirs.ID] != nil {
		t.Fatalf("acme's stats show %v", stats.Clusters)
	}
	if r := e.api("POST", "/clusters", acme, map[string]any{"name": "acme-new"}); r.status != 201 || !strings.Contains(string(r.body), `"organization":"acme"`) {
		t.Fatalf("a cluster an acme token creates belongs to acme: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("POST", "/clusters", acme, map[string]any{"name": "sneaky", "organization": "globex"}), 403, "forbidden")
	// Names are unique across organizations (docs/admin-api.md): a name
	// another organization holds is a 409 that says no more than that.
	edge, _ := e.cluster("edge-1", func(s *registry.ClusterSpec) { s.Organization = "globex" })
	r := e.api("POST", "/clusters", acme, map[string]any{"name": "edge-1"})
	wantAPIError(t, r, 409, "conflict", "edge-1")
	if strings.Contains(string(r.body), "globex") || strings.Contains(string(r.body), edge.ID) {
		t.Fatalf("a name taken in another organization tells more than that it is taken: %s", r.body)
	}
}

// A registration token revoked over the API no longer registers an agent,
// and a second revoke says it already was; a signing key rotated over the
// API is the one the agent's key set leads with, the previous one kept.
func TestAdminAPIRevokeTokenAndRotateSigningKey(t *testing.T) {
	e := newEnv(t)
	c, secret := e.cluster("prod")
	root := e.adminToken("root", registry.RoleAdmin, "")
	toks, err := e.reg.ListTokens(adminCtx(), c.ID)
	if err != nil || len(toks) != 1 {
		t.Fatalf("tokens %v %v", toks, err)
	}
	r := e.api("POST", "/registration-tokens/"+toks[0].ID+"/revoke", root, map[string]any{"reason": "leaked"})
	if got := decodeAs[registry.RegistrationToken](t, r); r.status != 200 || got.RevokedAt.IsZero() {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	wantAPIError(t, e.api("POST", "/registration-tokens/"+toks[0].ID+"/revoke", root, nil), 409, "conflict", "already revoked")
	wantAPIError(t, e.api("POST", "/registration-tokens/rt-nosuch/revoke", root, nil), 404, "not_found", "rt-nosuch")
	if reg := e.do("POST", "/api/agent/register", withJSON(map[string]any{"registrationToken": secret})); reg.status == 200 {
		t.Fatalf("a revoked token registered an agent: %s", reg.body)
	}

	first := decodeAs[struct {
		Key registry.JWK `json:"key"`
	}](t, e.api("POST", "/clusters/prod/signing-keys/rotate", root, nil))
	r = e.api("POST", "/clusters/prod/signing-keys/rotate", root, map[string]any{"overlap": "2h"})
	second := decodeAs[struct {
		ClusterID    string       `json:"clusterId"`
		CreatedAt    time.Time    `json:"createdAt"`
		OverlapUntil time.Time    `json:"overlapUntil"`
		Key          registry.JWK `json:"key"`
	}](t, r)
	if r.status != 200 || second.ClusterID != c.ID || second.Key.Kid == first.Key.Kid || !second.OverlapUntil.Equal(second.CreatedAt.Add(2*time.Hour)) {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "ealed") || strings.Contains(string(r.body), `"d"`) {
		t.Fatalf("the answer shows more than the public key: %s", r.body)
	}
	set, err := e.reg.SigningKeySet(adminCtx(), c.ID)
	if err != nil || len(set) < 2 || set[0].Kid != second.Key.Kid || !slices.ContainsFunc(set, func(k registry.JWK) bool { return k.Kid == first.Key.Kid }) {
		t.Fatalf("the key set after two rotations: %+v %v", set, err)
	}
	wantAPIError(t, e.api("POST", "/clusters/prod/signing-keys/rotate", root, map[string]any{"overlap": "soon"}), 400, "invalid", "overlap")
}

// A request held by ?wait= is answered 401 when its token was revoked while
// it waited: the job's outcome is no longer the token's to read.
func TestAdminAPIWaitRefusedAfterRevocation(t *testing.T) {
	e := newEnv(t)
	e.cluster("prod")
	producer := e.adminToken("producer", registry.RoleOperator, "")
	root := e.adminToken("root", registry.RoleAdmin, "")
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","namespace":"apps"}}`)

	done := make(chan *response, 1)
	go func() {
		done <- e.api("POST", "/jobs?wait=60", producer, map[string]any{"cluster": "prod", "kind": "apply", "payload": payload})
	}()
	// Once the job exists, the submission is past its authentication.
	var id string
	for id == "" {
		jobs := decodeAs[page[registry.Job]](t, e.api("GET", "/jobs?search=held", root, nil))
		if len(jobs.Items) == 1 {
			id = jobs.Items[0].ID
		}
	}
	if _, err := e.reg.RevokeAdminToken(adminCtx(), "producer", "leaked"); err != nil {
		t.Fatal(err)
	}
	e.api("POST", "/jobs/"+id+"/cancel", root, nil).want(t, 200)
	wantAPIError(t, <-done, 401, "unauthorized")
}

// A webhook URL with credentials in it is refused without repeating the
// password: the refusal reaches terminals and CI logs.
func TestAdminAPIWebhookURLWithCredentialsNotEchoed(t *testing.T) {
	e := newEnv(t)
	root := e.adminToken("root", registry.RoleAdmin, "")
	r := e.api("POST", "/webhooks", root, map[string]any{"name": "hook", "url": "https://deploy:hunter2-s3cret@hooks.example.com/t", "events": []string{"job.finished"}})
	wantAPIError(t, r, 400, "invalid", "without credentials", "deploy:xxxxx@hooks.example.com")
	if strings.Contains(string(r.body), "hunter2-s3cret") {
		t.Fatalf("the refusal repeats the password: %s", r.body)
	}
}
