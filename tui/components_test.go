package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// countingSource is a table source of n rows that counts the rows it is
// asked to render.
type countingSource struct {
	n        int
	rendered int
	version  int
}

func (s *countingSource) rowCount() int   { return s.n }
func (s *countingSource) marked(int) bool { return false }
func (s *countingSource) rowKey(i int) string {
	return fmt.Sprint(i, "|", s.version)
}

func (s *countingSource) rowCells(i int) []cell {
	s.rendered++
	return []cell{txt(fmt.Sprintf("row %d", i), themes.Plain), txt("x", themes.Good)}
}

func TestTableRendersOnlyVisibleRowsAndCachesThem(t *testing.T) {
	tb := newTable([]column{{Title: "NAME", Width: 20, Flex: 1}, {Title: "STATE", Width: 8}})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	tb.setSize(80, 11) // a header and 10 rows
	src := &countingSource{n: 1_000_000}

	out := tb.view(src, "")
	if got, want := src.rendered, 10; got != want {
		t.Fatalf("first frame rendered %d rows, want %d (only the visible ones)", got, want)
	}
	if got := strings.Count(out, "\n") + 1; got != 11 {
		t.Errorf("got %d lines, want 11", got)
	}
	tb.view(src, "")
	if src.rendered != 10 {
		t.Errorf("an unchanged frame rendered %d more rows, want 0 (cached)", src.rendered-10)
	}
	tb.setCursor(11, src.n) // scrolls by two rows: two new ones, and the cursor row moves
	tb.view(src, "")
	if got := src.rendered - 10; got > 4 {
		t.Errorf("scrolling by two rendered %d rows, want at most 4", got)
	}
	src.version++ // every row changed
	src.rendered = 0
	tb.view(src, "")
	if src.rendered != 10 {
		t.Errorf("after a change rendered %d rows, want 10", src.rendered)
	}
	if len(tb.cache) > 8*11 {
		t.Errorf("cache holds %d lines, want it bounded", len(tb.cache))
	}
}

func TestTableLayout(t *testing.T) {
	cols := []column{
		{Title: "NAME", Width: 20, Min: 10, Flex: 2},
		{Title: "ID", Width: 29, Drop: 3},
		{Title: "ORG", Width: 12, Min: 6, Flex: 1, Drop: 4},
		{Title: "STATE", Width: 16},
		{Title: "WRITES", Width: 8, Drop: 2},
	}
	for _, tc := range []struct {
		width int
		want  []int
	}{
		{120, []int{41, 29, 22, 16, 8}}, // room: the flexible columns share it 2:1
		{80, []int{13, 29, 10, 16, 8}},  // tight: the flexible columns shrink first, the one with most room above its minimum first
		{60, []int{34, 0, 0, 16, 8}},    // narrow: ORG, then ID, are dropped
		{40, []int{14, 0, 0, 16, 8}},
	} {
		tb := newTable(cols)
		tb.setStyles(themes.NewStyles(themes.Mono()))
		tb.setSize(tc.width, 5)
		if !slices.Equal(tb.widths, tc.want) {
			t.Errorf("width %d: got column widths %v, want %v", tc.width, tb.widths, tc.want)
		}
		used := 0
		for _, w := range tb.widths {
			if w > 0 {
				used += w + 1
			}
		}
		if used-1 != tc.width {
			t.Errorf("width %d: columns and spaces take %d cells, want all of them", tc.width, used-1)
		}
		if w := ansi.StringWidth(tb.header()); w != tc.width {
			t.Errorf("width %d: header is %d cells wide", tc.width, w)
		}
	}
}

