package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testPaging proves both stores cut the same pages by keyset: the list's
// order is the store's, and a page after a cursor holds exactly what
// follows it.
func testPaging(t *testing.T, newStore NewStore) {
	t.Run("RolloutsByKeysetWithTies", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.fleet(1, nil)
		// Three rollouts share one instant, three the next: ties on
		// created_at are broken by id, descending.
		for i := range 7 {
			if i == 3 || i == 6 {
				e.clock.Advance(time.Second)
			}
			e.rollout(registry.RolloutSpec{Name: fmt.Sprintf("r%d", i)})
		}
		all, err := e.reg.ListRollouts(e.ctx, registry.RolloutListParams{})
		wantNoErr(t, err)
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b registry.Rollout) int {
			if n := b.CreatedAt.Compare(a.CreatedAt); n != 0 {
				return n
			}
			return cmp.Compare(b.ID, a.ID)
		})
		if got, w := rolloutIDs(all), rolloutIDs(want); got != w || len(all) != 7 {
			t.Fatalf("rollouts listed %s, want newest first, then id descending: %s", got, w)
		}
		for _, limit := range []int{1, 2, 3} {
			var got []registry.Rollout
			var after *registry.RolloutCursor
			for range 10 {
				page, err := e.reg.ListRollouts(e.ctx, registry.RolloutListParams{After: after, Limit: limit})
				wantNoErr(t, err)
				got = append(got, page...)
				if len(page) < limit {
					break
				}
				last := page[len(page)-1]
				after = &registry.RolloutCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			}
			if g, w := rolloutIDs(got), rolloutIDs(want); g != w {
				t.Errorf("pages of %d held %s, want %s", limit, g, w)
			}
		}
	})
	t.Run("ClustersByNameOnBothStoresAlike", func(t *testing.T) {
		e := newEnv(t, newStore)
		// ASCII letters fold, nothing else does: É and é, Ω and ω are
		// different bytes and sort as bytes (after every ASCII name).
		created := []string{"Éz", "éa", "B", "a", "ab", "a-c", "Ωmega", "ωa", "Zed", "zoo", "a_b", "A.b"}
		for i, n := range created {
			e.cluster(n, func(s *registry.ClusterSpec) {
				if i%2 == 0 {
					s.Labels = registry.Labels{"even": "yes"}
				}
			})
		}
		want := "a,a-c,A.b,a_b,ab,B,Zed,zoo,Éz,éa,Ωmega,ωa"
		all, err := e.reg.ListClusters(e.ctx, registry.ClusterListParams{})
		wantNoErr(t, err)
		if got := strings.Join(names(all), ","); got != want {
			t.Fatalf("clusters listed %s, want %s", got, want)
		}
		wantEven := []string{}
		for _, c := range all {
			if c.Labels["even"] == "yes" {
				wantEven = append(wantEven, c.Name)
			}
		}
		for _, sel := range []string{"", "even=yes"} {
			w := want
			if sel != "" {
				w = strings.Join(wantEven, ",")
			}
			for _, limit := range []int{1, 2, 5} {
				var got []registry.Cluster
				var after *registry.ClusterCursor
				for range 20 {
					page, err := e.reg.ListClusters(e.ctx, registry.ClusterListParams{Selector: sel, After: after, Limit: limit})
					wantNoErr(t, err)
					got = append(got, page...)
					if len(page) < limit {
						break
					}
					last := page[len(page)-1]
					after = &registry.ClusterCursor{Name: last.Name, ID: last.ID}
				}
				if g := strings.Join(names(got), ","); g != w {
					t.Errorf("selector %q, pages of %d held %s, want %s", sel, limit, g, w)
				}
			}
		}
	})
}

func rolloutIDs(ros []registry.Rollout) string {
	ids := make([]string, len(ros))
	for i, ro := range ros {
		ids[i] = ro.Name
	}
	return strings.Join(ids, ",")
}
