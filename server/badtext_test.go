package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
)

// onBothStores runs test on a server over SQLite and, with
// TETHER_TEST_POSTGRES_DSN set, over PostgreSQL.
func onBothStores(t *testing.T, test func(t *testing.T, e *env)) {
	t.Run("SQLite", func(t *testing.T) { test(t, newEnv(t)) })
	t.Run("PostgreSQL", func(t *testing.T) {
		if os.Getenv("TETHER_TEST_POSTGRES_DSN") == "" {
			t.Skip("TETHER_TEST_POSTGRES_DSN is not set")
		}
		test(t, newEnvOn(t, func(string) (registry.Store, error) { return freshPostgres(t) }, registry.Config{}))
	})
}

// apiRaw calls the admin API with body sent byte for byte (json.Marshal
// would mend what these tests send).
func (e *env) apiRaw(method, path, token, body string) *response {
	e.t.Helper()
	return e.api(method, path, token, nil, withBody(body), withHeader("Content-Type", "application/json"))
}

// TestBadTextIsRefusedNamingTheField: bytes that are not UTF-8, and escaped
// lone surrogates, are refused at the door with a 400 naming the field, in
// every agent body (status, result, events) and admin body (a job's or a
// rollout's payload, a reason) and query: before, a payload so written was
// accepted (202) and then failed every poll of its cluster whose batch held
// it, and such bytes reached every answer that showed them.
func TestBadTextIsRefusedNamingTheField(t *testing.T) {
	onBothStores(t, func(t *testing.T, e *env) {
		e.cluster("web", func(s *registry.ClusterSpec) { s.Labels = registry.Labels{"tier": "web"} })
		_, tok := e.cluster("prod", func(s *registry.ClusterSpec) { s.Labels = registry.Labels{"tier": "web"} })
		a := e.register(tok, registry.CapabilityLease)
		id := e.submit(a.clusterID)
		ack := a.ack(id)
		ack.want(t, http.StatusNoContent)
		claim := withHeader("X-Claim-Id", ack.header.Get("X-Claim-Id"))

		for _, c := range []struct{ path, body, names string }{
			{"/status", "{\"phase\":\"Applying\",\"message\":\"caf\xe9\"}", "field message holds bytes that are not UTF-8"},
			{"/status", `{"conditions":[{"type":"Ready","status":"False","reason":"\udc00"}]}`, `field conditions[0].reason holds \udc00`},
			{"/result", "{\"outcome\":\"failed\",\"error\":\"caf\xe9\"}", "field error holds bytes that are not UTF-8"},
			{"/result", `{"outcome":"succeeded","appliedRef":{"name":"\ud800"}}`, `field appliedRef.name holds \ud800`},
		} {
			r := a.do(http.MethodPost, "/api/agent/jobs/"+id+c.path, withBody(c.body), claim)
			if ans := r.wantError(t, http.StatusBadRequest, "invalid"); !strings.Contains(ans.Message, c.names) {
				t.Errorf("POST %s %q: %q does not say %q", c.path, c.body, ans.Message, c.names)
			}
		}
		// An events batch with a malformed event is refused whole, naming
		// the event: docs/protocol.md says why, and the reference agent
		// then sends the others without it.
		for _, c := range []struct{ body, names string }{
			{"{\"events\":[{\"kind\":\"Audit\",\"message\":\"fine\"},{\"kind\":\"Audit\",\"message\":\"\xff\"}]}", "field events[1].message holds bytes that are not UTF-8"},
			{`{"events":[{"kind":"Audit","detail":{"x":"\ud800"}}]}`, `field events[0].detail.x holds \ud800`},
		} {
			if ans := a.events(c.body).wantError(t, http.StatusBadRequest, "invalid"); !strings.Contains(ans.Message, c.names) {
				t.Errorf("events %q: %q does not say %q", c.body, ans.Message, c.names)
			}
		}
		// The job is not stuck: a clean result is recorded.
		a.do(http.MethodPost, "/api/agent/jobs/"+id+"/result", withBody(`{"outcome":"succeeded"}`), claim).wantNoContent(t)

		admin := e.adminToken("root", registry.RoleAdmin, "")
		cm := func(name string) string {
			return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"default"}}`
		}
		for _, c := range []struct{ method, path, body, names string }{
			{"POST", "/jobs", `{"cluster":"prod","kind":"apply","payload":` + cm(`\ud800`) + `}`, `field payload.metadata.name holds \ud800`},
			{"POST", "/jobs", `{"cluster":"prod","kind":"apply","payload":` + cm("caf\xe9") + `}`, "field payload.metadata.name holds bytes that are not UTF-8"},
			{"POST", "/rollouts", `{"selector":"tier=web","kind":"apply","payload":` + cm(`x\udfff`) + `}`, `field payload.metadata.name holds \udfff`},
			{"POST", "/jobs/" + id + "/retry", "{\"reason\":\"caf\xe9\"}", "field reason holds bytes"},
			{"GET", "/jobs?search=caf%E9", "", "query parameter search holds bytes that are not UTF-8"},
			{"GET", "/events?kind=%FF", "", "query parameter kind holds bytes that are not UTF-8"},
		} {
			r := e.apiRaw(c.method, c.path, admin, c.body)
			wantAPIError(t, r, http.StatusBadRequest, "invalid", c.names)
		}
		// Nothing was queued or started, and the cluster's queue serves
		// the jobs after them.
		if got := decodeAs[page[registry.Job]](t, e.api("GET", "/jobs", admin, nil)).Items; len(got) != 1 {
			t.Fatalf("jobs after the refusals: %d, want the first one only", len(got))
		}
		if got := decodeAs[page[registry.Rollout]](t, e.api("GET", "/rollouts", admin, nil)).Items; len(got) != 0 {
			t.Fatalf("rollouts after the refusals: %+v", got)
		}
		next := e.submit(a.clusterID)
		if ids := a.poll(0).jobIDs(t); len(ids) != 1 || ids[0] != next {
			t.Fatalf("poll after the refusals: %v, want [%s]", ids, next)
		}
	})
}

// TestPayloadThatCannotBeSignedIsRefused: whatever its cluster's signing
// policy, a payload must be JSON that RFC 8785 can canonicalize, since the
// policy can be turned on while the job waits; the same refusal, at submit,
// on a cluster that signs and on one that does not.
func TestPayloadThatCannotBeSignedIsRefused(t *testing.T) {
	e := newEnv(t)
	e.cluster("plain")
	e.cluster("signed", func(s *registry.ClusterSpec) { s.Policy.RequireSignedPayloads = true })
	admin := e.adminToken("root", registry.RoleAdmin, "")
	for _, cluster := range []string{"plain", "signed"} {
		for _, c := range []struct{ payload, says string }{
			{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"k":"\udbff"}}`, "payload.data.k"},
			{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"n":1e400}}`, "canonicalized"},
			{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"kind":"Secret"}`, "canonicalized"},
		} {
			r := e.apiRaw("POST", "/jobs", admin, `{"cluster":"`+cluster+`","kind":"apply","payload":`+c.payload+`}`)
			wantAPIError(t, r, http.StatusBadRequest, "invalid", c.says)
		}
	}
}

