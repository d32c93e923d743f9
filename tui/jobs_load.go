package tui

import (
	"context"
	"slices"
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
