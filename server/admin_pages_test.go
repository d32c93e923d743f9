package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPIClusterPagesKeepEveryCluster pages GET /clusters one and two
// at a time through names whose order depends on how case is folded past
// ASCII: every cluster comes exactly once, on both stores.
func TestAdminAPIClusterPagesKeepEveryCluster(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { clusterPagesKeepEveryCluster(t, newEnv(t)) })
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn := os.Getenv("TETHER_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("TETHER_TEST_POSTGRES_DSN is not set")
		}
		clusterPagesKeepEveryCluster(t, newEnvOn(t, func(string) (registry.Store, error) { return freshPostgres(t) }, registry.Config{}))
	})
}

func clusterPagesKeepEveryCluster(t *testing.T, e *env) {
	tok := e.adminToken("root", registry.RoleViewer, "")
	names := []string{"Éz", "éa", "B", "a", "ab", "a-c", "Ωmega", "ωa", "Zed", "zoo"}
	for _, n := range names {
		e.cluster(n)
	}
	slices.Sort(names)
	for _, limit := range []int{1, 2, 3} {
		var got []string
		cursor := ""
		for pages := 0; pages <= len(names); pages++ {
			p := decodeAs[page[registry.Cluster]](t, e.api("GET", fmt.Sprintf("/clusters?limit=%d&cursor=%s", limit, cursor), tok, nil))
			for _, c := range p.Items {
				got = append(got, c.Name)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if !slices.Equal(sorted, names) {
			t.Errorf("pages of %d held %s; want each of %s once", limit, strings.Join(got, ","), strings.Join(names, ","))
		}
	}
}

// TestAdminAPIRolloutPages: GET /rollouts pages like every list (a
// nextCursor while rollouts remain, each rollout once), and an unknown
// state is refused rather than matching nothing.
func TestAdminAPIRolloutPages(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("root", registry.RoleViewer, "")
	e.cluster("prod", func(s *registry.ClusterSpec) { s.Labels = registry.Labels{"env": "prod"} })
	var want []string
	for i := range 7 {
		if i%3 == 0 {
			e.clock.Advance(time.Second) // some created at the same instant, some not
		}
		ro, err := e.reg.CreateRollout(adminCtx(), registry.RolloutSpec{Name: fmt.Sprintf("r%d", i), Selector: "env=prod", Kind: registry.KindApply,
			Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"apps"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ro.Name)
	}
	slices.Sort(want)
	for _, limit := range []int{1, 2, 3, 7} {
		var got []string
		cursor := ""
		for pages := 0; pages <= len(want); pages++ {
			p := decodeAs[page[registry.Rollout]](t, e.api("GET", fmt.Sprintf("/rollouts?limit=%d&cursor=%s", limit, cursor), tok, nil))
			for _, ro := range p.Items {
				got = append(got, ro.Name)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if !slices.Equal(sorted, want) {
			t.Errorf("pages of %d held %s; want each of %s once", limit, strings.Join(got, ","), strings.Join(want, ","))
		}
	}
	wantAPIError(t, e.api("GET", "/rollouts?state=runing", tok, nil), 400, "invalid", `"runing"`)
	wantAPIError(t, e.api("GET", "/rollouts?cursor=nonsense", tok, nil), 400, "invalid", "cursor")
}
