package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestOpenAPIRealAnswers drives a real server through every operation of
// both APIs and validates every request and answer against the document. An
// operation the document lists that the drive never saw succeed fails it:
// a new endpoint must be driven here too.
func TestOpenAPIRealAnswers(t *testing.T) {
	c := loadContract(t)
	e := newEnv(t)
	vt := validating(t, e, c)
	root := e.adminToken("root", registry.RoleAdmin, "")

	created := decodeAs[struct {
		Cluster           registry.Cluster `json:"cluster"`
		RegistrationToken struct {
			Token string `json:"token"`
		} `json:"registrationToken"`
	}](t, e.api("POST", "/clusters", root, map[string]any{
		"name": "prod", "organization": "org", "labels": map[string]string{"env": "prod"},
		"allowedNamespaces": []string{"*"}, "allowedCatalogEntries": []string{"*"}, "allowedOperationTemplates": []string{"*"},
	}))
	a := e.register(created.RegistrationToken.Token, "hmac", "lease")
	sub := e.api("POST", "/jobs", root, map[string]any{"cluster": "prod", "kind": "apply",
		"payload": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "default"}}})
	sub.want(t, 202)
	id := decodeAs[registry.Job](t, sub).ID
	a.poll(0).want(t, 200)
	ack := a.ack(id)
	ack.wantNoContent(t)
	claim := withHeader("X-Claim-Id", ack.header.Get("X-Claim-Id"))
	a.status(id, claim).wantNoContent(t)
	a.heartbeat(id, claim).wantNoContent(t)
	a.result(id, `{"outcome":"succeeded"}`, claim).wantNoContent(t)
	a.events(`{"events":[{"kind":"ConditionTransition","eventKey":"k1","message":"ready"}]}`).wantNoContent(t)
	a.do("GET", "/api/agent/keys").want(t, 200)
	a.ack("j-nope").wantError(t, 404, "job_not_found")
	e.do("GET", "/healthz").want(t, 200)
	e.do("GET", "/readyz").want(t, 200)

	for _, path := range []string{"/clusters", "/clusters/prod", "/jobs", "/jobs/count", "/jobs/" + id, "/events", "/audit",
		"/stats", "/whoami", "/clusters/prod/credentials", "/registration-tokens", "/admin-tokens", "/queues", "/clusters/prod/queue"} {
		e.api("GET", path, root, nil).want(t, 200)
	}
	patched := e.api("PATCH", "/clusters/prod", root, map[string]any{"labels": map[string]string{"env": "prod", "tier": "1"}},
		withHeader("If-Match", e.api("GET", "/clusters/prod", root, nil).header.Get("ETag")))
	patched.want(t, 200)
	for _, action := range []string{"pause", "resume", "disable", "enable"} {
		e.api("POST", "/clusters/prod/"+action, root, map[string]any{"reason": "test"}).want(t, 200)
	}
	e.api("POST", "/clusters/prod/registration-tokens", root, map[string]any{"ttl": "1h"}).want(t, 201)
	e.api("GET", "/clusters/prod/registration-tokens", root, nil).want(t, 200)
	queued := decodeAs[registry.Job](t, e.api("POST", "/jobs", root, map[string]any{"cluster": "prod", "kind": "apply",
		"payload": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm2", "namespace": "default"}}}))
	e.api("POST", "/jobs/"+queued.ID+"/cancel", root, nil).want(t, 200)
	retry := decodeAs[registry.Job](t, e.api("POST", "/jobs/"+queued.ID+"/retry", root, nil))
	// The original names its retry (retriedBy), which the document allows.
	if got := decodeAs[registry.Job](t, e.api("GET", "/jobs/"+queued.ID, root, nil)); !slices.Equal(got.RetriedBy, []string{retry.ID}) {
		t.Fatalf("GET /jobs/%s retriedBy = %v, want [%s]", queued.ID, got.RetriedBy, retry.ID)
	}
	e.api("DELETE", "/jobs/"+queued.ID, root, nil).want(t, 200)
	e.api("POST", "/webhooks", root, map[string]any{"name": "hook", "url": "https://hooks.example.com/t", "events": []string{"job.finished"}}).want(t, 201)
	e.api("GET", "/webhooks", root, nil).want(t, 200)
	e.api("GET", "/webhooks/hook/deliveries", root, nil).want(t, 200)
	e.api("PATCH", "/webhooks/hook", root, map[string]any{"events": []string{"job.finished", "rollout.halted"}},
		withHeader("If-Match", e.api("GET", "/webhooks/hook", root, nil).header.Get("ETag"))).want(t, 200)
	e.api("POST", "/webhooks/hook/rotate-secret", root, map[string]any{"overlap": "1h"}).want(t, 200)
	test := e.api("POST", "/webhooks/hook/test", root, nil)
	test.want(t, 202)
	testDelivery := decodeAs[registry.WebhookDelivery](t, test)
	testID := testDelivery.DeliveryID()
	e.api("GET", "/webhook-deliveries/"+testID, root, nil).want(t, 200)
	due, err := e.reg.ClaimWebhookDeliveries(adminCtx(), 10, time.Minute)
	if err != nil || len(due) != 1 {
		t.Fatalf("claim the test delivery: %d, %v", len(due), err)
	}
	if err := e.reg.RecordWebhookAttempt(adminCtx(), &due[0], 200, ""); err != nil {
		t.Fatal(err)
	}
	e.api("POST", "/webhook-deliveries/"+testID+"/redeliver", root, nil).want(t, 202)
	e.api("DELETE", "/webhooks/hook", root, nil).want(t, 200)
	e.api("POST", "/admin-tokens", root, map[string]any{"name": "ci", "role": "operator"}).want(t, 201)
	e.api("POST", "/admin-tokens", root, map[string]any{"name": "alice", "role": "viewer", "sshKeys": []string{testSSHKey(t, "alice@laptop")}}).want(t, 201)
	e.api("PATCH", "/admin-tokens/alice", root, map[string]any{"sshKeys": []string{testSSHKey(t, "alice@desktop")}}).want(t, 200)
	e.api("GET", "/admin-tokens", root, nil).want(t, 200) // with the keys
	e.api("PATCH", "/admin-tokens/ci", root, map[string]any{"sshKeys": nil}, withHeader("Content-Type", "application/merge-patch+json")).want(t, 200)
	e.api("DELETE", "/admin-tokens/ci", root, nil).want(t, 200)
	e.api("GET", "/openapi.json", root, nil).want(t, 200)
	// pauseBetween "0s" is the default (no pause) said out loud.
	e.api("POST", "/rollouts", root, map[string]any{"name": "r1", "selector": "env=prod", "kind": "apply", "dryRun": true, "pauseBetween": "0s",
		"payload": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm3", "namespace": "default"}}}).want(t, 200)
	e.api("GET", "/rollouts", root, nil).want(t, 200)
	driveJobLifecycle(t, e, root, a)
	driveRolloutRetry(t, e, root, a)
	issued := decodeAs[struct {
		ID string `json:"id"`
	}](t, e.api("POST", "/clusters/prod/registration-tokens", root, nil))
	e.api("POST", "/registration-tokens/"+issued.ID+"/revoke", root, map[string]any{"reason": "unused"}).want(t, 200)
	e.api("POST", "/clusters/prod/signing-keys/rotate", root, map[string]any{"overlap": "1h"}).want(t, 200)
	// A signed job, both signatures on (jobSignature, signature), and the
	// key set with the rotated key's endorsement.
	e.api("PATCH", "/clusters/prod", root, map[string]any{"policy": map[string]any{"requireSignedPayloads": true, "allowLegacyPayloadSignatures": true}},
		withHeader("If-Match", e.api("GET", "/clusters/prod", root, nil).header.Get("ETag"))).want(t, 200)
	e.api("POST", "/clusters/prod/signing-keys/rotate", root, nil).want(t, 200) // endorsed by the first
	e.submit(a.clusterID)
	signed := a.poll(0)
	signed.want(t, 200)
	if !strings.Contains(string(signed.body), `"jobSignature"`) || !strings.Contains(string(signed.body), `"signature"`) {
		t.Fatalf("a signed poll: %s", signed.body)
	}
	keys := a.do("GET", "/api/agent/keys")
	keys.want(t, 200)
	if !strings.Contains(string(keys.body), `"endorsement"`) {
		t.Fatalf("the key set carries no endorsement: %s", keys.body)
	}
	e.api("POST", "/ca", root, nil).want(t, 201)
	e.api("GET", "/ca", root, nil).want(t, 200)
	csr, _ := json.Marshal(map[string]string{"csr": newCSRPEM(t)})
	a.do("POST", "/api/agent/credentials/rotate", withBody(string(csr))).want(t, 200) // with clientCertificate and caBundle
	e.api("POST", "/clusters/prod/credentials/rotate", root, nil).want(t, 200)
	e.api("POST", "/clusters/prod/credentials/revoke", root, nil).want(t, 200)
	ro := e.api("POST", "/rollouts", root, map[string]any{"name": "r2", "selector": "env=prod", "kind": "apply",
		"payload": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm4", "namespace": "default"}}})
	ro.want(t, 201)
	e.api("GET", "/rollouts/r2", root, nil).want(t, 200)
	for _, action := range []string{"pause", "resume", "abort"} {
		e.api("POST", "/rollouts/r2/"+action, root, nil).want(t, 200)
	}
	w := e.watch(t, root, "?kinds=clusters,jobs", "")
	w.untilSnapshotEnd(t)
	w.cancel()
	e.getMetrics().want(t, 200)
	wantAPIError(t, e.do("GET", "/metrics", invalidRequest()), 401, "unauthorized")
	wantAPIError(t, e.do("GET", "/metrics", withBearer(e.adminToken("acme", registry.RoleViewer, "acme"))), 403, "forbidden")
	wantAPIError(t, e.api("GET", "/clusters/nope", root, nil), 404, "not_found")
	wantAPIError(t, e.api("GET", "/clusters", "", nil, invalidRequest()), 401, "unauthorized")
	e.api("POST", "/clusters", root, map[string]any{"name": "doomed"}).want(t, 201)
	e.api("DELETE", "/clusters/doomed?reason=test", root, nil).want(t, 200)
	vt.check(t)
	wantEveryOperationDriven(t, c, vt)
}

// driveJobLifecycle takes jobs through the paths the common flow leaves out:
// a blocking submission answered when the agent finishes, a blocking read,
// a lease extension and a requeue.
func driveJobLifecycle(t *testing.T, e *env, root string, a *agent) {
	t.Helper()
	manifest := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "default"}}
	}
	// ?wait on submission: 200 with the job once the agent has finished it.
	answered := make(chan *response, 1)
	go func() {
		answered <- e.api("POST", "/jobs?wait=60", root, map[string]any{"cluster": "prod", "kind": "apply", "payload": manifest("waited")},
			withHeader("Idempotency-Key", "drive-wait"))
	}()
	var waited string
	eventually(t, "the blocking submission's job to be queued", func() bool {
		p := decodeAs[page[registry.Job]](t, e.api("GET", "/jobs?state=queued&search=drive-wait", root, nil))
		if len(p.Items) == 1 {
			waited = p.Items[0].ID
		}
		return waited != ""
	})
	ack := a.ack(waited)
	ack.wantNoContent(t)
	a.result(waited, `{"outcome":"succeeded"}`, withHeader("X-Claim-Id", ack.header.Get("X-Claim-Id"))).wantNoContent(t)
	if r := <-answered; r.status != http.StatusOK || !strings.Contains(string(r.body), `"succeeded"`) {
		t.Fatalf("a blocking submission whose job ended: %d %s", r.status, r.body)
	}
	e.api("GET", "/jobs/"+waited+"?wait=5", root, nil).want(t, 200)
	// ?wait that elapses first: 202 with the job as it stands.
	open := decodeAs[registry.Job](t, e.api("POST", "/jobs?wait=1", root, map[string]any{"cluster": "prod", "kind": "apply", "payload": manifest("open")}))
	e.api("GET", "/jobs/"+open.ID+"?wait=1", root, nil).want(t, 202)

	ack = a.ack(open.ID)
	ack.wantNoContent(t)
	e.api("POST", "/jobs/"+open.ID+"/extend-lease", root, map[string]any{"by": "10m"}).want(t, 200)
	e.api("POST", "/jobs/"+open.ID+"/requeue", root, map[string]any{"reason": "agent stuck", "attempt": 1}).want(t, 200)
	e.api("POST", "/jobs/"+open.ID+"/cancel", root, nil).want(t, 200)
}

// driveRolloutRetry halts a rollout on a failed target and retries it.
func driveRolloutRetry(t *testing.T, e *env, root string, a *agent) {
	t.Helper()
	ro := decodeAs[registry.Rollout](t, e.api("POST", "/rollouts", root, map[string]any{"name": "r-retry", "selector": "env=prod", "kind": "apply",
		"payload": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm5", "namespace": "default"}}}))
	var job string
	eventually(t, "the rollout's first wave", func() bool {
		cur, err := e.reg.AdvanceRollout(adminCtx(), ro.ID)
		if err == nil && len(cur.Targets) == 1 {
			job = cur.Targets[0].JobID
		}
		return job != ""
	})
	ack := a.ack(job)
	ack.wantNoContent(t)
	a.result(job, `{"outcome":"failed","error":"boom"}`, withHeader("X-Claim-Id", ack.header.Get("X-Claim-Id"))).wantNoContent(t)
	eventually(t, "the rollout to halt", func() bool {
		cur, err := e.reg.AdvanceRollout(adminCtx(), ro.ID)
		return err == nil && cur.State == registry.RolloutHalted
	})
	e.api("POST", "/rollouts/r-retry/retry-failed", root, map[string]any{"reason": "fixed"}).want(t, 200)
	e.api("POST", "/rollouts/r-retry/abort", root, nil).want(t, 200)
}

// wantEveryOperationDriven fails for each operation of the document that
// never answered 2xx (or 101) during the drive.
func wantEveryOperationDriven(t *testing.T, c *contract, vt *validatingTransport) {
	t.Helper()
	vt.mu.Lock()
	defer vt.mu.Unlock()
	var missing []string
	for path, item := range c.doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			switch method {
			case "get", "post", "put", "patch", "delete":
			default:
				continue
			}
			op := strings.ToUpper(method) + " " + path
			if !slices.ContainsFunc(vt.seen[op], func(status int) bool { return status >= 200 && status < 300 }) {
				missing = append(missing, op)
			}
		}
	}
	sort.Strings(missing)
	for _, op := range missing {
		t.Errorf("%s is in server/openapi.json but the drive never saw it succeed: drive it in TestOpenAPIRealAnswers", op)
	}
}
