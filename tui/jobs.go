package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// The jobs view is the queue, asynq-style: state tabs with counts, and pages
// sized to the screen. The database may hold millions of jobs, so nothing
// loads them all: the view reads the window on screen (and a screen either
// side) with ListJobs, takes the tab counts from the registry's counters (or
// CountJobs when a kind or text filter needs it), and applies the feed's
// changes to the rows it holds, re-reading its window at most once a second
// when the feed says it changed.

const (
	tabQueued = iota
	tabInProgress
	tabStuck
	tabFailed
	tabAll
	numTabs
)

var jobTabLabels = [numTabs]string{"queued", "in progress", "stuck", "failed", "all"}

func tabStates(tab int) []registry.JobState {
	switch tab {
	case tabQueued:
		return []registry.JobState{registry.JobQueued}
	case tabInProgress:
		return []registry.JobState{registry.JobInProgress}
	case tabFailed:
		return []registry.JobState{registry.JobFailed}
	}
	return nil
}

// jobsReloadEvery bounds re-reads of the window driven by the feed.
const jobsReloadEvery = time.Second

// jobsCountEvery is how often the stuck count (which depends on the time:
// leases expire and clusters fall silent without any change) is refreshed.
const jobsCountEvery = 5 * time.Second

// jobFilter is the parsed `/` filter of the jobs view.
type jobFilter struct {
	clusters []string // ids
	names    []string // what was typed, for messages
	kind     registry.JobKind
	search   string
	err      string
}

func parseJobFilter(f *fleet, s string) jobFilter {
	var out jobFilter
	var words []string
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, ":")
		switch {
		case ok && (k == "cluster" || k == "c"):
			out.names = append(out.names, v)
			found := f.resolve(v)
			if len(found) == 0 {
				out.err = "no cluster matches " + v
			}
			for _, c := range found {
				out.clusters = append(out.clusters, c.ID)
			}
		case ok && (k == "kind" || k == "k"):
			out.kind = registry.JobKind(v)
			if !slices.Contains([]registry.JobKind{registry.KindApply, registry.KindDelete, registry.KindIntent}, out.kind) {
				out.err = "kind " + v + " is not one of apply, delete, intent"
			}
		default:
			words = append(words, w)
		}
	}
	out.search = strings.Join(words, " ")
	return out
}

// needsQueryCounts: the registry's counters are per cluster and state only.
func (f jobFilter) needsQueryCounts() bool { return f.kind != "" || f.search != "" }

type jobsView struct {
	ctx    *Context
	tables [2]*table // [0] the state tabs, [1] the stuck tab (its own columns)
	tab    int
	filter string
	fl     jobFilter

	gen     int // bumped whenever the query (tab or filter) changes
	start   int // absolute index of rows[0]
	rows    []registry.Job
	loaded  bool // rows belong to gen
	loading bool
	want    int // the start of the window being loaded
	dirty   bool
	last    time.Time // when the last load was issued
	err     error
	pinned  string // the selected job's id, kept across reloads

	queryCounts [numTabs]int // for filters the counters cannot answer; -1 unknown
	stuck       int          // -1 unknown
	counting    bool
	countDirty  bool
	lastCount   time.Time

	marks map[string]registry.Job
	width int
	hgt   int
}

type jobsPageMsg struct {
	gen   int
	start int
	jobs  []registry.Job
	err   error
}

type jobsCountsMsg struct {
	gen    int
	counts [numTabs]int // -1: not computed (the counters answer)
	err    error
}

type jobsReloadMsg struct{ gen int }

type jobsCountTickMsg struct{}

type jobsFilterMsg struct {
	gen    int
	filter string
}

func newJobsView(ctx *Context) *jobsView {
	v := &jobsView{ctx: ctx, marks: map[string]registry.Job{}, stuck: -1}
	v.tables[0] = newTable([]column{
		{Title: "ID", Width: 28},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1},
		{Title: "KIND", Width: 7, Drop: 5},
		{Title: "TARGET", Width: 24, Min: 10, Flex: 2},
		{Title: "STATE", Width: 13},
		{Title: "ATT", Width: 4, Right: true, Drop: 4},
		{Title: "LEASE", Width: 11},
		{Title: "ACTIVITY", Width: 8, Right: true, Drop: 3},
		{Title: "AGE", Width: 4, Right: true, Drop: 2},
	})
	v.tables[1] = newTable([]column{
		{Title: "ID", Width: 28},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1},
		{Title: "KIND", Width: 7, Drop: 5},
		{Title: "STATE", Width: 13},
		{Title: "ATT", Width: 4, Right: true, Drop: 4},
		{Title: "LEASE", Width: 11, Drop: 3},
		{Title: "ACTIVITY", Width: 8, Right: true, Drop: 2},
		{Title: "WHY", Width: 24, Min: 16, Flex: 2},
	})
	for _, t := range v.tables {
		t.setStyles(ctx.Styles)
		t.marks = true
	}
	for i := range v.queryCounts {
		v.queryCounts[i] = -1
	}
	return v
}