// TestStoredBadTextReadsAsUTF8: a payload, result and event stored with
// bytes that are not UTF-8 before they were refused (written here through
// the store and the registry, past the door) read back with U+FFFD in their
// place from GET /jobs, GET /jobs/{id}, GET /events, the watch stream and
// the agent's poll: every answer is valid UTF-8 (and valid JSON).
func TestStoredBadTextReadsAsUTF8(t *testing.T) {
	onBothStores(t, func(t *testing.T, e *env) {
		a := e.newAgent("prod", registry.CapabilityLease)
		ctx := adminCtx()
		now := e.clock.Now()
		bad := registry.Job{
			ID: "j-01hbadutf8aaaaaaaaaaaaaaaa", ClusterID: a.clusterID, Kind: registry.KindApply, Target: registry.Target{Kind: "ConfigMap"},
			Payload: json.RawMessage("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"k\":\"caf\xe9\"}}"),
			State:   registry.JobQueued, Attempt: 1, CreatedAt: now, UpdatedAt: now, SubmittedBy: "admin:test",
		}
		if _, _, err := e.store.JobInsert(ctx, registry.JobInsertParams{Job: bad, History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted, Actor: "admin:test"},
			Audit: registry.AuditEntry{At: now, Actor: "admin:test", Action: registry.AuditJobSubmit, ClusterID: a.clusterID, TargetKind: "job", TargetID: bad.ID}}); err != nil {
			t.Fatalf("insert: %v", err)
		}
		admin := e.adminToken("root", registry.RoleAdmin, "")
		valid := func(what string, body []byte, want ...string) {
			t.Helper()
			if !utf8.Valid(body) || !json.Valid(body) {
				t.Fatalf("%s: %q is not valid UTF-8 JSON", what, body)
			}
			for _, w := range want {
				if !strings.Contains(string(body), w) {
					t.Fatalf("%s: %s does not show %q", what, body, w)
				}
			}
		}
		// The watch's snapshot holds the open job; the feed then brings its
		// result and the event.
		w := e.watch(t, admin, "?kinds=jobs,events", "")
		var snapshot []string
		for ev := w.next(t); ev.event != "end_of_snapshot"; ev = w.next(t) {
			valid("watch snapshot "+ev.data.Kind, ev.data.Object)
			snapshot = append(snapshot, string(ev.data.Object))
		}
		if all := strings.Join(snapshot, "\n"); !strings.Contains(all, "caf\uFFFD") {
			t.Fatalf("the watch snapshot does not show the stored payload with U+FFFD:\n%s", all)
		}

		// The agent's poll hands it out readable.
		poll := a.poll(0)
		valid("poll", poll.body, "caf\uFFFD")
		agent, err := e.reg.Authenticate(context.Background(), a.token, registry.AuthAny)
		if err != nil {
			t.Fatal(err)
		}
		claim, err := e.reg.AckJob(context.Background(), agent, bad.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.reg.ReportResult(context.Background(), agent, bad.ID, claim.ClaimID, registry.ResultReport{
			Outcome: registry.OutcomeSucceeded, Body: json.RawMessage("{\"outcome\":\"succeeded\",\"note\":\"\xffresult\"}"),
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.reg.AppendEvents(context.Background(), agent, "", []registry.Event{{
			Kind: "Audit", Message: "m", Body: json.RawMessage("{\"kind\":\"Audit\",\"extra\":\"\xfeevent\"}"),
		}}); err != nil {
			t.Fatal(err)
		}

		valid("GET /jobs/{id}", e.api("GET", "/jobs/"+bad.ID, admin, nil).body, "caf\uFFFD", "\uFFFDresult")
		valid("GET /jobs", e.api("GET", "/jobs", admin, nil).body, "caf\uFFFD", "\uFFFDresult")
		valid("GET /events", e.api("GET", "/events?cluster="+url.QueryEscape(a.clusterID), admin, nil).body, "\uFFFDevent")

		var result, event bool
		for !result || !event {
			ev := w.next(t)
			valid("watch "+ev.data.Kind, ev.data.Object)
			result = result || strings.Contains(string(ev.data.Object), "\uFFFDresult")
			event = event || strings.Contains(string(ev.data.Object), "\uFFFDevent")
		}
	})
}
