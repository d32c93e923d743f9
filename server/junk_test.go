package server_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// junkBodies are what a broken or hostile client sends.
var junkBodies = []string{
	``, `{`, `null`, `[]`, `"x"`, `42`, `{}`, `{"a":`, "\x00\x01\x02", `{"outcome":7}`,
	`{"events":"nope"}`, `{"events":[{"kind":12}]}`, `{"events":[null]}`, `{"events":[{"kind":"Audit","timestamp":"yesterday"}]}`,
	`{"phase":"\u0000","message":"\ud800"}`, `{"outcome":"succeeded","error":"` + strings.Repeat("x", 70000) + `"}`,
	`{"registrationToken":"tether_reg_x","capabilities":["hmac",["nested"]]}`,
	`{"cluster":{"id":1},"kind":"apply","payload":"not an object"}`, `{"cluster":"x","kind":"apply","payload":{"a":` + strings.Repeat("[", 5000) + `}}`,
	`{"name":"` + strings.Repeat("n", 1000) + `","labels":{"-bad":"\u202e"}}`, `{"selector":"env in (","kind":"apply","payload":{}}`,
	`{"maxParallel":-1,"selector":"a=b","kind":"apply","payload":{}}`, `{"reason":123}`, `{"by":"forever"}`, `{"ttl":"-5h"}`,
	`{"name":"x","url":"javascript:alert(1)","events":["job.finished"]}`, `{"role":"root","name":"x"}`,
}

// junkPaths are every endpoint of both APIs, with ids that exist, ids that
// do not, and ids no record has.
func junkPaths(jobID, clusterID string) []string {
	var out []string
	for _, id := range []string{jobID, "j-nope", "%2e%2e%2f", "%00", strings.Repeat("a", 3000), "☃"} {
		for _, action := range []string{"ack", "status", "heartbeat", "result"} {
			out = append(out, "/api/agent/jobs/"+id+"/"+action)
		}
		out = append(out, "/api/admin/v1/jobs/"+id, "/api/admin/v1/jobs/"+id+"/cancel", "/api/admin/v1/jobs/"+id+"/requeue",
			"/api/admin/v1/jobs/"+id+"/extend-lease")
	}
	for _, c := range []string{clusterID, "nope", "%00", "☃"} {
		for _, sub := range []string{"", "/disable", "/enable", "/registration-tokens", "/credentials", "/credentials/rotate", "/credentials/revoke"} {
			out = append(out, "/api/admin/v1/clusters/"+c+sub)
		}
	}
	return append(out,
		"/api/agent/register", "/api/agent/credentials/rotate", "/api/agent/events",
		"/api/agent/jobs?cluster="+clusterID+"&wait=0", "/api/agent/jobs?cluster="+clusterID+"&wait=-1&limit=99999999999999999999",
		"/api/agent/jobs?wait=abc", "/api/admin/v1/clusters?limit=0&cursor=%ff%fe", "/api/admin/v1/clusters?selector=%28%28",
		"/api/admin/v1/jobs?state=nope&stuck=maybe&cluster=%00", "/api/admin/v1/jobs?wait=99999", "/api/admin/v1/events?cursor=bad",
		"/api/admin/v1/audit?limit=-3", "/api/admin/v1/stats", "/api/admin/v1/rollouts", "/api/admin/v1/rollouts/nope/abort",
		"/api/admin/v1/webhooks", "/api/admin/v1/webhooks/nope/deliveries?limit=x", "/api/admin/v1/admin-tokens",
		"/api/admin/v1/admin-tokens/nope", "/api/admin/v1/watch?kinds=jobs&since=-1", "/readyz", "/healthz", "/metrics",
	)
}

// sweep sends every junk body with every method to every path, as an agent
// and as an admin, and fails on any 5xx.
func sweep(t *testing.T, e *env) {
	a := e.newAgent("prod")
	jobID := e.submit(a.clusterID)
	admin := e.adminToken("root", registry.RoleAdmin, "")
	client := &http.Client{Timeout: patience}
	n := 0
	for _, path := range junkPaths(jobID, a.clusterID) {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
			for i, body := range junkBodies {
				if method == http.MethodGet && i > 0 {
					break // a GET's body is not read: one is enough
				}
				bearer := a.token
				if strings.HasPrefix(path, "/api/admin/") || path == "/metrics" {
					bearer = admin
				}
				ctx, cancel := context.WithTimeout(context.Background(), patience)
				req, err := http.NewRequestWithContext(ctx, method, e.url+path, strings.NewReader(body))
				if err != nil {
					cancel()
					continue // a path Go cannot even send
				}
				req.Header.Set("Authorization", "Bearer "+bearer)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("If-Match", `"1"`)
				if strings.HasSuffix(path, "/watch?kinds=jobs&since=-1") {
					req.Header.Set("Last-Event-ID", "garbage")
				}
				resp, err := client.Do(req)
				if err != nil {
					cancel()
					t.Fatalf("%s %s: %v", method, path, err)
				}
				resp.Body.Close()
				cancel()
				n++
				if resp.StatusCode >= 500 {
					t.Fatalf("%s %s with body %q: %d", method, truncateForLog(path), truncateForLog(body), resp.StatusCode)
				}
			}
		}
	}
	t.Logf("%d junk requests, none answered 5xx", n)
}

func truncateForLog(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func TestJunkRequestsNeverAnswer5xx(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { sweep(t, newEnv(t)) })
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn := os.Getenv("TETHER_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("TETHER_TEST_POSTGRES_DSN is not set: the PostgreSQL sweep is skipped")
		}
		sweep(t, newEnvOn(t, func(string) (registry.Store, error) { return freshPostgres(t) }, registry.Config{}))
	})
}

// freshPostgres opens a store on a schema of its own, dropped at the end.
func freshPostgres(t *testing.T) (registry.Store, error) {
	t.Helper()
	dsn, _ := pgtest.Schema(t, "tether_junk")
	return postgres.Open(context.Background(), dsn, postgres.Options{})
}