func (v *jobsView) table() *table {
	if v.tab == tabStuck {
		return v.tables[1]
	}
	return v.tables[0]
}

func (v *jobsView) Title() string { return "Jobs" }

// SetSize lays the view out; the root then calls ensureWindow, as a taller
// window may need more rows.
func (v *jobsView) SetSize(w, h int) {
	v.width, v.hgt = w, h
	for _, t := range v.tables {
		t.setSize(w, h-2)
	}
}

// pageSize is how many rows one load reads: the screen and one either side.
func (v *jobsView) pageSize() int { return 3 * max(1, v.table().height) }

// Init loads the first window (the stuck tab waits for the clusters, which
// say which are silent).
func (v *jobsView) Init() tea.Cmd {
	if v.tab == tabStuck {
		return nil
	}
	return v.load(0)
}

// base is the filter as registry params.
func (v *jobsView) base() registry.JobListParams {
	return registry.JobListParams{ClusterIDs: v.fl.clusters, Kind: v.fl.kind, Search: v.fl.search}
}

// total is the number of rows of the current tab, or -1 when unknown.
func (v *jobsView) total() int { return v.tabCount(v.tab) }

func (v *jobsView) tabCount(tab int) int {
	if tab == tabStuck {
		return v.stuck
	}
	if v.fl.needsQueryCounts() {
		return v.queryCounts[tab]
	}
	f := v.ctx.Fleet
	if !f.counted {
		return -1
	}
	ids := v.fl.clusters
	if len(ids) == 0 {
		ids = []string{""}
	}
	var n int64
	for _, id := range ids {
		if tab == tabAll {
			n += f.total(id)
			continue
		}
		for _, s := range tabStates(tab) {
			n += f.count(id, s)
		}
	}
	return int(n)
}

// rowCount is what the table scrolls over: the tab's count when known, else
// what is loaded.
func (v *jobsView) rowCount() int {
	if t := v.total(); t >= 0 {
		return t
	}
	return v.start + len(v.rows)
}

func (v *jobsView) job(i int) *registry.Job {
	if i >= v.start && i < v.start+len(v.rows) {
		return &v.rows[i-v.start]
	}
	return nil
}

func (v *jobsView) selected() *registry.Job { return v.job(v.table().cursor) }

func (v *jobsView) marked(i int) bool {
	if j := v.job(i); j != nil {
		_, ok := v.marks[j.ID]
		return ok
	}
	return false
}

func (v *jobsView) rowKey(i int) string {
	j := v.job(i)
	if j == nil {
		return "loading"
	}
	c := v.ctx.Fleet.cluster(j.ClusterID)
	cv := int64(0)
	if c != nil {
		cv = c.Status.UpdatedAt.UnixMilli() + c.Version
	}
	return fmt.Sprintf("%d|%s|%d|%d|%d", v.tab, j.ID, j.UpdatedAt.UnixMilli(), v.ctx.Now.Unix(), cv)
}

