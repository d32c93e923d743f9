package server_test

import (
	"strings"
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

// TestAdminAPITypeErrorsNameTheField: a value of the wrong type is refused
// naming the field as the body spells it (never a Go type's name) and what
// it takes.
func TestAdminAPITypeErrorsNameTheField(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"name": 5}, "field name must be a string, not a JSON number"},
		{map[string]any{"name": "x", "policy": map[string]any{"leaseSeconds": 1.5}}, "field policy.leaseSeconds must be a whole number, not 1.5"},
		{map[string]any{"name": "x", "policy": map[string]any{"maxAttempts": 1e40}}, "field policy.maxAttempts is out of range: 1e+40"},
		{map[string]any{"name": "x", "policy": "strict"}, "field policy must be an object, not a JSON string"},
	} {
		wantAPIError(t, e.api("POST", "/clusters", tok, c.body), 400, "invalid", c.want)
	}
	e.cluster("prod")
	wantAPIError(t, e.api("PATCH", "/clusters/prod", tok, map[string]any{"policy": map[string]any{"leaseSeconds": "60"}}, withHeader("If-Match", `"1"`)),
		400, "invalid", "field policy.leaseSeconds must be a whole number, not a JSON string")
}

// TestAdminAPIDeleteReasonInABody: DELETE /clusters and DELETE
// /admin-tokens take the reason in a {"reason"} body as well as ?reason=
// (as DELETE /jobs and every action do): it reaches the audit trail, and a
// misspelt field is refused before anything is deleted.
func TestAdminAPIDeleteReasonInABody(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")
	e.adminToken("ci", registry.RoleViewer, "")
	e.cluster("prod")
	wantAPIError(t, e.api("DELETE", "/clusters/prod", tok, map[string]string{"reson": "typo"}), 400, "invalid", `unknown field "reson"`)
	e.api("GET", "/clusters/prod", tok, nil).want(t, 200)
	e.api("DELETE", "/clusters/prod", tok, map[string]string{"reason": "decommissioned"}).want(t, 200)
	e.api("DELETE", "/admin-tokens/ci", tok, map[string]string{"reason": "leaked"}).want(t, 200)
	audit := decodeAs[page[registry.AuditEntry]](t, e.api("GET", "/audit", tok, nil))
	found := map[string]bool{}
	for _, a := range audit.Items {
		found[a.Reason] = true
	}
	for _, why := range []string{"decommissioned", "leaked"} {
		ok := false
		for d := range found {
			ok = ok || strings.Contains(d, why)
		}
		if !ok {
			t.Errorf("no audit entry gives the reason %q: %+v", why, audit.Items)
		}
	}
}

// TestAdminAPIMalformedQuery: a query parameter that does not unescape is
// refused, not dropped (which turned a filter off: every cluster's jobs for
// ?cluster=%zzprod).
func TestAdminAPIMalformedQuery(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleViewer, "")
	a, _ := e.cluster("a")
	b, _ := e.cluster("b")
	e.submit(a.ID)
	e.submit(b.ID)
	wantAPIError(t, e.api("GET", "/jobs?cluster=%zza", tok, nil), 400, "invalid", "query string", `"%zz"`)
	wantAPIError(t, e.api("GET", "/jobs/count?state=queued&cluster=%zza", tok, nil), 400, "invalid", "query string")
	e.api("GET", "/jobs?cluster=a&search=100%25", tok, nil).want(t, 200)
}

// TestAdminAPIRefusalsDoNotEchoHugeValues: a refused value is named, not
// sent back whole: a 900 KB cluster name gets an answer of a few hundred
// bytes that still says what was wrong.
func TestAdminAPIRefusalsDoNotEchoHugeValues(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")
	r := e.api("POST", "/clusters", tok, map[string]any{"name": strings.Repeat("a", 900_000), "allowedNamespaces": []string{"apps"}})
	wantAPIError(t, r, 400, "invalid", "cluster name", "(900000 bytes in all)")
	if len(r.body) > 2000 {
		t.Fatalf("the refusal is %d bytes long", len(r.body))
	}
}