func TestTableNavigation(t *testing.T) {
	tb := newTable([]column{{Title: "A", Width: 10}})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	tb.setSize(20, 6) // 5 rows
	k := DefaultKeys()
	for _, tc := range []struct {
		key        string
		cursor, at int
	}{
		{"j", 1, 0}, {"down", 2, 0}, {"G", 99, 95}, {"k", 98, 95}, {"pgup", 93, 93}, {"g", 0, 0}, {"ctrl+d", 5, 1}, {"up", 4, 1},
	} {
		if !tb.navigate(keyMsg(tc.key), k, 100) {
			t.Fatalf("%s is a navigation key", tc.key)
		}
		if tb.cursor != tc.cursor || tb.offset != tc.at {
			t.Errorf("after %s: cursor %d, offset %d; want %d, %d", tc.key, tb.cursor, tb.offset, tc.cursor, tc.at)
		}
	}
	if tb.navigate(keyMsg("x"), k, 100) {
		t.Error("x is not a navigation key")
	}
	if i, ok := tb.rowAt(3, 100); !ok || i != tb.offset+2 {
		t.Errorf("rowAt(3) = %d, %v; want %d", i, ok, tb.offset+2)
	}
	if _, ok := tb.rowAt(0, 100); ok {
		t.Error("rowAt(0) hit the header")
	}
}

func TestCmdline(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	m.ctx.Fleet.setClusters([]registry.Cluster{{ID: "cl-1", ClusterSpec: registry.ClusterSpec{Name: "prod-eu-1"}}, {ID: "cl-2", ClusterSpec: registry.ClusterSpec{Name: "prod-us-1"}}})
	c := m.cmdline

	type step struct {
		keys []string
		want string // the input line after the keys
	}
	c.open()
	for _, s := range []step{
		{[]string{"j", "o", "tab"}, "job"}, // jobs and job: their common prefix
		{[]string{"tab"}, "jobs"},          // then each in turn
		{[]string{"backspace", "s", "tab"}, "jobs "},
		{[]string{"s", "t", "tab"}, "jobs stuck "},
	} {
		for _, k := range s.keys {
			c.Update(keyMsg(k))
		}
		if got := c.input.Value(); got != s.want {
			t.Fatalf("after %v: got %q, want %q", s.keys, got, s.want)
		}
	}
	msgs := exec(c.Update(keyMsg("enter")), time.Second)
	cmd, ok := find[commandMsg](msgs)
	if !ok || cmd.name != "jobs" || !slices.Equal(cmd.args, []string{"stuck"}) {
		t.Fatalf("enter ran %+v, want jobs [stuck]", cmd)
	}
	if c.active {
		t.Error("the prompt stays open after enter")
	}

	// Cluster names complete after :clusters, the common prefix first.
	c.open()
	for _, k := range []string{"c", "l", " ", "p", "tab"} {
		c.Update(keyMsg(k))
	}
	if got := c.input.Value(); got != "cl prod-" {
		t.Errorf("got %q, want the common prefix %q", got, "cl prod-")
	}
	c.Update(keyMsg("tab"))
	first := c.input.Value()
	c.Update(keyMsg("tab"))
	if second := c.input.Value(); first == second || !strings.HasPrefix(first, "cl prod-") {
		t.Errorf("tab should cycle through the matches, got %q then %q", first, second)
	}
	c.Update(keyMsg("esc"))

	// History: up recalls, down returns to the draft.
	c.open()
	c.Update(keyMsg("a"))
	c.Update(keyMsg("up"))
	if got := c.input.Value(); got != "jobs stuck" {
		t.Errorf("up recalled %q, want the last command", got)
	}
	c.Update(keyMsg("down"))
	if got := c.input.Value(); got != "a" {
		t.Errorf("down gave %q, want the draft back", got)
	}

	// An unknown command says so and keeps the prompt open.
	c.setValue("frobnicate")
	if msgs := exec(c.Update(keyMsg("enter")), time.Second); len(msgs) != 0 || !c.active || !strings.Contains(c.err, "unknown command") {
		t.Errorf("unknown command: msgs %v, active %v, err %q", msgs, c.active, c.err)
	}
}