func (v *jobsView) rowCells(i int) []cell {
	j := v.job(i)
	if j == nil {
		return []cell{txt("…", themes.Muted)}
	}
	now := v.ctx.Now
	c := v.ctx.Fleet.cluster(j.ClusterID)
	why := Classify(j, c, now)
	state := txt(stateLabel(j.State), jobStateKind(j.State))
	if why.Reason != NotStuck && v.tab != tabStuck {
		state = cell{{"⚠ ", themes.Warning}, {stateLabel(j.State), themes.Warning}}
	}
	att := fmt.Sprint(j.Attempt)
	if c != nil {
		att += "/" + fmt.Sprint(c.Policy.MaxAttempts)
	}
	activity := txt("-", themes.Muted)
	if j.State == registry.JobInProgress {
		k := themes.Plain
		if why.Reason == NoLeaseSilent {
			k = themes.Warning
		}
		activity = txt(age(now, j.LastActivityAt), k)
	}
	kind := string(j.Kind)
	cells := []cell{
		txt(j.ID, themes.Muted),
		txt(v.ctx.Fleet.clusterName(j.ClusterID), themes.Plain),
		txt(kind, themes.Plain),
	}
	if v.tab != tabStuck {
		cells = append(cells, txt(j.Target.String(), themes.Plain))
	}
	cells = append(cells, state, txt(att, themes.Plain), leaseCell(v.ctx.Styles, j, now), activity)
	if v.tab == tabStuck {
		cells = append(cells, txt(why.Reason.Short(), themes.Warning))
	} else {
		cells = append(cells, txt(age(now, j.CreatedAt), themes.Muted))
	}
	return cells
}

// leaseCell is a countdown bar of the lease left, red once it expired.
func leaseCell(st *themes.Styles, j *registry.Job, now time.Time) cell {
	if j.State != registry.JobInProgress {
		return nil
	}
	if !j.Leased() {
		return txt("no lease", themes.Muted)
	}
	left := j.LeaseExpiresAt.Sub(now)
	if left <= 0 {
		return txt("expired "+humanDuration(-left), themes.Danger)
	}
	total := time.Duration(max(1, j.LeaseSeconds)) * time.Second
	frac := float64(left) / float64(total)
	const w = 5
	full := min(w, max(1, int(frac*w+0.5)))
	k := themes.Good
	if frac < 0.25 {
		k = themes.Warning
	}
	return cell{{strings.Repeat("█", full), k}, {strings.Repeat("░", w-full), themes.Muted}, {" " + humanDuration(left), themes.Plain}}
}

func jobStateKind(s registry.JobState) themes.Kind {
	switch s {
	case registry.JobQueued:
		return themes.Info
	case registry.JobInProgress:
		return themes.Accent
	case registry.JobSucceeded:
		return themes.Good
	case registry.JobFailed, registry.JobConflict:
		return themes.Danger
	}
	return themes.Muted
}

// ensureWindow loads the rows around the table's window when they are not
// held.
func (v *jobsView) ensureWindow() tea.Cmd {
	t := v.table()
	top, h := t.offset, t.height
	need := top + h
	if total := v.total(); total >= 0 {
		need = min(need, total)
	}
	if v.loaded && top >= v.start && need <= v.start+len(v.rows) {
		return nil
	}
	if v.loading && v.want == max(0, top-h) {
		return nil
	}
	return v.load(max(0, top-h))
}

// load reads the window starting at start for the current query.
func (v *jobsView) load(start int) tea.Cmd {
	v.loading, v.want, v.dirty, v.last = true, start, false, time.Now()
	gen, tab, base, limit := v.gen, v.tab, v.base(), v.pageSize()
	total := v.total()
	b := v.ctx.Backend
	now := v.ctx.Now
	var unreachable []string
	if tab == tabStuck {
		unreachable = v.ctx.Fleet.unreachable(now)
	}
	return func() tea.Msg {
		ctx := context.Background()
		if tab == tabStuck {
			jobs, err := listStuck(ctx, b, stuckQueries(base, unreachable, now), start, limit)
			return jobsPageMsg{gen: gen, start: start, jobs: jobs, err: err}
		}
		p := base
		p.States, p.Limit, p.Offset = tabStates(tab), limit, start
		reverse := false
		if total > 0 && start > total/2 {
			// Deep in a large tab: read from the other end, which the index
			// serves as cheaply as the first page.
			end := min(total, start+limit)
			p.OldestFirst, p.Offset, p.Limit = true, total-end, max(1, end-start)
			reverse = true
		}
		jobs, err := b.ListJobs(ctx, p)
		if reverse {
			slices.Reverse(jobs)
		}
		return jobsPageMsg{gen: gen, start: start, jobs: jobs, err: err}
	}
}

