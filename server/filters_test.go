package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestLongFiltersAreRefused: a search of 50,000 characters made SQLite
// answer 500 ("LIKE or GLOB pattern too complex"), and an org-scoped viewer
// could send it. Every free-text filter is bounded by registry.MaxQueryText
// with a 400 that says the limit; a filter at the limit is served.
func TestLongFiltersAreRefused(t *testing.T) {
	onBothStores(t, func(t *testing.T, e *env) {
		prod, _ := e.cluster("prod", func(s *registry.ClusterSpec) { s.Organization = "acme" })
		e.submit(prod.ID) // SQLite reads a pattern only when a row is there to match
		viewer := e.adminToken("acme-viewer", registry.RoleViewer, "acme")
		long := strings.Repeat("x", 50000)
		for _, c := range []struct{ path, field string }{
			{"/jobs?search=" + long, "search"},
			{"/jobs?error=" + long, "error"},
			{"/jobs?stuck=true&search=" + long, "search"},
			{"/events?cluster=prod&kind=" + long, "kind"},
			{"/audit?cluster=prod&action=" + long, "action"},
			{"/clusters?selector=" + long, "selector"},
			{"/clusters?org=" + long, "organization"},
		} {
			wantAPIError(t, e.api("GET", c.path, viewer, nil), http.StatusBadRequest, "invalid", c.field+" is 50000 characters long; the limit is 1000")
		}
		atLimit := strings.Repeat("é", registry.MaxQueryText) // 2,000 bytes
		if r := e.api("GET", "/jobs?search="+url.QueryEscape(atLimit), viewer, nil); r.status != http.StatusOK {
			t.Fatalf("a search at the limit: %d %s", r.status, r.body)
		}
	})
}
