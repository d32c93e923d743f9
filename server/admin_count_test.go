package server_test

import (
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPICountAfterJob: GET /jobs/count?after=JOB_ID counts the jobs
// after it in the list's order (newest first, or oldest with order=oldest):
// its place in the list. An unknown job is 404, an unknown order 400.
func TestAdminAPICountAfterJob(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster("prod")
	var ids []string
	for range 5 {
		ids = append(ids, e.submit(c.ID))
		e.clock.Advance(time.Second)
	}
	tok := e.adminToken("viewer", registry.RoleViewer, "")
	count := func(query string) int {
		t.Helper()
		r := e.api("GET", "/jobs/count?"+query, tok, nil)
		if r.status != 200 {
			t.Fatalf("count?%s: %d %s", query, r.status, r.body)
		}
		return decodeAs[struct {
			Count int `json:"count"`
		}](t, r).Count
	}
	// ids[1] is the fourth newest: three come after it, one before.
	if got := count("after=" + ids[1]); got != 1 {
		t.Errorf("after the second oldest, newest first: %d, want 1", got)
	}
	if got := count("after=" + ids[1] + "&order=oldest"); got != 3 {
		t.Errorf("after the second oldest, oldest first: %d, want 3", got)
	}
	if got := count("state=queued"); got != 5 {
		t.Errorf("all queued: %d, want 5", got)
	}
	wantAPIError(t, e.api("GET", "/jobs/count?after=j-nosuchjob", tok, nil), 404, "not_found")
	wantAPIError(t, e.api("GET", "/jobs/count?order=sideways", tok, nil), 400, "invalid", "sideways")
}