// countCmd computes the counts the registry's counters cannot give: the
// stuck tab always, every tab when a kind or text filter is set.
func (v *jobsView) countCmd() tea.Cmd {
	if v.counting || !v.ctx.Fleet.loaded {
		v.countDirty = v.counting
		return nil
	}
	v.counting, v.countDirty, v.lastCount = true, false, time.Now()
	gen, base, all := v.gen, v.base(), v.fl.needsQueryCounts()
	b := v.ctx.Backend
	now := v.ctx.Now
	unreachable := v.ctx.Fleet.unreachable(now)
	return func() tea.Msg {
		ctx := context.Background()
		var out [numTabs]int
		for i := range out {
			out[i] = -1
		}
		n, err := countStuck(ctx, b, stuckQueries(base, unreachable, now))
		if err != nil {
			return jobsCountsMsg{gen: gen, err: err}
		}
		out[tabStuck] = n
		if all {
			for _, tab := range []int{tabQueued, tabInProgress, tabFailed, tabAll} {
				p := base
				p.States = tabStates(tab)
				n, err := b.CountJobs(ctx, p)
				if err != nil {
					return jobsCountsMsg{gen: gen, err: err}
				}
				out[tab] = n
			}
		}
		return jobsCountsMsg{gen: gen, counts: out}
	}
}

// requery starts over after the tab or the filter changed.
func (v *jobsView) requery() tea.Cmd {
	v.gen++
	v.loaded, v.rows, v.start, v.err = false, nil, 0, nil
	v.loading, v.counting = false, false
	v.stuck = -1
	for i := range v.queryCounts {
		v.queryCounts[i] = -1
	}
	v.table().setCursor(0, 1)
	v.table().offset = 0
	return tea.Batch(v.load(0), v.countCmd())
}

func (v *jobsView) setTab(tab int) tea.Cmd {
	if tab == v.tab {
		return nil
	}
	v.tab = (tab + numTabs) % numTabs
	return v.requery()
}

// matches reports whether a changed job may belong to the current query.
func (v *jobsView) matches(j *registry.Job) bool {
	if len(v.fl.clusters) > 0 && !slices.Contains(v.fl.clusters, j.ClusterID) {
		return false
	}
	if v.fl.kind != "" && j.Kind != v.fl.kind {
		return false
	}
	return true
}

func (v *jobsView) applyFeed(b *feedBatch) tea.Cmd {
	relevant := false
	for _, j := range b.Jobs {
		if m, ok := v.marks[j.ID]; ok {
			m = *j
			v.marks[j.ID] = m
		}
		if i := slices.IndexFunc(v.rows, func(x registry.Job) bool { return x.ID == j.ID }); i >= 0 {
			v.rows[i] = *j
			relevant = true
			continue
		}
		if !v.matches(j) {
			continue
		}
		if states := tabStates(v.tab); states == nil || slices.Contains(states, j.State) {
			relevant = true
		}
	}
	for _, id := range b.Deleted {
		for jid, m := range v.marks {
			if m.ClusterID == id {
				delete(v.marks, jid)
			}
		}
		relevant = true
	}
	var cmds []tea.Cmd
	if relevant || len(b.Clusters) > 0 && v.tab == tabStuck {
		cmds = append(cmds, v.markDirty())
	}
	if len(b.Jobs) > 0 && (v.fl.needsQueryCounts() || v.tab == tabStuck) {
		cmds = append(cmds, v.countLater())
	}
	return tea.Batch(cmds...)
}

// markDirty schedules a reload of the window, at most once per
// jobsReloadEvery.
func (v *jobsView) markDirty() tea.Cmd {
	if v.dirty {
		return nil
	}
	v.dirty = true
	if v.loading {
		return nil // the reply re-checks dirty
	}
	wait := jobsReloadEvery - time.Since(v.last)
	gen := v.gen
	return tea.Tick(max(wait, frameInterval), func(time.Time) tea.Msg { return jobsReloadMsg{gen: gen} })
}

func (v *jobsView) countLater() tea.Cmd {
	if v.countDirty {
		return nil
	}
	v.countDirty = true
	return tea.Tick(max(2*time.Second-time.Since(v.lastCount), frameInterval), func(time.Time) tea.Msg { return jobsCountTickMsg{} })
}

