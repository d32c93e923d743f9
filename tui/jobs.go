package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

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

type jobsView struct {
	ctx    *Context
	tables [3]*table // [0] the state tabs, [1] the stuck tab, [2] the failed tab (their own columns)
	tab    int
	filter string
	fl     jobFilter
	// filterDue: the filter changed and waits for typing to pause before
	// the store reads it (ApplyFilter reads it at once).
	filterDue bool
	// countAfterPage: a requery's counts wait for its first page.
	countAfterPage bool

	gen     int // bumped whenever the query (tab or filter) changes
	start   int // absolute index of rows[0]
	rows    []registry.Job
	readAt  time.Time // when rows were read (see registry.Job.LeaseLapsedSince)
	loaded  bool      // rows belong to gen
	loading bool
	want    int // the start of the window being loaded
	dirty   bool
	last    time.Time // when the last load was issued
	err     error

	// rowsResolved: a page brought its rows' clusters before the fleet's
	// list was in (the first frame's probe waits for them or the list).
	rowsResolved bool
	// pin is the selected job (id and creation time, its place in the
	// list's order): reloads put the cursor back on it, wherever it moved.
	// Empty while the cursor is on a row not loaded yet.
	pin registry.JobCursor

	queryCounts [numTabs]int // for filters the counters cannot answer; -1 unknown
	stuck       int          // -1 unknown
	counting    bool
	countDirty  bool
	lastCount   time.Time

	// liveFollow: f pauses the feed's changes (the window holds still,
	// what changed is counted) and resumes with a read of the window.
	liveFollow

	marks map[string]registry.Job
	// all marks the whole tab as filtered (A): the actions act on every job
	// of it, in the background (job_bulk.go).
	all   bool
	width int
	hgt   int
	// oldest lists the oldest jobs first (S): the store orders jobs by when
	// they were submitted, and only by that, over any number of them.
	oldest bool
}

type jobsPageMsg struct {
	gen   int
	req   int // the start asked for (v.want)
	start int // the start read: another when the pinned job was looked for
	jobs  []registry.Job
	// readAt is the console's clock when the read began: the rows are as of
	// then or later.
	readAt time.Time
	// at is the pinned job's row when the load had to look for it (it had
	// moved out of the window asked for), else -1; offset is then the
	// table's first line that keeps it on screen.
	at, offset int
	err        error
	// clusters are the clusters the rows name, read with the page while
	// the fleet's list is not in yet (resolved: they were looked for).
	clusters []registry.Cluster
	resolved bool
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
	v := &jobsView{ctx: ctx, marks: map[string]registry.Job{}, stuck: -1, liveFollow: liveFollow{follow: true}}
	v.tables[0] = ctx.table([]column{
		{Title: "ID", Width: 28, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Fit: true, Domain: fleetNames(ctx)},
		{Title: "KIND", Width: 7, Drop: 5},
		{Title: "TARGET", Width: 24, Min: 10, Flex: 2, Fit: true, Path: true},
		{Title: "STATE", Width: 13, Min: 8, Fit: true},
		{Title: "ATT", Width: 4, Right: true, Drop: 4},
		{Title: "LEASE", Width: 11, Fit: true},
		{Title: "ACTIVITY", Width: 8, Right: true, Drop: 3},
		{Title: "AGE", Width: 4, Right: true, Drop: 2},
	})
	v.tables[1] = ctx.table([]column{
		{Title: "ID", Width: 28, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Fit: true, Domain: fleetNames(ctx)},
		{Title: "KIND", Width: 7, Drop: 5},
		{Title: "TARGET", Width: 24, Min: 10, Flex: 2, Drop: 6, Fit: true, Path: true},
		{Title: "STATE", Width: 13, Min: 8, Fit: true},
		{Title: "ATT", Width: 4, Right: true, Drop: 4},
		{Title: "LEASE", Width: 11, Drop: 3, Fit: true},
		{Title: "ACTIVITY", Width: 8, Right: true, Drop: 2},
		// WHY is one of a few short labels: whole, it is read at a glance.
		{Title: "WHY", Width: 24, Min: len("queued, cluster silent"), Flex: 2},
		{Title: "AGE", Width: 4, Right: true, Drop: 2},
	})
	// A failed job holds no lease and shows no activity, its state is the
	// tab's: the room goes to why it failed.
	v.tables[2] = ctx.table([]column{
		{Title: "ID", Width: 28, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Fit: true, Domain: fleetNames(ctx)},
		{Title: "KIND", Width: 7, Drop: 4},
		{Title: "TARGET", Width: 24, Min: 10, Flex: 2, Fit: true, Path: true},
		{Title: "ATT", Width: 4, Right: true, Drop: 3},
		{Title: "ERROR", Width: 30, Min: 16, Flex: 3},
		{Title: "AGE", Width: 4, Right: true, Drop: 2},
	})
	for _, t := range v.tables {
		t.marks, t.tabKeys = true, true
	}
	for i := range v.queryCounts {
		v.queryCounts[i] = -1
	}
	v.showSort()
	return v
}

// jobsAgeCol and failedAgeCol are the AGE column of the state tabs and of
// the failed tab, where the order's arrow shows: the newest first is the
// youngest AGE first (▲).
const (
	jobsStateCol = 4
	jobsAgeCol   = 8
	stuckAgeCol  = 9
	failedAgeCol = 6
)

// showSort puts the order's arrow in the header.
func (v *jobsView) showSort() {
	v.tables[0].setSort(jobsAgeCol, v.oldest)
	v.tables[1].setSort(stuckAgeCol, v.oldest)
	v.tables[2].setSort(failedAgeCol, v.oldest)
}

