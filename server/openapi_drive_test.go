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
	wantAPIError(t, e.api("GET", "/clusters/nope", root, nil), 404, "not_found")
	wantAPIError(t, e.api("GET", "/clusters", "", nil, invalidRequest()), 401, "unauthorized")
	vt.check(t)
}
