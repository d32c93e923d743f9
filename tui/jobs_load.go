package tui

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// How the jobs view reads: windowed pages around the cursor, counts per tab, and live changes from the feed.

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

// load reads the window starting at start for the current query. When the
// selected job has moved out of that window (jobs submitted or finished
// above it since the last read), it looks for the job and reads the window
// around it instead, so that the selection stays on its job.
func (v *jobsView) load(start int) tea.Cmd {
	v.loading, v.want, v.dirty, v.last = true, start, false, time.Now()
	gen, tab, base, limit := v.gen, v.tab, v.base(), v.pageSize()
	total := v.total()
	t := v.table()
	pin, cursor, offset, height := v.pin, t.cursor, t.offset, t.height
	b := v.ctx.Backend
	now := v.ctx.Now
	var unreachable registry.Unreachable
	if tab == tabStuck {
		unreachable = v.ctx.Fleet.unreachable(now)
	}
	states, possible := registry.IntersectStates(tabStates(tab), base.States)
	if (tab != tabStuck && v.fl.nothing) || !possible {
		// The filter leaves no job in this tab: nothing to ask the store.
		return func() tea.Msg {
			return jobsPageMsg{gen: gen, req: start, start: start, jobs: []registry.Job{}, at: -1, readAt: now}
		}
	}
	read := func() tea.Msg {
		ctx := context.Background()
		if tab == tabStuck {
			// The stuck tab is several queries merged: there is no count to
			// place a job by, and it is short. The view keeps the job if it
			// is in the window, else the nearest row.
			jobs, err := listStuck(ctx, b, registry.StuckJobQueries(base, unreachable, now), start, limit)
			return jobsPageMsg{gen: gen, req: start, start: start, jobs: jobs, at: -1, err: err, readAt: now}
		}
		p := base
		p.States = states
		jobs, err := readJobsPage(ctx, b, p, total, start, limit, deep(start, total))
		msg := jobsPageMsg{gen: gen, req: start, start: start, jobs: jobs, at: -1, err: err, readAt: now}
		if err != nil || pin.ID == "" || slices.ContainsFunc(jobs, func(j registry.Job) bool { return j.ID == pin.ID }) {
			return msg
		}
		// Count from the nearer end and read the page from that same end,
		// so that the rows and the count agree even when the tab's total
		// (the counters) lags the jobs just submitted.
		reverse := deep(cursor, total)
		at, err := jobPosition(ctx, b, p, pin, total, reverse)
		if err != nil {
			return msg // the page read stands; the view keeps the row
		}
		off := offset
		if at < off {
			off = at
		}
		if at >= off+height {
			off = at - height + 1
		}
		from := max(0, off-height)
		jobs, err = readJobsPage(ctx, b, p, total, from, limit, reverse)
		if err != nil {
			return msg
		}
		return jobsPageMsg{gen: gen, req: start, start: from, jobs: jobs, at: at, offset: off, readAt: now}
	}
	if v.ctx.Fleet.loaded {
		return read
	}
	// Before the cluster list is in (see startWatch), the page brings the
	// clusters its rows name.
	return func() tea.Msg {
		msg := read()
		if p, ok := msg.(jobsPageMsg); ok && p.err == nil {
			p.clusters, p.resolved = clustersOf(context.Background(), b, p.jobs), true
			return p
		}
		return msg
	}
}

