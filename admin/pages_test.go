package admin_test

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestRemoteListsEveryPage: over the admin API a list the Service answers
// whole follows the list's cursor past the API's largest page (1000), as
// the registry answers it; a job list pages by offset to its limit, and
// without one answers the registry's default.
func TestRemoteListsEveryPage(t *testing.T) {
	w := newWorld(t)
	w.cluster(t, registry.ClusterSpec{Name: "one", AllowedNamespaces: []string{"apps"}, Labels: registry.Labels{"env": "prod"}})
	const n = 1000 + 1
	for range n {
		if _, err := w.reg.CreateRollout(w.ctx, registry.RolloutSpec{Selector: "env=prod", Kind: registry.KindApply, Payload: configMap("apps", "a")}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	viewer := w.connect(t, registry.RoleViewer, "")
	got, err := viewer.ListRollouts(ctx, registry.RolloutListParams{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ro := range got {
		seen[ro.ID] = true
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("the remote lists %d rollouts (%d distinct), want all %d", len(got), len(seen), n)
	}
	for limit, want := range map[int]int{0: 100, 1500: n} {
		jobs, err := w.remote.ListJobs(ctx, registry.JobListParams{Limit: limit})
		local, lerr := w.local.ListJobs(ctx, registry.JobListParams{Limit: limit})
		if err != nil || lerr != nil || len(jobs) != want || len(local) != want {
			t.Errorf("limit %d: the remote lists %d jobs (%v), the registry %d (%v), want %d (a rollout's first job each)",
				limit, len(jobs), err, len(local), lerr, want)
			continue
		}
		for i := range jobs {
			if jobs[i].ID != local[i].ID {
				t.Errorf("limit %d: job %d is %s over the API, %s in the registry", limit, i, jobs[i].ID, local[i].ID)
				break
			}
		}
	}
}
