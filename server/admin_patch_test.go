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
