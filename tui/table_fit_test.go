package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// rowsSource is a tableSource over fixed rows of plain text.
type rowsSource [][]string

func (r rowsSource) rowCount() int       { return len(r) }
func (r rowsSource) marked(int) bool     { return false }
func (r rowsSource) rowKey(i int) string { return strings.Join(r[i], "|") }
func (r rowsSource) rowCells(i int) []cell {
	var cells []cell
	for _, s := range r[i] {
		cells = append(cells, txt(s, themes.Plain))
	}
	return cells
}

// Columns size to what they show: a name is not cut while an id column
// keeps room it does not need, and ids give up their width first, down to
// the prefix that keeps them distinct (issue 12, defect 4).
func TestColumnsFitTheirContent(t *testing.T) {
	rows := rowsSource{
		{"j-01m88nn8s45hkn1az5dgzahdwb", "tmp-delete-me", "Deployment/payments/queued-payments", "queued"},
		{"j-01m88nn8s4xq7tb2mk0c9vj3fe", "prod-eu-1", "Deployment/web/api", "in_progress"},
		{"j-01m88pq2aaaaaaaaaaaaaaaaaa", "staging", "ConfigMap/default/x", "queued"},
	}
	tb := newTable([]column{
		{Title: "ID", Width: 28, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "CLUSTER", Width: 10, Min: 8, Flex: 1, Fit: true},
		{Title: "TARGET", Width: 20, Min: 10, Flex: 2, Fit: true},
		{Title: "STATE", Width: 13, Min: 8, Fit: true},
	})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	for _, width := range []int{120, 80, 64} {
		tb.setSize(width, 10)
		view := ansi.Strip(tb.view(rows, ""))
		wants := []string{"tmp-delete-me", "Deployment/payments/queued-payments", "in_progress"}
		if width < 80 {
			wants = wants[2:] // too narrow for everything: ids are cut first, then names and targets share
		}
		for _, want := range wants {
			if !strings.Contains(view, want) {
				t.Errorf("at %d columns %q is cut:\n%s", width, want, view)
			}
		}
		// The ids stay told apart: each shown prefix is distinct.
		seen := map[string]bool{}
		for _, line := range strings.Split(view, "\n")[1:4] {
			id := strings.Fields(line)[0]
			if seen[id] {
				t.Errorf("at %d columns two ids show as %q:\n%s", width, id, view)
			}
			seen[id] = true
		}
	}
}

// Columns that show nothing on screen (all empty or "-") give up their
// room before a name is cut (issue 30, defect 7).
func TestEmptyColumnsGoFirst(t *testing.T) {
	rows := rowsSource{
		{"prod-eu-1-frankfurt", "", "-", "queued"},
		{"prod-us-1-virginia", "", "-", "queued"},
	}
	tb := newTable([]column{
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Fit: true},
		{Title: "LEASE", Width: 11, Fit: true},
		{Title: "ACTIVITY", Width: 8, Right: true},
		{Title: "STATE", Width: 8},
	})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	tb.setSize(30, 10)
	view := ansi.Strip(tb.view(rows, ""))
	for _, want := range []string{"prod-eu-1-frankfurt", "prod-us-1-virginia", "queued"} {
		if !strings.Contains(view, want) {
			t.Errorf("%q is cut while empty columns keep their room:\n%s", want, view)
		}
	}
	if strings.Contains(view, "LEASE") || strings.Contains(view, "ACTIVITY") {
		t.Errorf("empty columns are still shown:\n%s", view)
	}
	// With room for them, they stay.
	tb.setSize(60, 10)
	if view := ansi.Strip(tb.view(rows, "")); !strings.Contains(view, "ACTIVITY") {
		t.Errorf("at 60 columns the empty columns are hidden though there is room:\n%s", view)
	}
}

// A cut never leaves two texts on screen looking the same: actors that
// differ only late are cut at their common head ("…eu-1"), or kept longer.
func TestCutsStayDistinct(t *testing.T) {
	rows := rowsSource{
		{"agent:prod-eu-1", "job.result", "succeeded with a long reason that takes the room"},
		{"agent:prod-us-1", "job.result", "succeeded"},
		{"agent:prod-ap-1", "job.result", "failed"},
		{"admin:alice", "job.submit", ""},
	}
	tb := newTable([]column{
		{Title: "ACTOR", Width: 20, Min: 8, Flex: 1, Fit: true},
		{Title: "ACTION", Width: 10},
		{Title: "REASON", Width: 20, Min: 12, Flex: 3},
	})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	for _, width := range []int{32, 34, 40, 80} {
		tb.setSize(width, 10)
		view := ansi.Strip(tb.view(rows, ""))
		seen := map[string]bool{}
		for _, line := range strings.Split(view, "\n")[1:5] {
			actor := strings.Fields(line)[0]
			if seen[actor] {
				t.Errorf("at %d columns two actors show as %q:\n%s", width, actor, view)
			}
			seen[actor] = true
		}
	}
	tb.setSize(32, 10)
	if view := ansi.Strip(tb.view(rows, "")); !strings.Contains(view, "…od-eu-1") {
		t.Errorf("the actors are not cut at their common head:\n%s", view)
	}
}

