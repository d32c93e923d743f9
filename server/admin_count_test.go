package server_test

import (
	"encoding/json"
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

// TestAdminAPICountStuckJobs: GET /jobs/count?stuck=true counts what GET
// /jobs?stuck=true lists (not every job), ?after= counts those after a job
// in that list, and a stuck value that is not a boolean is refused.
func TestAdminAPICountStuckJobs(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleViewer, "")
	down, _ := e.cluster("down")
	up := e.newAgent("up") // registered and just heard from: not silent
	var stuck []string
	for range 3 {
		stuck = append(stuck, e.submit(down.ID))
		e.clock.Advance(time.Second)
		e.submit(up.clusterID)
	}
	if _, err := e.reg.SetClusterEnabled(adminCtx(), down.ID, false, "test"); err != nil {
		t.Fatal(err)
	}
	listed := decodeAs[page[registry.Job]](t, e.api("GET", "/jobs?stuck=true", tok, nil))
	if len(listed.Items) != 3 {
		t.Fatalf("GET /jobs?stuck=true listed %d jobs, want the 3 of the disabled cluster", len(listed.Items))
	}
	for query, want := range map[string]int{
		"?stuck=true":                                3,
		"?stuck=true&after=" + stuck[1]:              1, // newest first: stuck[2], stuck[1], stuck[0]
		"?stuck=true&order=oldest&after=" + stuck[0]: 2,
		"?stuck=true&state=in_progress":              0,
		"?stuck=false":                               6,
	} {
		var got struct{ Count int }
		if r := e.api("GET", "/jobs/count"+query, tok, nil); r.status != 200 || json.Unmarshal(r.body, &got) != nil || got.Count != want {
			t.Errorf("GET /jobs/count%s: %d %s, want count %d", query, r.status, r.body, want)
		}
	}
	wantAPIError(t, e.api("GET", "/jobs/count?stuck=maybe", tok, nil), 400, "invalid", `stuck "maybe"`)
}