func TestClusterFormListEditing(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	f := newClusterForm(m.ctx, registry.ClusterSpec{Policy: registry.DefaultPolicy()}, nil, 0)
	send := func(keys ...string) {
		for _, k := range keys {
			if len([]rune(k)) > 1 && !slices.Contains([]string{"enter", "esc", "tab", "up", "down", "space", "backspace", "ctrl+s", "shift+tab", "left", "right"}, k) {
				for _, r := range k {
					f.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
				}
				continue
			}
			f.Update(keyMsg(k))
		}
	}
	send("edge", "tab", "lab", "tab", "right", "tab") // name, org, mode push, to namespaces
	send("a, b ,c", "enter", "d", "enter")
	ns := f.field("namespaces")
	if !slices.Equal(ns.items, []string{"a", "b", "c", "d"}) {
		t.Fatalf("got items %v, want a b c d", ns.items)
	}
	send("up", "up", "x") // select c, remove it
	if !slices.Equal(ns.items, []string{"a", "b", "d"}) {
		t.Fatalf("after removing: %v", ns.items)
	}
	send("up", "enter") // take b back for editing
	if got := ns.input.Value(); got != "b" || !slices.Equal(ns.items, []string{"a", "d"}) {
		t.Fatalf("editing an item: input %q, items %v", got, ns.items)
	}
	send("backspace", "bb", "enter")
	spec, _, err := f.spec()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "edge" || spec.Organization != "lab" || spec.Mode != registry.ModePush || !slices.Equal(spec.AllowedNamespaces, []string{"a", "d", "bb"}) {
		t.Errorf("got spec %+v", spec)
	}
	// A value typed but not added is not silently dropped.
	send("tab", "orphan")
	if _, _, err := f.spec(); err == nil || !strings.Contains(err.Error(), "orphan") {
		t.Errorf("got %v, want an error naming the value not added", err)
	}
	// esc on a changed form asks first.
	if next, _ := f.Update(keyMsg("esc")); next == nil || !f.discard {
		t.Error("the first esc on a changed form should warn, not close")
	}
	if next, _ := f.Update(keyMsg("esc")); next != nil {
		t.Error("the second esc should close the form")
	}
}

func TestClusterFormSaveCreatesAndShowsToken(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	press(m, "2", "n")
	if !isModal[*clusterForm](m) {
		t.Fatalf("n opened %T, want the cluster form", m.modal)
	}
	// A bad value: the registry's message names the field, the form stays.
	f := m.modal.(*clusterForm)
	f.field("name").input.SetValue("bad")
	f.field("namespaces").items = []string{"Not_A_Namespace"}
	do(m, "ctrl+s")
	if m.modal != f || !strings.Contains(f.err, "Not_A_Namespace") || f.saving {
		t.Fatalf("refused save: modal %T, err %q, saving %v", m.modal, f.err, f.saving)
	}
	f.field("namespaces").items = []string{"default"}
	do(m, "ctrl+s")
	tm, ok := m.modal.(*tokenModal)
	if !ok {
		t.Fatalf("after saving: modal %T, status %q; want the token modal", m.modal, m.status)
	}
	if !strings.HasPrefix(tm.registerCommand(), "tether agent register --server http://127.0.0.1:7070 --token - ") || strings.Contains(tm.registerCommand(), "tether_reg_") ||
		!strings.HasSuffix(tm.registerCommand(), "--state-dir ~/.local/state/tether-agent-bad") {
		t.Errorf("register command %q", tm.registerCommand())
	}
	if _, err := e.reg.GetCluster(e.admin, "bad"); err != nil {
		t.Errorf("the cluster was not created: %v", err)
	}
	// c copies over OSC 52: a clipboard command and a status message.
	_, cmd := m.Update(keyMsg("c"))
	if cmd == nil || tm.copied != "token" {
		t.Error("c should copy the token")
	}
	// Closing without copying warns first; after a copy it closes at once.
	tm.copied = ""
	press(m, "esc")
	if m.modal == nil || !tm.warned {
		t.Error("the first esc without a copy should warn")
	}
	press(m, "esc")
	if m.modal != nil {
		t.Error("the second esc should close the token modal")
	}
}