func (v *jobsView) Update(msg tea.Msg) tea.Cmd {
	t := v.table()
	switch msg := msg.(type) {
	case jobsPageMsg:
		if msg.gen != v.gen || msg.start != v.want {
			return nil
		}
		v.loading, v.err = false, msg.err
		if msg.err != nil {
			return failed("could not read jobs: " + errText(msg.err))
		}
		v.loaded, v.start, v.rows = true, msg.start, msg.jobs
		if v.pinned != "" {
			// Keep the selection on the job it was on: new jobs arriving on
			// top must not slide another one under the cursor (and under R).
			if i := slices.IndexFunc(v.rows, func(j registry.Job) bool { return j.ID == v.pinned }); i >= 0 {
				t.setCursor(v.start+i, v.rowCount())
			}
		}
		t.clampTo(v.rowCount())
		if v.dirty {
			v.dirty = false
			return v.markDirty()
		}
		return v.ensureWindow()
	case jobsCountsMsg:
		if msg.gen != v.gen {
			return nil
		}
		v.counting = false
		if msg.err != nil {
			return failed("could not count jobs: " + errText(msg.err))
		}
		v.stuck = msg.counts[tabStuck]
		if v.fl.needsQueryCounts() {
			v.queryCounts = msg.counts
		}
		t.clampTo(v.rowCount())
		if v.countDirty {
			v.countDirty = false
			return v.countLater()
		}
		return v.ensureWindow()
	case jobsReloadMsg:
		if msg.gen == v.gen && v.dirty && !v.loading {
			return v.load(v.start)
		}
	case jobsCountTickMsg:
		if v.countDirty && !v.counting {
			return v.countCmd()
		}
	case jobsFilterMsg:
		if msg.gen == v.gen && msg.filter == v.filter {
			return v.requery()
		}
	case tickMsg:
		if time.Since(v.lastCount) >= jobsCountEvery && !v.counting {
			return v.countCmd()
		}
	case countsMsg:
		t.clampTo(v.rowCount())
		return v.ensureWindow()
	case watchStartedMsg:
		cmds := []tea.Cmd{v.countCmd()}
		if v.tab == tabStuck {
			cmds = append(cmds, v.load(v.start))
		}
		return tea.Batch(cmds...)
	case feedMsg:
		return v.applyFeed(&msg.batch)
	case themeChangedMsg:
		for _, tb := range v.tables {
			tb.setStyles(v.ctx.Styles)
		}
	case tea.MouseClickMsg:
		if msg.Y == 1 {
			if tab := v.tabAt(msg.X); tab >= 0 {
				return v.setTab(tab)
			}
			return nil
		}
		if i, ok := t.rowAt(msg.Y-2, v.rowCount()); ok {
			if i == t.cursor {
				return v.open()
			}
			t.setCursor(i, v.rowCount())
			if j := v.selected(); j != nil {
				v.pinned = j.ID
			}
			return v.ensureWindow()
		}
	case tea.MouseWheelMsg:
		t.wheel(msg, v.rowCount())
		v.pinned = ""
		if j := v.selected(); j != nil {
			v.pinned = j.ID
		}
		return v.ensureWindow()
	case tea.KeyPressMsg:
		return v.key(msg)
	}
	return nil
}

func (v *jobsView) key(msg tea.KeyPressMsg) tea.Cmd {
	k := v.ctx.Keys
	t := v.table()
	if t.navigate(msg, k, v.rowCount()) {
		v.pinned = "" // the selection follows the cursor, not a job
		if j := v.selected(); j != nil {
			v.pinned = j.ID
		}
		return v.ensureWindow()
	}
	switch {
	case key.Matches(msg, k.Left):
		return v.setTab(v.tab - 1)
	case key.Matches(msg, k.Right):
		return v.setTab(v.tab + 1)
	case key.Matches(msg, k.Enter):
		return v.open()
	case key.Matches(msg, k.CopyID):
		if j := v.selected(); j != nil {
			return tea.Batch(tea.SetClipboard(j.ID), info("copied "+j.ID+" to the clipboard (OSC 52)"))
		}
	case key.Matches(msg, k.Mark):
		if j := v.selected(); j != nil {
			if _, ok := v.marks[j.ID]; ok {
				delete(v.marks, j.ID)
			} else {
				v.marks[j.ID] = *j
			}
			t.setCursor(t.cursor+1, v.rowCount())
			return v.ensureWindow()
		}
	case key.Matches(msg, k.ClearMarks):
		n := len(v.marks)
		clear(v.marks)
		return info(fmt.Sprintf("cleared %s", plural(n, "mark", "marks")))
	case key.Matches(msg, k.Requeue):
		return requeueJobs(v.ctx, v.targets())
	case key.Matches(msg, k.Cancel):
		return cancelJobs(v.ctx, v.targets())
	case key.Matches(msg, k.ExtendLease):
		if j := v.selected(); j != nil {
			return extendLease(v.ctx, j)
		}
	}
	return nil
}