// stubNames reports whether a cut text (an ellipsis at its head, its end
// or its middle) could stand for full.
func stubNames(stub, full string) bool {
	head, tail, cut := strings.Cut(stub, "…")
	if !cut {
		return stub == full
	}
	return len(full) >= len(head)+len(tail) && strings.HasPrefix(full, head) && strings.HasSuffix(full, tail)
}

// A cut actor or cluster name stands for one text of everything the view
// holds, not only of the rows on screen: "agent:pro…" on screen while
// agent:prod-us-1 and agent:prod-ap-1 act off screen is ambiguous (issue
// 30, defect 7).
func TestCutsStayDistinctAcrossTheirDomain(t *testing.T) {
	rows := rowsSource{
		{"agent:prod-eu-1", "job.result", "succeeded with a long reason that takes the room"},
		{"admin:alice", "job.submit", ""},
	}
	domain := []string{"agent:prod-eu-1", "agent:prod-us-1", "agent:prod-ap-1", "admin:alice", "admin:albert"}
	reads := 0
	tb := newTable([]column{
		{Title: "ACTOR", Width: 20, Min: 8, Flex: 1, Fit: true, Domain: func(known int) (int, []string) {
			if known == 1 {
				return 1, nil
			}
			reads++
			return 1, domain
		}},
		{Title: "ACTION", Width: 10},
		{Title: "REASON", Width: 20, Min: 12, Flex: 3},
	})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	for _, width := range []int{30, 34, 40} {
		tb.setSize(width, 10)
		view := ansi.Strip(tb.view(rows, ""))
		for i, line := range strings.Split(view, "\n")[1:3] {
			stub := strings.Fields(line)[0]
			for _, d := range domain {
				if d != rows[i][0] && stubNames(stub, d) {
					t.Errorf("at %d columns %q stands for %s as well as %s:\n%s", width, stub, d, rows[i][0], view)
				}
			}
		}
	}
	if reads != 1 {
		t.Errorf("the domain was read %d times, want once (its stamp did not change)", reads)
	}
}

// Ids minted in the same second share their head (a ULID's timestamp):
// cut, they keep their tag and the tail that tells them apart, not the
// shared head, and take less room than their distinct prefix would.
func TestIDsSharingTheirHeadAreCutInTheMiddle(t *testing.T) {
	ids := []string{"j-01m8jyrtg7k3f9aq2bz0xw5n1c", "j-01m8jyrtg7k3f9aq2bz0xw5n1d", "j-01m8jyrtc2p8r4m6t0v3y5z7e9", "j-01m8jyrt3h6j9k2m5n8q1s4u7w"}
	var rows rowsSource
	for _, id := range ids {
		rows = append(rows, []string{id, "prod-eu-1", "a reason long enough to want the room of the ids, and more"})
	}
	tb := newTable([]column{
		{Title: "ID", Width: 28, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "CLUSTER", Width: 10, Min: 8, Flex: 1, Fit: true},
		{Title: "REASON", Width: 30, Min: 16, Flex: 3},
	})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	tb.setSize(40, 10)
	view := ansi.Strip(tb.view(rows, ""))
	seen := map[string]bool{}
	for i, line := range strings.Split(view, "\n")[1:5] {
		stub := strings.Fields(line)[0]
		if !strings.HasPrefix(stub, "j-…") || !strings.HasSuffix(ids[i], strings.TrimPrefix(stub, "j-…")) {
			t.Errorf("id %s shows as %q, want j-… and its tail:\n%s", ids[i], stub, view)
		}
		for j, id := range ids {
			if j != i && stubNames(stub, id) {
				t.Errorf("%q stands for %s as well as %s", stub, id, ids[i])
			}
		}
		if seen[stub] {
			t.Errorf("two ids show as %q", stub)
		}
		seen[stub] = true
		// The distinct prefix would take 28: the cut takes the 10 an id
		// column keeps at least.
		if w := ansi.StringWidth(stub); w > 10 {
			t.Errorf("id %s shows %d cells wide (%q)", ids[i], w, stub)
		}
	}
}