// clustersOf reads the clusters jobs name, each once and a few at a time
// (over the admin API each is a round trip); one that cannot be read is
// left out: its rows show its id until the list is in.
func clustersOf(ctx context.Context, b Backend, jobs []registry.Job) []registry.Cluster {
	var ids []string
	seen := map[string]bool{}
	for _, j := range jobs {
		if !seen[j.ClusterID] {
			seen[j.ClusterID] = true
			ids = append(ids, j.ClusterID)
		}
	}
	read := make([]*registry.Cluster, len(ids))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(8, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if c, err := b.GetCluster(ctx, ids[i]); err == nil {
					read[i] = c
				}
			}
		}()
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	var out []registry.Cluster
	for _, c := range read {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// deep reports whether row is in the far half of a tab of total rows, where
// reading from the other end is cheaper.
func deep(row, total int) bool { return total > 0 && row > total/2 }

// readJobsPage reads limit jobs of p's list from row start, of total rows;
// reverse reads them from the other end (deep in a large tab the index
// serves that as cheaply as the first page).
func readJobsPage(ctx context.Context, b Backend, p registry.JobListParams, total, start, limit int, reverse bool) ([]registry.Job, error) {
	p.Limit, p.Offset = limit, start
	if end := min(total, start+limit); !reverse || end <= start {
		reverse = false // past the total the counters know: from the top
	} else {
		p.OldestFirst, p.Offset, p.Limit = !p.OldestFirst, total-end, end-start
	}
	jobs, err := b.ListJobs(ctx, p)
	if reverse {
		slices.Reverse(jobs)
	}
	return jobs, err
}

// jobPosition is the row of the job at pin in p's list (in p's order): the
// jobs listed before it, counted from the end the pages are read from (the
// far one when reverse). A job that has left the list gets the row of its
// nearest neighbour.
func jobPosition(ctx context.Context, b Backend, p registry.JobListParams, pin registry.JobCursor, total int, reverse bool) (int, error) {
	p.After = &pin
	if reverse {
		n, err := b.CountJobs(ctx, p) // the ones listed after it
		return max(0, total-1-n), err
	}
	p.OldestFirst = !p.OldestFirst // the ones listed before it
	return b.CountJobs(ctx, p)
}

// pinCursor makes the job under the cursor the selection; a row not loaded
// yet pins nothing until its page arrives.
func (v *jobsView) pinCursor() {
	v.pin = registry.JobCursor{}
	if j := v.selected(); j != nil {
		v.pin = registry.JobCursor{CreatedAt: j.CreatedAt, ID: j.ID}
	}
}

// restorePin puts the cursor back on the pinned job after a page arrived:
// where the load found it, or where it is in the page, or, when it left the
// list, on the nearest row; that row's job is the selection from then on.
func (v *jobsView) restorePin(msg jobsPageMsg) {
	t := v.table()
	n := v.rowCount()
	if msg.at >= 0 {
		t.offset = msg.offset
		t.setCursor(msg.at, n)
	}
	if v.pin.ID != "" {
		if i := slices.IndexFunc(v.rows, func(j registry.Job) bool { return j.ID == v.pin.ID }); i >= 0 {
			t.setCursor(v.start+i, n)
		}
	}
	t.clampTo(n)
	if v.selected() != nil {
		v.pinCursor()
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
	// A filter that leaves no state (failed !failed) counts 0 in every tab
	// but the stuck one, which reads it with forStuck.
	gen, base, all := v.gen, v.baseFor(tabAll), v.fl.needsQueryCounts()
	stuckBase := v.baseFor(tabStuck)
	b := v.ctx.Backend
	now := v.ctx.Now
	unreachable := v.ctx.Fleet.unreachable(now)
	return func() tea.Msg {
		ctx := context.Background()
		var out [numTabs]int
		for i := range out {
			out[i] = -1
		}
		n, err := countStuck(ctx, b, registry.StuckJobQueries(stuckBase, unreachable, now))
		if err != nil {
			return jobsCountsMsg{gen: gen, err: err}
		}
		out[tabStuck] = n
		if all {
			for _, tab := range []int{tabQueued, tabInProgress, tabFailed, tabAll} {
				p := base
				states, possible := registry.IntersectStates(tabStates(tab), base.States)
				if !possible {
					out[tab] = 0
					continue
				}
				p.States = states
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
func (v *jobsView) requery() tea.Cmd { return v.requeryAt(registry.JobCursor{}, 0, 0) }

// requeryAt starts over with the selection on the job at pin, on the row
// cursor of a screen starting at offset (where a list was left: esc back
// from a drill).
func (v *jobsView) requeryAt(pin registry.JobCursor, cursor, offset int) tea.Cmd {
	v.gen++
	v.loaded, v.rows, v.start, v.err = false, nil, 0, nil
	v.loading, v.counting = false, false
	v.stuck = -1
	for i := range v.queryCounts {
		v.queryCounts[i] = -1
	}
	t := v.table()
	t.cursor, t.offset = max(0, cursor), max(0, offset)
	v.pin = pin
	// The tab counts are read once the page has landed: read beside it,
	// they took the CPU its first page needed (a word over a million jobs
	// is counted in every tab and the stuck sets).
	v.countAfterPage = true
	return v.load(max(0, t.offset-t.height))
}

func (v *jobsView) setTab(tab int) tea.Cmd {
	if tab == v.tab {
		return nil
	}
	v.all = false // marked the other tab
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

// applyFeed takes the feed's changes: the rows on screen are updated in
// place and the window re-read soon; paused (f), the rows hold still and
// the changes are only counted.
func (v *jobsView) applyFeed(b *feedBatch) tea.Cmd {
	relevant, changed := false, 0
	for _, j := range b.Jobs {
		if m, ok := v.marks[j.ID]; ok {
			m = *j
			v.marks[j.ID] = m
		}
		if i := slices.IndexFunc(v.rows, func(x registry.Job) bool { return x.ID == j.ID }); i >= 0 {
			if v.follow {
				v.rows[i] = *j
			}
			relevant = true
			changed++
			continue
		}
		if !v.matches(j) {
			continue
		}
		if states := tabStates(v.tab); states == nil || slices.Contains(states, j.State) {
			relevant = true
			changed++
		}
	}
	for _, id := range b.DeletedJobs {
		delete(v.marks, id)
		if v.tab == tabAll || v.tab == tabFailed || slices.ContainsFunc(v.rows, func(x registry.Job) bool { return x.ID == id }) {
			relevant = true
			changed++
		}
	}
	if !v.follow {
		v.waiting += changed
		relevant = false // read on resume
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

// toggleFollow pauses the feed's changes, or resumes and reads the window
// again (the selection stays on its job).
func (v *jobsView) toggleFollow() tea.Cmd {
	v.follow = !v.follow
	if !v.follow {
		v.waiting = 0
		return info("paused: the jobs hold still, changes are counted (f resumes)")
	}
	n := v.waiting
	v.waiting = 0
	if n == 0 {
		return info("following: the jobs follow the queue again")
	}
	msg := info(fmt.Sprintf("following: %s while paused, read from the store", plural(n, "change", "changes")))
	if v.loading {
		v.dirty = true // the reply re-reads
		return msg
	}
	return tea.Batch(msg, v.load(v.start), v.countLater())
}

// leaseLapsed reports whether a row's lease ended since the rows were read:
// a heartbeat may have renewed it unseen, so the page is read again before
// the row says "expired" for long (registry.Job.LeaseLapsedSince).
func (v *jobsView) leaseLapsed(now time.Time) bool {
	return v.loaded && slices.ContainsFunc(v.rows, func(j registry.Job) bool { return j.LeaseLapsedSince(v.readAt, now) })
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
