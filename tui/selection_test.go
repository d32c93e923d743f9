package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// busyQueue is a console on the jobs view over one cluster with n queued
// jobs a second apart, at width x height.
type busyQueue struct {
	t       *testing.T
	e       *env
	m       *Model
	cluster string
	next    int
}

func newBusyQueue(t *testing.T, n, width, height int) *busyQueue {
	t.Helper()
	e := newEnv(t)
	c, _ := e.cluster(t, registry.ClusterSpec{Name: "busy", AllowedNamespaces: []string{"*"}})
	q := &busyQueue{t: t, e: e, cluster: c.ID}
	q.submit(n)
	q.m = newModel(t, e, false)
	q.m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	load(t, q.m, e)
	press(q.m, "3")
	if q.m.screen != screenJobs {
		t.Fatalf("3 opened screen %d, want the jobs", q.m.screen)
	}
	return q
}

// submit queues n more jobs, newer than all before.
func (q *busyQueue) submit(n int) {
	for range n {
		q.next++
		q.e.at(time.Duration(q.next) * time.Second)
		q.e.submit(q.t, q.cluster, "default", fmt.Sprintf("app-%d", q.next))
	}
}

// refresh is what the feed does after changes, in either order: the
// counters re-read and the window re-read.
func (q *busyQueue) refresh(countsFirst bool) {
	counts := func() {
		for _, msg := range exec(q.m.loadCounts(), 10*time.Second) {
			_, cmd := q.m.Update(msg)
			pump(q.m, cmd)
		}
	}
	if countsFirst {
		counts()
	}
	pump(q.m, q.m.jobs.load(q.m.jobs.start))
	if !countsFirst {
		counts()
	}
}

func (q *busyQueue) selected() string {
	q.t.Helper()
	j := q.m.jobs.selected()
	if j == nil {
		q.t.Fatalf("no job selected (cursor %d, rows %d..%d)", q.m.jobs.table().cursor, q.m.jobs.start, q.m.jobs.start+len(q.m.jobs.rows))
	}
	return j.ID
}

// TestJobSelectionFollowsItsJob: on a busy queue the selected job stays
// selected as jobs arrive above it, at the top, past row 100 and after G,
// whichever of the counters and the window is re-read first, and at both
// sizes (the smaller window is where the job used to move out of the page).
func TestJobSelectionFollowsItsJob(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, tc := range []struct {
			name string
			keys []string
		}{
			{"top", []string{"j", "j"}},
			{"screen bottom", []string{"pgdown", "k"}},
			{"past row 100", []string{"pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "j", "j"}},
			{"after G", []string{"G"}},
			{"after G and k", []string{"G", "k", "k", "k"}},
		} {
			for _, countsFirst := range []bool{true, false} {
				t.Run(fmt.Sprintf("%dx%d/%s/counts first %v", size[0], size[1], tc.name, countsFirst), func(t *testing.T) {
					q := newBusyQueue(t, 250, size[0], size[1])
					do(q.m, tc.keys...)
					want := q.selected()
					for range 3 { // ~30 submits a second, three reloads
						q.submit(30)
						q.refresh(countsFirst)
						if got := q.selected(); got != want {
							t.Fatalf("selection moved from %s to %s as jobs arrived (cursor %d)", want, got, q.m.jobs.table().cursor)
						}
					}
					// j still moves from the job, not from a stale row.
					do(q.m, "k")
					if got := q.selected(); got == want {
						t.Fatalf("k left the selection on %s", got)
					}
					do(q.m, "j")
					if got := q.selected(); got != want {
						t.Fatalf("k then j selected %s, want %s", got, want)
					}
				})
			}
		}
	}
}

// TestJobSelectionGoesToTheNearestRowWhenItsJobLeaves: a selected job that
// leaves the tab (canceled, so no longer queued) hands the selection to its
// neighbour, even with jobs arriving above meanwhile.
func TestJobSelectionGoesToTheNearestRowWhenItsJobLeaves(t *testing.T) {
	q := newBusyQueue(t, 250, 80, 24)
	do(q.m, "pgdown", "pgdown", "pgdown", "j")
	gone := q.selected()
	do(q.m, "j")
	next := q.selected()
	do(q.m, "k")
	must(q.e.reg.CancelJob(q.e.admin, gone, "done with it"))
	q.submit(30)
	q.refresh(true)
	if got := q.selected(); got != next {
		t.Fatalf("after %s left, %s is selected, want its neighbour %s", gone, got, next)
	}
}

// TestAnchorRestore: the shared selection of the in-memory lists (clusters,
// events, audit, rollouts) holds its record across inserts, moves and
// removals, landing on the nearest neighbour left.
func TestAnchorRestore(t *testing.T) {
	tb := newTable([]column{{Title: "ID", Width: 4}})
	tb.setSize(10, 6) // five rows
	ids := func(s ...int) func(int) string {
		return func(i int) string { return strconv.Itoa(s[i]) }
	}
	old := []int{1, 2, 3, 4, 5, 6, 7, 8}
	for _, tc := range []struct {
		name   string
		cursor int
		rows   []int
		want   int // the row index afterwards
	}{
		{"inserted above", 2, []int{10, 11, 12, 1, 2, 3, 4, 5, 6, 7, 8}, 5},
		{"re-sorted", 2, []int{8, 7, 6, 5, 4, 3, 2, 1}, 5},
		{"gone: the next one", 2, []int{1, 2, 4, 5}, 2},
		{"gone with the next: the one before", 7, []int{1, 2, 3, 4, 5, 6}, 5},
		{"gone with its neighbours: the nearest left", 3, []int{9, 1, 7, 8}, 2},
		{"all gone: the row number", 3, []int{20, 21, 22, 23, 24}, 3},
		{"all gone, fewer rows: the last", 6, []int{20, 21}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb.setCursor(tc.cursor, len(old))
			a := anchorAt(tb, len(old), ids(old...))
			a.restore(tb, len(tc.rows), ids(tc.rows...))
			if tb.cursor != tc.want {
				t.Errorf("cursor %d, want %d", tb.cursor, tc.want)
			}
		})
	}
}