// Without a column of free text to take it, room left over stays at the
// right of the table: the names sized to their content are not padded (the
// jobs' CLUSTER was 40 wide for names of 12 at 220 columns; issue 30,
// defect 7).
func TestSpareWidthDoesNotPadNames(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 220, Height: 30})
	load(t, m, e)
	do(m, "3")
	m.View()
	tb := m.jobs.table()
	longest := 0
	for _, j := range m.jobs.rows {
		longest = max(longest, len(m.ctx.Fleet.clusterName(j.ClusterID)))
	}
	if longest == 0 {
		t.Fatal("no jobs on screen")
	}
	if w := tb.widths[1]; w != max(longest, len("CLUSTER")) {
		t.Errorf("at 220 columns CLUSTER is %d wide for names of at most %d:\n%s", w, longest, ansi.Strip(m.View().Content))
	}
	// A view with free text gives it the room.
	do(m, "5")
	m.View()
	reason := len(m.audit.table.cols) - 1
	if w := m.audit.table.widths[reason]; w < 60 {
		t.Errorf("at 220 columns the audit's REASON is %d wide, want the room left over", w)
	}
}

// The in-progress tab names the state its jobs are in: at 80 columns a
// STATE column saying only "in progress" gives up its room before a name
// or a target is cut; a stuck job's "⚠ in progress" keeps it, and so does
// the all tab (issue 30, defect 7).
func TestImpliedStateGivesUpItsRoom(t *testing.T) {
	e := newEnv(t)
	f := seedFleet(t, e)
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	load(t, m, e)
	do(m, "3")
	pump(m, m.jobs.setTab(tabInProgress))
	pump(m, m.jobs.SetFilter("cluster:prod-eu-1"))
	pump(m, m.jobs.requery())
	view := ansi.Strip(m.View().Content)
	if len(m.jobs.rows) != 1 || m.jobs.rows[0].ID != f.leasedJob {
		t.Fatalf("want the leased job alone on screen, have %d rows:\n%s", len(m.jobs.rows), view)
	}
	if strings.Contains(view, "STATE") || !strings.Contains(view, "…/payments/ledger") {
		t.Errorf("the in-progress tab keeps a STATE column of \"in progress\" while the target is cut:\n%s", view)
	}
	pump(m, m.jobs.SetFilter(""))
	pump(m, m.jobs.requery())
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "STATE") {
		t.Errorf("stuck jobs on screen (⚠ in progress): the STATE column is gone:\n%s", view)
	}
	pump(m, m.jobs.setTab(tabAll))
	pump(m, m.jobs.SetFilter("cluster:prod-eu-1 in_progress"))
	pump(m, m.jobs.requery())
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "STATE") {
		t.Errorf("the all tab hides its STATE column:\n%s", view)
	}
}

// Free text claims no more room than the rows on screen need while a
// resource is cut: at 80 columns the events' DETAIL said "Ready=True" in
// 30 cells while RESOURCE showed "…/team-a/gitea…" (issue 30, defect 7).
func TestFreeTextDoesNotHoldRoomItDoesNotNeed(t *testing.T) {
	rows := rowsSource{
		{"06:46:23", "edge-lab", "ConditionTransition", "ApplicationInstance/team-a/gitea-team-a", "Ready=True"},
		{"06:46:21", "staging-eu", "ConditionTransition", "ApplicationInstance/team-a/nextcloud-team-a", "Ready=True"},
	}
	tb := newTable([]column{
		{Title: "TIME", Width: 8},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Fit: true},
		{Title: "KIND", Width: 19, Min: 10},
		{Title: "RESOURCE", Width: 24, Min: 10, Flex: 1, Drop: 2, Fit: true, Path: true},
		{Title: "DETAIL", Width: 30, Min: 16, Flex: 3},
	})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	tb.setSize(80, 10)
	view := ansi.Strip(tb.view(rows, ""))
	for _, want := range []string{"…/team-a/gitea-team-a", "…/team-a/nextcloud-team-a", "Ready=True"} {
		if !strings.Contains(view, want) {
			t.Errorf("%q is cut while DETAIL keeps room it does not need:\n%s", want, view)
		}
	}
	// With room to spare, it goes to the free text.
	tb.setSize(160, 10)
	if w := tb.widths[4]; w < 50 {
		t.Errorf("at 160 columns DETAIL is %d wide, want the room left over", w)
	}
}
