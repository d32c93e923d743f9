package server_test

import (
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPIDurationsDoNotWrap: a number of days too large for a duration
// is refused naming the field and the value as sent, not turned into a
// negative or arbitrary duration.
func TestAdminAPIDurationsDoNotWrap(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")
	e.cluster("prod")
	manifest := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "apps"}}
	wantAPIError(t, e.api("POST", "/jobs", tok, map[string]any{"cluster": "prod", "kind": "apply", "payload": manifest, "expiresIn": "106752d"}),
		400, "invalid", `expiresIn "106752d"`)
	wantAPIError(t, e.api("POST", "/clusters/prod/registration-tokens", tok, map[string]any{"ttl": "99999999999d"}),
		400, "invalid", `ttl "99999999999d"`)
	// The overlap has no upper bound of its own: a wrapped one was taken.
	wantAPIError(t, e.api("POST", "/clusters/prod/signing-keys/rotate", tok, map[string]any{"overlap": "99999999999d"}),
		400, "invalid", `overlap "99999999999d"`)
}