func TestReapply(t *testing.T) {
	base := registry.ClusterSpec{Name: "a", Organization: "o", AllowedNamespaces: []string{"x", "y"},
		Policy: registry.Policy{LeaseSeconds: 60, MaxAttempts: 5}}
	for _, tc := range []struct {
		name         string
		mine, theirs func(*registry.ClusterSpec)
		wantNS       []string
		wantLease    int
		wantAttempts int
		wantClashes  []string
		wantOrg      string
	}{
		{
			name:   "disjoint list edits both kept",
			mine:   func(s *registry.ClusterSpec) { s.AllowedNamespaces = []string{"x", "y", "mine"} },
			theirs: func(s *registry.ClusterSpec) { s.AllowedNamespaces = []string{"y", "theirs"} },
			wantNS: []string{"y", "theirs", "mine"}, wantLease: 60, wantAttempts: 5, wantOrg: "o",
		},
		{
			name:   "my removal applies to their list",
			mine:   func(s *registry.ClusterSpec) { s.AllowedNamespaces = []string{"y"} },
			theirs: func(s *registry.ClusterSpec) { s.AllowedNamespaces = []string{"x", "y", "z"} },
			wantNS: []string{"y", "z"}, wantLease: 60, wantAttempts: 5, wantOrg: "o",
		},
		{
			name:   "scalars: mine where I changed, theirs elsewhere",
			mine:   func(s *registry.ClusterSpec) { s.Policy.LeaseSeconds = 120 },
			theirs: func(s *registry.ClusterSpec) { s.Policy.MaxAttempts = 9; s.Organization = "new" },
			wantNS: []string{"x", "y"}, wantLease: 120, wantAttempts: 9, wantOrg: "new",
		},
		{
			name:   "both changed the same scalar: mine shown, clash named",
			mine:   func(s *registry.ClusterSpec) { s.Policy.LeaseSeconds = 120 },
			theirs: func(s *registry.ClusterSpec) { s.Policy.LeaseSeconds = 90 },
			wantNS: []string{"x", "y"}, wantLease: 120, wantAttempts: 5, wantOrg: "o",
			wantClashes: []string{"lease seconds"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mine, theirs := cloneSpec(base), cloneSpec(base)
			tc.mine(&mine)
			tc.theirs(&theirs)
			got, clashes := reapply(base, mine, theirs)
			if !slices.Equal(got.AllowedNamespaces, tc.wantNS) || got.Policy.LeaseSeconds != tc.wantLease ||
				got.Policy.MaxAttempts != tc.wantAttempts || got.Organization != tc.wantOrg || !slices.Equal(clashes, tc.wantClashes) {
				t.Errorf("got ns %v lease %d attempts %d org %q clashes %v; want %v %d %d %q %v",
					got.AllowedNamespaces, got.Policy.LeaseSeconds, got.Policy.MaxAttempts, got.Organization, clashes,
					tc.wantNS, tc.wantLease, tc.wantAttempts, tc.wantOrg, tc.wantClashes)
			}
		})
	}
}