// targets are the marked jobs, or the selected one.
func (v *jobsView) targets() []registry.Job {
	if len(v.marks) > 0 {
		out := make([]registry.Job, 0, len(v.marks))
		for _, j := range v.marks {
			out = append(out, j)
		}
		slices.SortFunc(out, func(a, b registry.Job) int { return strings.Compare(a.ID, b.ID) })
		return out
	}
	if j := v.selected(); j != nil {
		return []registry.Job{*j}
	}
	return nil
}

func (v *jobsView) open() tea.Cmd {
	j := v.selected()
	if j == nil {
		return nil
	}
	d := newJobDetail(v.ctx, j.ID, j)
	return v.ctx.open(d)
}

// tabLabels are the tabs as drawn, with the cell ranges a click hits.
func (v *jobsView) tabLabels() ([]string, [][2]int) {
	var labels []string
	var ranges [][2]int
	x := 0
	for i := range numTabs {
		n := v.tabCount(i)
		count := "…"
		if n >= 0 {
			count = thousands(int64(n))
		}
		label := " " + jobTabLabels[i] + " " + count + " "
		w := ansi.StringWidth(label)
		labels = append(labels, label)
		ranges = append(ranges, [2]int{x, x + w})
		x += w + 1
	}
	return labels, ranges
}

func (v *jobsView) tabAt(x int) int {
	_, ranges := v.tabLabels()
	for i, r := range ranges {
		if x >= r[0] && x < r[1] {
			return i
		}
	}
	return -1
}

func (v *jobsView) View() string {
	st := v.ctx.Styles
	title := st.Title.Render("Jobs")
	if v.filter != "" {
		title += st.Render(themes.Muted, "  filter /") + st.Render(themes.Accent, v.filter)
		if v.fl.err != "" {
			title += st.Render(themes.Danger, "  "+v.fl.err)
		}
	}
	if n := len(v.marks); n > 0 {
		title += st.Render(themes.Marked, fmt.Sprintf("  ● %s marked (R/C act on them, u clears)", plural(n, "job", "jobs")))
	}
	if v.loading && v.loaded {
		title += st.Render(themes.Muted, "  updating…")
	}
	if total := v.total(); total > 0 {
		title += st.Render(themes.Muted, fmt.Sprintf("  %s of %s", thousands(int64(v.table().cursor+1)), thousands(int64(total))))
	}
	labels, _ := v.tabLabels()
	var tabs []string
	for i, l := range labels {
		switch {
		case i == v.tab:
			tabs = append(tabs, st.TabActive.Render(l))
		case i == tabStuck && v.stuck > 0:
			tabs = append(tabs, st.Render(themes.Warning, l))
		default:
			tabs = append(tabs, st.TabInactive.Render(l))
		}
	}
	empty := "loading jobs…"
	switch {
	case v.err != nil:
		empty = "could not read jobs: " + errText(v.err)
	case v.loaded && v.filter != "":
		empty = "no " + jobTabLabels[v.tab] + " job matches /" + v.filter + " (esc clears the filter)"
	case v.loaded && v.tab == tabStuck:
		empty = "no stuck jobs: nothing waits on an expired lease, a silent agent or a silent cluster"
	case v.loaded && v.tab == tabAll:
		empty = "no jobs yet: producers submit them with tether job submit (or the admin API)"
	case v.loaded:
		empty = "no " + jobTabLabels[v.tab] + " jobs"
	}
	return pad(title, v.width) + "\n" + pad(strings.Join(tabs, " "), v.width) + "\n" + v.table().view(v, empty)
}

func (v *jobsView) Filter() string { return v.filter }

// SetFilter applies a filter after a short pause in typing (every key
// would be a query otherwise).
func (v *jobsView) SetFilter(s string) tea.Cmd {
	if s == v.filter {
		return nil
	}
	v.filter = s
	v.fl = parseJobFilter(v.ctx.Fleet, s)
	v.gen++
	gen := v.gen
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return jobsFilterMsg{gen: gen, filter: s} })
}

func (v *jobsView) FilterHelp() string {
	return "cluster:NAME kind:apply|delete|intent, other words match id, idempotency key, namespace or name"
}