// TestClusterSelectionFollowsItsCluster: sorted by queued jobs, the selected
// cluster stays selected when submissions re-order the list under it.
func TestClusterSelectionFollowsItsCluster(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	press(m, "2")
	m.clusters.sortBy = slices.Index(clusterSorts, "queued")
	m.clusters.built = -1
	m.clusters.rebuild()
	i := slices.IndexFunc(m.clusters.rows, func(c *registry.Cluster) bool { return c.ID == fx.stagingID })
	m.clusters.table.setCursor(i, len(m.clusters.rows))
	for n := range 5 {
		e.submit(t, fx.stagingID, "default", fmt.Sprintf("app-%d", n))
	}
	for _, msg := range exec(m.loadCounts(), 10*time.Second) {
		m.Update(msg)
	}
	m.ctx.Fleet.version++ // what a feed batch does
	m.clusters.rebuild()
	if got := m.clusters.selected(); got == nil || got.ID != fx.stagingID {
		t.Fatalf("selected %v after staging's queue grew, want staging (%s), cursor %d (was %d)", got, fx.stagingID, m.clusters.table.cursor, i)
	}
	if m.clusters.table.cursor == i {
		t.Fatalf("staging stayed on row %d: the test did not re-order the list", i)
	}
}

// TestAuditSelectionHoldsAtTheTop: the first row's entry stays selected as
// entries arrive above it too (the row number used to win there).
func TestAuditSelectionHoldsAtTheTop(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	press(m, "5")
	want := m.audit.rows[0].ID
	must(e.reg.IssueToken(e.admin, fx.euID, 0))
	pump(m, m.audit.load(false))
	if got := m.audit.rows[m.audit.table.cursor].ID; got != want {
		t.Fatalf("selection moved from entry %d to %d", want, got)
	}
}

// TestJobsOldestFirst: S lists a tab the oldest first through the store's
// own order (no rows sorted on screen): the top is the first job submitted,
// G reaches the newest (read from the far end), rows run in order across
// pages, the selection still follows its job as jobs arrive, and s says the
// store cannot order jobs by another column instead of pretending.
func TestJobsOldestFirst(t *testing.T) {
	q := newBusyQueue(t, 250, 80, 24)
	target := func() string { return q.m.jobs.selected().Target.Name }
	do(q.m, "S")
	if !q.m.jobs.oldest || target() != "app-1" {
		t.Fatalf("after S the first row is %s, want app-1 (the oldest)", target())
	}
	if h := q.m.jobs.table().header(); !strings.Contains(h, "AGE▼") {
		t.Errorf("oldest first, the header is %q, want AGE▼", h)
	}
	for i := 2; i <= 120; i++ {
		do(q.m, "j")
		if got, want := target(), fmt.Sprintf("app-%d", i); got != want {
			t.Fatalf("row %d is %s, want %s", i, got, want)
		}
	}
	do(q.m, "G")
	if target() != "app-250" {
		t.Fatalf("G selected %s, want app-250 (the newest, last when the oldest are first)", target())
	}
	do(q.m, "k", "k")
	want := q.selected()
	q.submit(30)
	q.refresh(true)
	if got := q.selected(); got != want {
		t.Fatalf("the selection moved from %s to %s as jobs arrived", want, got)
	}
	cmd := press(q.m, "s")
	msgs := exec(cmd, time.Second)
	st, _ := find[statusMsg](msgs)
	if !strings.Contains(st.text, "only by AGE") {
		t.Errorf("s on the jobs said %q, want that the store sorts them only by AGE", st.text)
	}
	do(q.m, "S")
	do(q.m, "g")
	if target() != "app-280" {
		t.Errorf("S again: the first row is %s, want app-280 (the newest)", target())
	}
}