func TestFeedCoalescesAndBoundsTheTail(t *testing.T) {
	f := newFeed(t.Context())
	j1 := &registry.Job{ID: "j-1", State: registry.JobQueued}
	j1b := &registry.Job{ID: "j-1", State: registry.JobInProgress}
	f.add(registry.WatchEvent{Type: registry.WatchUpsert, Kind: registry.EntityJob, Job: j1})
	f.add(registry.WatchEvent{Type: registry.WatchUpsert, Kind: registry.EntityJob, Job: j1b})
	for i := range feedEventBuffer + 5 {
		f.add(registry.WatchEvent{Type: registry.WatchUpsert, Kind: registry.EntityEvent, Event: &registry.Event{ID: int64(i)}})
	}
	f.add(registry.WatchEvent{Type: registry.WatchUpsert, Kind: registry.EntityCluster, Cluster: &registry.Cluster{ID: "cl-1"}})
	f.add(registry.WatchEvent{Type: registry.WatchDelete, Kind: registry.EntityCluster, ID: "cl-1"})
	b := f.drain()
	if len(b.Jobs) != 1 || b.Jobs[0].State != registry.JobInProgress {
		t.Errorf("got jobs %v, want the newest version of j-1 only", b.Jobs)
	}
	if len(b.Events) != feedEventBuffer || b.DroppedEvents != 5 {
		t.Errorf("got %d events and %d dropped, want %d and 5", len(b.Events), b.DroppedEvents, feedEventBuffer)
	}
	if len(b.Clusters) != 0 || !slices.Equal(b.Deleted, []string{"cl-1"}) {
		t.Errorf("a cluster deleted in the same frame: got upserts %v, deletes %v", b.Clusters, b.Deleted)
	}
	if b2 := f.drain(); !b2.empty() {
		t.Errorf("a second drain got %+v, want nothing", b2)
	}
	if !f.add(registry.WatchEvent{Type: registry.WatchReset}) || !f.drain().Reset {
		t.Error("a reset is reported")
	}
}

