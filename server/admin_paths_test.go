package server_test

import (
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPINamesWithSlashOrPercent: a cluster is named in a path by its
// name escaped once (as url.PathEscape, adminclient and the CLI do), and
// that name is the one looked up: "team/a" is reachable, and "a%41" is not
// taken for "aA".
func TestAdminAPINamesWithSlashOrPercent(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleAdmin, "")
	for _, name := range []string{"team/a", "a%41", "aA"} {
		e.cluster(name)
	}
	for path, want := range map[string]string{
		"/clusters/team%2Fa":       "team/a",
		"/clusters/a%2541":         "a%41",
		"/clusters/aA":             "aA",
		"/clusters/%61A":           "aA", // an unreserved character escaped all the same
		"/clusters/team%2Fa/queue": "",   // the cluster's queue, not a cluster "team" with a subpath
	} {
		r := e.api("GET", path, tok, nil)
		r.want(t, 200)
		if want == "" {
			continue
		}
		if got := decodeAs[registry.Cluster](t, r).Name; got != want {
			t.Errorf("GET %s answered cluster %q, want %q", path, got, want)
		}
	}
	// A delete by an escaped name deletes that cluster and no other.
	e.api("DELETE", "/clusters/a%2541?reason=test", tok, nil).want(t, 200)
	e.api("GET", "/clusters/aA", tok, nil).want(t, 200)
	wantAPIError(t, e.api("GET", "/clusters/a%2541", tok, nil), 404, "not_found")
}