// tabByName finds a tab by its command name (in-progress, in_progress and
// "in progress" all work).
func (v *jobsView) tabByName(name string) (int, bool) {
	name = strings.NewReplacer("-", " ", "_", " ").Replace(strings.ToLower(name))
	for i, l := range jobTabLabels {
		if l == name {
			return i, true
		}
	}
	return 0, false
}

// showTab switches to a tab by its command name.
func (v *jobsView) showTab(name string) (tea.Cmd, bool) {
	i, ok := v.tabByName(name)
	if !ok {
		return nil, false
	}
	return v.setTab(i), true
}

func (v *jobsView) Actions() []key.Binding {
	k := v.ctx.Keys
	return []key.Binding{k.Requeue, k.Cancel, k.ExtendLease, k.Mark, k.ClearMarks}
}

func (v *jobsView) KeyMap() help.KeyMap {
	k := v.ctx.Keys
	return keyMap{
		short: []key.Binding{k.Enter, k.Left, k.Right, k.Requeue, k.Cancel, k.ExtendLease, k.CopyID, k.Mark, k.Filter, k.Help, k.Quit},
		full: [][]key.Binding{
			{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown},
			{k.Left, k.Right, k.Enter, k.Filter},
			{k.Requeue, k.Cancel, k.ExtendLease, k.CopyID},
			{k.Mark, k.ClearMarks},
		},
	}
}

// Job actions, shared by the list and the detail.

func canRequeue(j *registry.Job) bool {
	return j.State == registry.JobInProgress || (j.State == registry.JobFailed && j.Error == registry.ErrorLeaseExpired)
}

func describeJob(ctx *Context, j *registry.Job) string {
	s := string(j.Kind) + " " + j.Target.String() + " on " + ctx.Fleet.clusterName(j.ClusterID) + ", attempt " + fmt.Sprint(j.Attempt) + ", " + stateLabel(j.State)
	if j.State == registry.JobInProgress && !j.ClaimedAt.IsZero() {
		s += " (claimed " + ago(ctx.Now, j.ClaimedAt) + ")"
	}
	return s
}

func requeueJobs(ctx *Context, jobs []registry.Job) tea.Cmd {
	var ok, skip []registry.Job
	for _, j := range jobs {
		if canRequeue(&j) {
			ok = append(ok, j)
		} else {
			skip = append(skip, j)
		}
	}
	if len(ok) == 0 {
		if len(jobs) == 1 {
			return failed("cannot requeue " + jobs[0].ID + ": it is " + stateLabel(jobs[0].State) + "; only in-progress jobs and jobs that ran out of attempts can be requeued")
		}
		return failed("none of the marked jobs can be requeued: only in-progress jobs and jobs that ran out of attempts can be")
	}
	var title, body string
	if len(ok) == 1 {
		j := ok[0]
		title = "Requeue job " + j.ID + "?"
		body = describeJob(ctx, &j) + ". It goes back to the queue as attempt " + fmt.Sprint(j.Attempt+1) + "."
		if j.ClaimID != "" {
			body += " The old holder is fenced off: its claim " + j.ClaimID + " no longer matches, so any status, heartbeat or result it sends for this job is refused (409 stale_claim) and it is told to stop."
		}
	} else {
		title = fmt.Sprintf("Requeue %s?", plural(len(ok), "job", "jobs"))
		body = "Each goes back to the queue as a new attempt. Their old holders are fenced off: their claims no longer match, so anything they send for these jobs is refused (409 stale_claim)."
	}
	if len(skip) > 0 {
		body += fmt.Sprintf(" %s cannot be requeued (neither in progress nor out of attempts) and will be left alone.", plural(len(skip), "marked job", "marked jobs"))
	}
	b := ctx.Backend
	ids := make([]string, len(ok))
	for i, j := range ok {
		ids[i] = j.ID
	}
	label := "requeue " + ids[0]
	if len(ids) > 1 {
		label = fmt.Sprintf("requeue %d jobs", len(ids))
	}
	return ctx.showModal(newConfirm(ctx, title, body, "requeue", true, runAction(label, func(cx context.Context) outcome {
		return bulk(cx, ids, idsOf(skip), "requeued", func(cx context.Context, id string) error {
			_, err := b.RequeueJob(cx, id, "requeued from the console")
			return err
		})
	})))
}