func TestSeriesAndSparkline(t *testing.T) {
	t0 := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	s := newSeries(10*time.Second, 6, t0)
	s.add(t0, 2)
	s.add(t0.Add(-15*time.Second), 1)
	s.add(t0.Add(-time.Hour), 100) // outside the window
	if got := s.values(); !slices.Equal(got, []int64{0, 0, 0, 1, 0, 2}) {
		t.Fatalf("got %v", got)
	}
	s.advance(t0.Add(25 * time.Second))
	if got := s.values(); !slices.Equal(got, []int64{0, 1, 0, 2, 0, 0}) {
		t.Fatalf("after advancing: %v", got)
	}
	level := newSeries(10*time.Second, 4, t0)
	level.carry = true
	level.set(t0, 7)
	level.advance(t0.Add(20 * time.Second))
	if got := level.values(); !slices.Equal(got, []int64{0, 7, 7, 7}) {
		t.Errorf("a level carries forward: %v", got)
	}
	if got := sparkline([]int64{0, 1, 4, 8}, 6); got != "  ▁▂▅█" {
		t.Errorf("sparkline = %q", got)
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {59 * time.Second, "59s"}, {61 * time.Second, "1m"}, {90 * time.Minute, "1h"}, {47 * time.Hour, "47h"}, {72 * time.Hour, "3d"}} {
		if got := humanDuration(tc.d); got != tc.want {
			t.Errorf("humanDuration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
	now := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	if got := until(now, now.Add(30*24*time.Hour-time.Millisecond)); got != "in 30d" {
		t.Errorf("a 30-day credential issued a moment ago: %q", got)
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1000000: "1,000,000", -12345: "-12,345"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := pad("abc", 5); got != "abc  " {
		t.Errorf("pad = %q", got)
	}
	if got := pad("abcdef", 4); ansi.StringWidth(got) != 4 || !strings.HasSuffix(got, "…") {
		t.Errorf("pad truncates with an ellipsis: %q", got)
	}
	for in, want := range map[string]time.Duration{"5m": 5 * time.Minute, "90s": 90 * time.Second, "10": 10 * time.Minute} {
		if got, err := durationInput(in); err != nil || got != want {
			t.Errorf("durationInput(%q) = %s, %v", in, got, err)
		}
	}
	if _, err := durationInput("soon"); err == nil {
		t.Error("durationInput accepts nonsense")
	}
}

func TestFilters(t *testing.T) {
	f := newFleet()
	f.setClusters([]registry.Cluster{{ID: "cl-1", ClusterSpec: registry.ClusterSpec{Name: "prod-eu-1"}}, {ID: "cl-2", ClusterSpec: registry.ClusterSpec{Name: "prod-us-1"}}})
	jf := parseJobFilter(f, "cluster:prod-eu kind:apply web api")
	if !slices.Equal(jf.clusters, []string{"cl-1"}) || jf.kind != registry.KindApply || jf.search != "web api" || jf.err != "" {
		t.Errorf("job filter: %+v", jf)
	}
	if jf := parseJobFilter(f, "cluster:prod"); len(jf.clusters) != 2 {
		t.Errorf("a prefix matches both prod clusters: %+v", jf)
	}
	if jf := parseJobFilter(f, "cluster:nope kind:bogus"); jf.err == "" {
		t.Error("unknown cluster or kind should say so")
	}
	// cluster: with no name says what it needs, in every list that takes it.
	for _, err := range []string{parseJobFilter(f, "cluster:").err, parseEventFilter(f, "cluster:").err, parseAuditFilter(f, "cluster: alice").err} {
		if !strings.Contains(err, "cluster: needs a name") {
			t.Errorf("cluster: without a name said %q, want what it needs", err)
		}
	}
	// A prefix of several names names no cluster in the events and the
	// audit trail; a name of none is an error in the events, and the id of
	// a deleted cluster in the audit trail, which outlives it.
	for _, err := range []string{parseEventFilter(f, "cluster:prod").err, parseAuditFilter(f, "cluster:prod").err} {
		if !strings.Contains(err, "cluster:prod matches several clusters") {
			t.Errorf("cluster:prod said %q, want that several match", err)
		}
	}
	if ef := parseEventFilter(f, "cluster:cl-gone"); ef.cluster != "" || ef.err != "no cluster matches cl-gone" {
		t.Errorf("events, an unknown cluster: %+v", ef)
	}
	if af := parseAuditFilter(f, "cluster:cl-gone re:^x"); af.cluster != "cl-gone" || af.err != "" || len(af.text.terms) != 1 {
		t.Errorf("audit, a deleted cluster's id and a pattern: %+v", af)
	}
	ef := parseEventFilter(f, "cluster:prod-us-1 kind:heart status:False disk")
	if ef.cluster != "cl-2" || !slices.Equal(ef.kinds, []string{registry.EventClusterHeartbeat}) || !ef.falseOnly || len(ef.text.terms) != 1 || ef.text.terms[0].sub != "disk" {
		t.Errorf("event filter: %+v", ef)
	}
	ev := registry.Event{ClusterID: "cl-2", Kind: registry.EventClusterHeartbeat, Conditions: []registry.Condition{{Type: "DiskPressure", Status: "False"}}}
	if !ef.match(f, &ev) {
		t.Error("the event should match")
	}
	ev.Conditions[0].Status = "True"
	if ef.match(f, &ev) {
		t.Error("status:False must not match an event without a False condition")
	}
	af := parseAuditFilter(f, "action:job. cluster:prod-eu-1 alice")
	a := registry.AuditEntry{Actor: "admin:alice", Action: "job.requeue", ClusterID: "cl-1"}
	if !af.match(f, &a) {
		t.Errorf("audit filter %+v should match %+v", af, a)
	}
	a.Action = "cluster.create"
	if af.match(f, &a) {
		t.Error("action:job. must not match cluster.create")
	}
}

// TestTextQuery: the words every list's filter shares: substrings in any
// case, re:PATTERN (any case), ! before either to leave out, every word
// holding; an invalid pattern is an error that matches nothing.
func TestTextQuery(t *testing.T) {
	hay := "prod-eu-1 cl-01 acme pull active ⚠1 false lease_expired attempts exhausted"
	for _, tc := range []struct {
		filter string
		want   bool
	}{
		{"PROD", true},
		{"prod acme", true},
		{"prod nope", false},
		{"!failed", true},
		{"!acme", false},
		{"re:^prod-[a-z]+-[0-9]$", false}, // the whole text is not just the name
		{`re:^prod-[a-z]+-[0-9]\s`, true},
		{`re:EU-\d`, true},
		{"!re:exhausted", false},
		{"!re:^staging", true},
		{"attempts exhausted", true},
		{"!", true}, // a lone ! is a word
	} {
		q := parseTextQuery(strings.Fields(tc.filter))
		if q.err != "" {
			t.Errorf("%q: %s", tc.filter, q.err)
		}
		if got := q.match(hay + " !"); got != tc.want {
			t.Errorf("%q matched %v, want %v", tc.filter, got, tc.want)
		}
	}
	q := parseTextQuery([]string{"re:api-[0-9"})
	if !strings.Contains(q.err, "invalid regex: missing closing ]") || q.match("api-1") {
		t.Errorf("an invalid pattern: err %q", q.err)
	}
	if q := parseTextQuery([]string{"re:"}); q.err == "" {
		t.Error("re: without a pattern should say so")
	}
}

// TestJobFilterStates: over the store, a state word keeps that state, ! a
// state leaves it out, and a regex or a negated word is
// refused with a message saying what works.
func TestJobFilterStates(t *testing.T) {
	f := newFleet()
	f.setClusters([]registry.Cluster{{ID: "cl-1", ClusterSpec: registry.ClusterSpec{Name: "prod-eu-1"}}, {ID: "cl-2", ClusterSpec: registry.ClusterSpec{Name: "prod-us-1"}}})
	if jf := parseJobFilter(f, "failed in-progress"); !slices.Equal(jf.states, []registry.JobState{registry.JobFailed, registry.JobInProgress}) || jf.err != "" {
		t.Errorf("failed in-progress: %+v", jf)
	}
	jf := parseJobFilter(f, "!failed !succeeded")
	if len(jf.states) != len(registry.JobStates)-2 || slices.Contains(jf.states, registry.JobFailed) || jf.nothing {
		t.Errorf("!failed !succeeded: %+v", jf)
	}
	if jf := parseJobFilter(f, "failed !failed"); !jf.nothing {
		t.Errorf("failed !failed leaves nothing: %+v", jf)
	}
	if jf := parseJobFilter(f, "!cluster:prod-eu-1"); !strings.Contains(jf.err, "name the clusters to keep") {
		t.Errorf("!cluster: over the jobs (a page took 1.2 s over a million): %q", jf.err)
	}
	if jf := parseJobFilter(f, "re:^api"); !strings.Contains(jf.err, "cannot match a regular expression") {
		t.Errorf("re: over the jobs: %q", jf.err)
	}
	if jf := parseJobFilter(f, "!web"); !strings.Contains(jf.err, "not a word") {
		t.Errorf("!web over the jobs: %q", jf.err)
	}
	if st, ok := registry.IntersectStates([]registry.JobState{registry.JobFailed}, jf.states); ok || st != nil {
		t.Errorf("narrow failed by !web's states: %v %v", st, ok)
	}
	if st, ok := registry.IntersectStates(nil, []registry.JobState{registry.JobQueued}); !ok || !slices.Equal(st, []registry.JobState{registry.JobQueued}) {
		t.Errorf("narrow any by queued: %v %v", st, ok)
	}
	if _, ok := registry.IntersectStates([]registry.JobState{registry.JobFailed}, []registry.JobState{registry.JobQueued}); ok {
		t.Error("failed and queued have nothing in common")
	}
}

// TestSixtyHoursReadsTwoDays: the console's ages and spans of 60 hours read
// "2d" (and "2d ago"), as the CLI's do (cmd/tether
// TestTargetDurationReadsAsTheConsole): both go through internal/humantime.
func TestSixtyHoursReadsTwoDays(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	then := now.Add(-60 * time.Hour)
	d := &rolloutDetail{ctx: &Context{Now: now}}
	if got := d.took(&registry.RolloutTarget{StartedAt: then}); got != "2d" {
		t.Errorf("took: %q", got)
	}
	if got := age(now, then); got != "2d" {
		t.Errorf("age: %q", got)
	}
	if got := ago(now, then); got != "2d ago" {
		t.Errorf("ago: %q", got)
	}
}
