package server_test

import (
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestOpenAPIRealAnswers drives a real server through the common paths of
// both APIs and validates every request and answer against the document.
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
	e.api("POST", "/jobs/"+queued.ID+"/retry", root, nil).want(t, 201)
	e.api("DELETE", "/jobs/"+queued.ID, root, nil).want(t, 200)
	e.api("POST", "/webhooks", root, map[string]any{"name": "hook", "url": "https://hooks.example.com/t", "events": []string{"job.finished"}}).want(t, 201)
	e.api("GET", "/webhooks", root, nil).want(t, 200)
	e.api("GET", "/webhooks/hook/deliveries", root, nil).want(t, 200)
	e.api("DELETE", "/webhooks/hook", root, nil).want(t, 200)
	e.api("POST", "/admin-tokens", root, map[string]any{"name": "ci", "role": "operator"}).want(t, 201)
	e.api("DELETE", "/admin-tokens/ci", root, nil).want(t, 200)
	e.api("GET", "/openapi.json", root, nil).want(t, 200)
	e.api("POST", "/rollouts", root, map[string]any{"name": "r1", "selector": "env=prod", "kind": "apply", "dryRun": true,
		"payload": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm3", "namespace": "default"}}}).want(t, 200)
	e.api("GET", "/rollouts", root, nil).want(t, 200)
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
	e.do("GET", "/metrics").want(t, 200)
	wantAPIError(t, e.api("GET", "/clusters/nope", root, nil), 404, "not_found")
	wantAPIError(t, e.api("GET", "/clusters", "", nil, invalidRequest()), 401, "unauthorized")
	vt.check(t)
}
