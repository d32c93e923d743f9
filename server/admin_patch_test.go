package server_test

import (
	"maps"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPIPatchReplacesLabels: labels in a PATCH replace the cluster's
// labels, so that a label left out is removed (the remote console and
// `tether cluster edit --remove-label --server` send every label the cluster
// keeps); fields left out of the patch, and policy fields left out of a
// policy, stay as they are.
func TestAdminAPIPatchReplacesLabels(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")
	e.cluster("prod", func(s *registry.ClusterSpec) {
		s.Labels = registry.Labels{"env": "prod", "canary": "true"}
		s.Policy.MaxAttempts = 3
	})
	patch := func(version string, body any) registry.Cluster {
		t.Helper()
		r := e.api("PATCH", "/clusters/prod", tok, body, withHeader("If-Match", version))
		r.want(t, 200)
		return decodeAs[registry.Cluster](t, r)
	}

	c := patch(`"1"`, map[string]any{"labels": map[string]string{"env": "prod"}})
	if want := (registry.Labels{"env": "prod"}); !maps.Equal(c.Labels, want) {
		t.Fatalf("labels after a patch of %v = %v, want %v", want, c.Labels, want)
	}
	c = patch(`"2"`, map[string]any{"allowedNamespaces": []string{"apps"}, "policy": map[string]any{"leaseSeconds": 30}})
	if want := (registry.Labels{"env": "prod"}); !maps.Equal(c.Labels, want) || c.Policy.MaxAttempts != 3 || c.Policy.LeaseSeconds != 30 {
		t.Fatalf("after a patch without labels: labels %v, policy %+v; want labels %v kept and maxAttempts 3 kept", c.Labels, c.Policy, want)
	}
	c = patch(`"3"`, map[string]any{"Labels": map[string]string{}})
	if len(c.Labels) != 0 {
		t.Fatalf("labels after a patch of {} = %v, want none", c.Labels)
	}
}

// With Content-Type application/merge-patch+json a PATCH is an RFC 7396
// merge patch: a label set to null is removed and the others stay, policy
// members merge, a field left out stays; an unknown field is refused by
// name, and a PATCH without If-Match is 428.
func TestAdminAPIMergePatch(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")
	e.cluster("prod", func(s *registry.ClusterSpec) {
		s.Labels = registry.Labels{"env": "prod", "canary": "true", "tier": "1"}
		s.AllowedNamespaces = []string{"apps"}
		s.Policy.MaxAttempts = 3
	})
	mergePatch := func(version, body string) *response {
		return e.api("PATCH", "/clusters/prod", tok, nil, withBody(body),
			withHeader("Content-Type", "application/merge-patch+json"), withHeader("If-Match", version))
	}
	r := mergePatch(`"1"`, `{"labels":{"canary":null,"tier":"2"},"policy":{"leaseSeconds":45}}`)
	r.want(t, 200)
	c := decodeAs[registry.Cluster](t, r)
	if want := (registry.Labels{"env": "prod", "tier": "2"}); !maps.Equal(c.Labels, want) {
		t.Errorf("labels after the merge patch = %v, want %v", c.Labels, want)
	}
	if c.Policy.LeaseSeconds != 45 || c.Policy.MaxAttempts != 3 || len(c.AllowedNamespaces) != 1 || c.AllowedNamespaces[0] != "apps" {
		t.Errorf("after the merge patch: policy %+v, namespaces %v; want leaseSeconds 45, maxAttempts 3 and [apps] kept", c.Policy, c.AllowedNamespaces)
	}
	wantAPIError(t, mergePatch(`"2"`, `{"labelz":{"a":"b"}}`), 400, "invalid", `unknown field "labelz"`)
	wantAPIError(t, mergePatch(`"2"`, `["labels"]`), 400, "invalid", "JSON object")
	wantAPIError(t, e.api("PATCH", "/clusters/prod", tok, nil, withBody(`{"labels":{}}`), withHeader("Content-Type", "application/merge-patch+json")),
		428, "precondition_required", "If-Match")
	if got := decodeAs[registry.Cluster](t, e.api("GET", "/clusters/prod", tok, nil)); got.Version != 2 {
		t.Errorf("refused patches changed the cluster: version %d, want 2", got.Version)
	}
}
