package server_test

import (
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestOpenAPIRefusalsAreDeclared drives refusals the common drive does not
// reach and checks each answer against the document: a status an operation
// answers must be one it declares.
func TestOpenAPIRefusalsAreDeclared(t *testing.T) {
	c := loadContract(t)
	e := newEnv(t)
	vt := validating(t, e, c)
	root := e.adminToken("root", registry.RoleAdmin, "")
	viewer := e.adminToken("viewer", registry.RoleViewer, "")
	scoped := e.adminToken("scoped", registry.RoleViewer, "org")
	e.cluster("prod", func(s *registry.ClusterSpec) {
		s.Labels = registry.Labels{"env": "prod"}
		s.AllowedNamespaces = []string{"apps"}
	})
	manifest := func(ns string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": ns}}
	}
	job := decodeAs[registry.Job](t, e.api("POST", "/jobs", root, map[string]any{"cluster": "prod", "kind": "apply", "payload": manifest("apps")}))
	e.api("POST", "/webhooks", root, map[string]any{"name": "hook", "url": "https://hooks.example.com/t", "events": []string{"job.finished"}}).want(t, 201)
	pending := decodeAs[registry.WebhookDelivery](t, e.api("POST", "/webhooks/hook/test", root, nil))

	for _, r := range []struct {
		method, path, token string
		body                any
		status              int
		opts                []reqOption
	}{
		{"POST", "/clusters", root, map[string]any{"name": "sealed", "policy": map[string]any{"requireEncryptedPayloads": true}}, 422, nil},
		{"PATCH", "/clusters/prod", root, map[string]any{"policy": map[string]any{"requireEncryptedPayloads": true}}, 422, []reqOption{withHeader("If-Match", `"1"`)}},
		{"POST", "/rollouts", root, map[string]any{"name": "r", "selector": "env=prod", "kind": "apply", "payload": manifest("kube-system")}, 0, nil},
		{"POST", "/rollouts", root, map[string]any{"name": "r2", "selector": "env=nowhere", "kind": "apply", "payload": manifest("apps")}, 0, nil},
		{"GET", "/clusters/nope/queue", root, nil, 404, nil},
		{"POST", "/jobs/" + job.ID + "/extend-lease", root, map[string]any{"by": "10m"}, 0, nil},
		{"POST", "/jobs/" + job.ID + "/requeue", root, nil, 0, nil},
		{"POST", "/jobs/" + job.ID + "/retry", root, nil, 409, nil},
		{"POST", "/clusters/prod/pause", viewer, nil, 403, nil},
		{"POST", "/rollouts/nope/pause", root, nil, 404, nil},
		{"GET", "/rollouts/nope", root, nil, 404, nil},
		{"GET", "/webhooks/nope/deliveries", root, nil, 404, nil},
		{"DELETE", "/admin-tokens/nope", root, nil, 404, nil},
		{"POST", "/clusters/nope/signing-keys/rotate", root, nil, 404, nil},
		{"POST", "/clusters/nope/credentials/rotate", root, nil, 404, nil},
		{"GET", "/clusters/nope/credentials", root, nil, 404, nil},
		{"GET", "/clusters/nope/registration-tokens", root, nil, 404, nil},
		{"POST", "/registration-tokens/rt-nope/revoke", root, nil, 404, nil},
		{"GET", "/watch?since=x", root, nil, 400, []reqOption{invalidRequest()}},
		{"GET", "/rollouts?state=x", root, nil, 400, []reqOption{invalidRequest()}},
		{"GET", "/clusters?state=x", root, nil, 400, []reqOption{invalidRequest()}},
		{"GET", "/queues", viewer, nil, 200, nil},
		{"POST", "/ca", viewer, nil, 403, nil},
		{"POST", "/ca", root, nil, 201, nil},
		{"POST", "/ca", root, nil, 409, nil},
		{"DELETE", "/jobs/" + job.ID, root, nil, 409, nil},
		{"POST", "/clusters/prod/disable", root, nil, 200, nil},
		{"POST", "/jobs", root, map[string]any{"cluster": "prod", "kind": "apply", "payload": manifest("apps")}, 403, nil},
		{"POST", "/clusters/prod/registration-tokens", root, nil, 0, nil},
		{"GET", "/events", scoped, nil, 200, nil}, // an org-scoped token lists its organization's
		{"GET", "/audit", scoped, nil, 200, nil},
		{"GET", "/audit?cluster=prod", scoped, nil, 200, nil},
		{"DELETE", "/clusters/nope", root, nil, 404, nil},
		{"POST", "/clusters/nope/enable", root, nil, 404, nil},
		{"POST", "/clusters/nope/resume", root, nil, 404, nil},
		{"POST", "/clusters/nope/registration-tokens", root, nil, 404, nil},
		{"GET", "/clusters/nope", root, nil, 404, nil},
		{"PATCH", "/clusters/prod", root, map[string]any{"mode": "push"}, 428, []reqOption{invalidRequest()}},
		{"POST", "/clusters", root, map[string]any{"name": "prod"}, 409, nil},
		{"POST", "/clusters", viewer, map[string]any{"name": "x"}, 403, nil},
		{"GET", "/jobs/" + job.ID + "?showPayload=true", viewer, nil, 0, nil},
		{"POST", "/jobs/" + job.ID + "/cancel", viewer, nil, 403, nil},
		{"POST", "/jobs/" + job.ID + "/cancel", root, nil, 200, nil},
		{"POST", "/jobs/" + job.ID + "/cancel", root, nil, 409, nil},
		{"POST", "/jobs/j-nope/extend-lease", root, map[string]any{"by": "1m"}, 404, nil},
		{"POST", "/jobs/j-nope/cancel", root, nil, 404, nil},
		{"GET", "/jobs/count?after=j-nope", root, nil, 404, nil},
		{"GET", "/events?cluster=nope", root, nil, 404, nil},
		{"GET", "/audit?cluster=nope", root, nil, 404, nil},
		{"GET", "/admin-tokens", viewer, nil, 403, nil},
		{"POST", "/admin-tokens", root, map[string]any{"name": "viewer", "role": "viewer"}, 409, nil},
		{"POST", "/webhooks", root, map[string]any{"name": "h", "url": "ftp://x"}, 400, []reqOption{invalidRequest()}},
		{"DELETE", "/webhooks/nope", root, nil, 404, nil},
		{"GET", "/webhooks/nope", root, nil, 404, nil},
		{"GET", "/webhooks/hook", viewer, nil, 403, nil},
		{"PATCH", "/webhooks/hook", root, map[string]any{"url": "https://b.example.com/"}, 428, []reqOption{invalidRequest()}},
		{"PATCH", "/webhooks/hook", root, map[string]any{"url": "https://b.example.com/"}, 409, []reqOption{withHeader("If-Match", `"7"`)}},
		{"PATCH", "/webhooks/hook", root, map[string]any{"url": "http://10.0.0.1/"}, 400, []reqOption{withHeader("If-Match", `"1"`)}},
		{"PATCH", "/webhooks/nope", root, map[string]any{"url": "https://b.example.com/"}, 404, []reqOption{withHeader("If-Match", `"1"`)}},
		{"POST", "/webhooks/nope/rotate-secret", root, nil, 404, nil},
		{"POST", "/webhooks/hook/rotate-secret", root, map[string]any{"overlap": "40d"}, 400, nil},
		{"POST", "/webhooks/nope/test", root, nil, 404, nil},
		{"GET", "/webhook-deliveries/wd-999999", root, nil, 404, nil},
		{"GET", "/webhook-deliveries/x", root, nil, 400, nil},
		{"POST", "/webhook-deliveries/wd-999999/redeliver", root, nil, 404, nil},
		{"POST", "/webhook-deliveries/" + pending.DeliveryID() + "/redeliver", root, nil, 409, nil},
		{"GET", "/stats", viewer, nil, 200, nil},
		{"POST", "/rollouts/nope/resume", root, nil, 404, nil},
		{"POST", "/rollouts/r/resume", root, nil, 409, nil},
		{"POST", "/rollouts/r/retry-failed", root, nil, 0, nil},
		{"POST", "/rollouts", viewer, map[string]any{"name": "r3", "selector": "env=prod", "kind": "apply", "payload": manifest("apps")}, 403, nil},
		{"POST", "/rollouts", root, map[string]any{"name": "r", "selector": "env=prod", "kind": "apply", "payload": manifest("apps")}, 409, nil},
	} {
		got := e.api(r.method, r.path, r.token, r.body, r.opts...)
		if r.status != 0 && got.status != r.status {
			t.Errorf("%s %s: %d %s, want %d", r.method, r.path, got.status, got.body, r.status)
		}
	}
	vt.check(t)
}