func (v *jobsView) table() *table {
	switch v.tab {
	case tabStuck:
		return v.tables[1]
	case tabFailed:
		return v.tables[2]
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
func (v *jobsView) base() registry.JobListParams { return v.baseFor(v.tab) }

// baseFor is base for a tab: the stuck tab reads the filter with forStuck.
func (v *jobsView) baseFor(tab int) registry.JobListParams {
	fl := v.fl
	if tab == tabStuck {
		fl = fl.forStuck()
	}
	return registry.JobListParams{ClusterIDs: fl.clusters, Kind: fl.kind, Search: fl.search, Error: fl.errorCode,
		States: fl.states, OldestFirst: v.oldest}
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
// what is loaded. The counters may lag a page just read (jobs submitted
// since): the rows held are there all the same.
func (v *jobsView) rowCount() int {
	return max(v.total(), v.start+len(v.rows))
}

func (v *jobsView) job(i int) *registry.Job {
	if i >= v.start && i < v.start+len(v.rows) {
		return &v.rows[i-v.start]
	}
	return nil
}

func (v *jobsView) selected() *registry.Job { return v.job(v.table().cursor) }

func (v *jobsView) marked(i int) bool {
	if v.all {
		return true
	}
	if j := v.job(i); j != nil {
		_, ok := v.marks[j.ID]
		return ok
	}
	return false
}

func (v *jobsView) Update(msg tea.Msg) tea.Cmd {
	t := v.table()
	switch msg := msg.(type) {
	case jobsPageMsg:
		if msg.gen != v.gen || msg.req != v.want {
			return nil
		}
		v.loading, v.err = false, msg.err
		if msg.err != nil {
			return failed("could not read jobs: " + errText(msg.err))
		}
		v.loaded, v.start, v.rows, v.readAt = true, msg.start, msg.jobs, msg.readAt
		v.ctx.Fleet.learn(msg.clusters)
		v.rowsResolved = v.rowsResolved || msg.resolved
		v.restorePin(msg)
		var count tea.Cmd
		if v.countAfterPage {
			v.countAfterPage = false
			count = v.countCmd()
		}
		if v.dirty {
			v.dirty = false
			return tea.Batch(count, v.markDirty())
		}
		return tea.Batch(count, v.ensureWindow())
	case jobsCountsMsg:
		if msg.gen != v.gen {
			return nil
		}
		v.counting = false
		if msg.err != nil {
			return bgFailed("could not count jobs: " + errText(msg.err))
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
			v.filterDue = false
			return v.requery()
		}
	case tickMsg:
		var cmds []tea.Cmd
		if v.leaseLapsed(msg.now) {
			cmds = append(cmds, v.markDirty())
		}
		if time.Since(v.lastCount) >= jobsCountEvery && !v.counting {
			cmds = append(cmds, v.countCmd())
		}
		return tea.Batch(cmds...)
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
		return v.move(msg)
	case tea.MouseWheelMsg:
		return v.move(msg)
	case tea.KeyPressMsg:
		return v.key(msg)
	}
	return nil
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
		title += st.Render(themes.Marked, fmt.Sprintf("  ● %s marked (R/C/F/D act on them, u clears)", plural(n, "job", "jobs")))
	}
	if v.all {
		n := "all"
		if t := v.total(); t >= 0 {
			n = "all " + thousands(int64(t))
		}
		title += st.Render(themes.Marked, "  ● "+n+" marked (R/C/F/D act on them, u clears)")
	}
	if v.oldest {
		title += st.Render(themes.Muted, "  oldest first")
	}
	title += v.followTitle(st, "", "changed")
	if v.loading && v.loaded {
		title += st.Render(themes.Muted, "  updating…")
	}
	if total := v.total(); total > 0 {
		title += st.Render(themes.Muted, fmt.Sprintf("  %s of %s", thousands(int64(v.table().cursor+1)), thousands(int64(max(total, v.rowCount())))))
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
		which := jobTabLabels[v.tab] + " " // "no failed job matches", "no job matches" on the all tab
		if v.tab == tabAll {
			which = ""
		}
		empty = "no " + which + "job matches /" + v.filter + " (esc clears the filter)"
	case v.loaded && v.tab == tabStuck:
		empty = "no stuck jobs: nothing waits on an expired lease, a silent agent or a silent cluster"
	case v.loaded && v.tab == tabAll:
		empty = "no jobs yet: producers submit them with tether job submit (or the admin API)"
	case v.loaded:
		empty = "no " + jobTabLabels[v.tab] + " jobs"
	}
	// A tab of one state names it: the STATE column, when it says only
	// that, gives up its room first.
	implied := ""
	if s := tabStates(v.tab); len(s) == 1 {
		implied = stateLabel(s[0])
	}
	v.tables[0].cols[jobsStateCol].Implied = implied
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
	v.filterDue = true
	gen := v.gen
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return jobsFilterMsg{gen: gen, filter: s} })
}

func (v *jobsView) FilterErr() string { return v.fl.err }

// ApplyFilter reads the filter typed so far at once (enter): the pause
// SetFilter waits for lets a person type a word without a read of the store
// per key, and is no use once they are done.
func (v *jobsView) ApplyFilter() tea.Cmd {
	if !v.filterDue {
		return nil
	}
	v.filterDue = false
	return v.requery() // the pending pause's message no longer matches
}

func (v *jobsView) FilterHelp() string {
	return "cluster:NAME kind:K error:CODE, a state (failed, !failed); words match id, key, namespace, name"
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
