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
}

func rolloutIDs(ros []registry.Rollout) string {
	ids := make([]string, len(ros))
	for i, ro := range ros {
		ids[i] = ro.Name
	}
	return strings.Join(ids, ",")
}