func cancelJobs(ctx *Context, jobs []registry.Job) tea.Cmd {
	var ok []registry.Job
	for _, j := range jobs {
		if !j.State.Terminal() {
			ok = append(ok, j)
		}
	}
	if len(ok) == 0 {
		if len(jobs) == 1 {
			return failed("cannot cancel " + jobs[0].ID + ": it is already " + stateLabel(jobs[0].State))
		}
		return failed("none of the marked jobs can be canceled: they have all ended")
	}
	var title, body string
	if len(ok) == 1 {
		j := ok[0]
		title = "Cancel job " + j.ID + "?"
		body = describeJob(ctx, &j) + ". It ends as canceled."
	} else {
		title = fmt.Sprintf("Cancel %s?", plural(len(ok), "job", "jobs"))
		body = "They end as canceled."
	}
	if n := len(jobs) - len(ok); n > 0 {
		body += fmt.Sprintf(" %s already ended and will be left alone.", plural(n, "marked job", "marked jobs"))
	}
	body += " An agent holding one gets 409 job_canceled on its next status, heartbeat or result, which tells it to stop."
	b := ctx.Backend
	ids := make([]string, len(ok))
	for i, j := range ok {
		ids[i] = j.ID
	}
	label := "cancel " + ids[0]
	if len(ids) > 1 {
		label = fmt.Sprintf("cancel %d jobs", len(ids))
	}
	var ended []registry.Job
	for _, j := range jobs {
		if j.State.Terminal() {
			ended = append(ended, j)
		}
	}
	return ctx.showModal(newConfirm(ctx, title, body, "cancel the job", true, runAction(label, func(cx context.Context) outcome {
		return bulk(cx, ids, idsOf(ended), "canceled", func(cx context.Context, id string) error {
			_, err := b.CancelJob(cx, id, "canceled from the console")
			return err
		})
	})))
}

func idsOf(jobs []registry.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// bulk applies op to every id and reports how it went, naming the first
// failure exactly. The marks of the jobs it acted on (or skipped) are
// cleared; those of failures stay, to retry.
func bulk(cx context.Context, ids, skipped []string, done string, op func(context.Context, string) error) outcome {
	var failures []string
	var firstErr error
	for _, id := range ids {
		if err := op(cx, id); err != nil {
			failures = append(failures, id)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	clearMarks := func(m *Model) tea.Cmd {
		for _, id := range append(ids, skipped...) {
			if !slices.Contains(failures, id) {
				delete(m.jobs.marks, id)
			}
		}
		return nil
	}
	switch {
	case len(failures) == 0 && len(ids) == 1:
		return outcome{ok: done + " " + ids[0], then: clearMarks}
	case len(failures) == 0:
		return outcome{ok: fmt.Sprintf("%s %s", done, plural(len(ids), "job", "jobs")), then: clearMarks}
	case len(ids) == 1:
		return outcome{err: firstErr, then: clearMarks}
	}
	return outcome{err: fmt.Errorf("%s %d of %d jobs; %s failed, first: %s: %s", done, len(ids)-len(failures), len(ids),
		plural(len(failures), "job", "jobs"), failures[0], errText(firstErr)), then: clearMarks}
}

func extendLease(ctx *Context, j *registry.Job) tea.Cmd {
	if j.State != registry.JobInProgress || !j.Leased() {
		return failed("cannot extend the lease of " + j.ID + ": it has no lease (it is " + stateLabel(j.State) + ", claimed without a lease or not at all)")
	}
	b := ctx.Backend
	id := j.ID
	body := "The holder gets more time before the reaper reclaims the job. The lease now ends " + until(ctx.Now, j.LeaseExpiresAt) + "; the extension counts from then (or from now, if it already expired)."
	return ctx.showModal(newPrompt(ctx, "Extend the lease of "+id, body, "extend by", "5m", func(value string) (tea.Cmd, error) {
		d, err := durationInput(value)
		if err != nil {
			return nil, err
		}
		if d <= 0 || d > registry.MaxLeaseSeconds*time.Second {
			return nil, fmt.Errorf("the extension must be positive and at most 24h")
		}
		return runAction("extend the lease of "+id, func(cx context.Context) outcome {
			nj, err := b.ExtendLease(cx, id, d)
			if err != nil {
				return outcome{err: err}
			}
			return outcome{ok: "extended the lease of " + id + " to " + stamp(nj.LeaseExpiresAt)}
		}), nil
	}))
}
