package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// The rollouts views (`:rollouts`): every rollout with its progress, and one
// rollout's targets in order, live, with the keys on-call steers it with.

var (
	keyRolloutPause  = key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause"))
	keyRolloutResume = key.NewBinding(key.WithKeys("P"), key.WithHelp("P", "resume"))
	keyRolloutAbort  = key.NewBinding(key.WithKeys("X"), key.WithHelp("X", "abort"))
	keyRolloutRetry  = key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "retry failed"))
)

// rolloutsMsg carries a fresh list of rollouts.
type rolloutsMsg struct {
	list []registry.Rollout
	err  error
}

// rolloutMsg carries one rollout with its targets.
type rolloutMsg struct {
	id  string
	ro  *registry.Rollout
	err error
}

// rolloutsView lists rollouts, newest first.
type rolloutsView struct {
	ctx     *Context
	table   *table
	list    []registry.Rollout
	loaded  bool
	loading bool
	stale   bool // a change arrived while loading: load again after
	err     error
	width   int
	// sortCol and desc order the list (s, <, S): every column, the newest
	// first (AGE ▲) at first. The list is short (500 at most): sorted here.
	sortCol int
	desc    bool
}

// rolloutSortBy compares two rollouts by each column, smallest first.
var rolloutSortBy = []func(a, b *registry.Rollout) int{
	func(a, b *registry.Rollout) int { return strings.Compare(a.Name, b.Name) },
	func(a, b *registry.Rollout) int { return strings.Compare(string(a.State), string(b.State)) },
	func(a, b *registry.Rollout) int {
		return cmp.Compare(float64(a.Done())/float64(max(1, a.Total())), float64(b.Done())/float64(max(1, b.Total())))
	},
	func(a, b *registry.Rollout) int { return cmp.Compare(a.Done(), b.Done()) },
	func(a, b *registry.Rollout) int { return cmp.Compare(a.Failures(), b.Failures()) },
	func(a, b *registry.Rollout) int {
		return cmp.Compare(a.Counts[registry.TargetRunning], b.Counts[registry.TargetRunning])
	},
	func(a, b *registry.Rollout) int { return strings.Compare(a.Selector, b.Selector) },
	func(a, b *registry.Rollout) int { return b.CreatedAt.Compare(a.CreatedAt) }, // AGE: the youngest first
}

var rolloutColumns = []string{"name", "state", "progress", "done", "failed", "running", "selector", "age"}

// sort orders the list by the chosen column, keeping the selection on its
// rollout.
func (v *rolloutsView) sort() {
	id := func(i int) string { return v.list[i].ID }
	sel := anchorAt(v.table, len(v.list), id)
	by := rolloutSortBy[v.sortCol]
	slices.SortStableFunc(v.list, func(a, b registry.Rollout) int {
		r := by(&a, &b)
		if v.desc {
			r = -r
		}
		return r
	})
	v.table.setSort(v.sortCol, v.desc)
	sel.restore(v.table, len(v.list), id)
}

// sortKey handles s, >, < and S.
func (v *rolloutsView) sortKey(msg tea.KeyPressMsg) tea.Cmd {
	k := v.ctx.Keys
	switch {
	case key.Matches(msg, k.Sort):
		v.sortCol, v.desc = (v.sortCol+1)%len(rolloutSortBy), false
	case key.Matches(msg, k.SortPrev):
		v.sortCol, v.desc = (v.sortCol+len(rolloutSortBy)-1)%len(rolloutSortBy), false
	default:
		v.desc = !v.desc
	}
	v.sort()
	return info("rollouts sorted by " + rolloutColumns[v.sortCol] + " (S reverses)")
}

func newRolloutsView(ctx *Context) *rolloutsView {
	v := &rolloutsView{ctx: ctx, sortCol: 7}
	v.table = ctx.table([]column{
		{Title: "NAME", Width: 20, Min: 10, Flex: 2},
		{Title: "STATE", Width: 10},
		{Title: "PROGRESS", Width: 22, Min: 12, Drop: 3},
		{Title: "DONE", Width: 9, Right: true},
		{Title: "FAILED", Width: 6, Right: true},
		{Title: "RUNNING", Width: 7, Right: true, Drop: 2},
		{Title: "SELECTOR", Width: 24, Min: 10, Flex: 1, Drop: 1},
		{Title: "AGE", Width: 8, Right: true, Drop: 4},
	})
	return v
}

func (v *rolloutsView) Title() string { return "Rollouts" }

func (v *rolloutsView) SetSize(w, h int) {
	v.width = w
	v.table.setSize(w, h-1)
}

func (v *rolloutsView) load() tea.Cmd {
	if v.loading {
		v.stale = true
		return nil
	}
	v.loading = true
	b := v.ctx.Backend
	return func() tea.Msg {
		list, err := b.ListRollouts(context.Background(), consoleRollouts)
		return rolloutsMsg{list: list, err: err}
	}
}

func (v *rolloutsView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case rolloutsMsg:
		v.loading, v.loaded, v.err = false, true, msg.err
		if msg.err == nil {
			id := func(i int) string { return v.list[i].ID }
			sel := anchorAt(v.table, len(v.list), id)
			v.list = msg.list
			sel.restore(v.table, len(v.list), id)
			v.sort()
		}
		if v.stale {
			v.stale = false
			return v.load()
		}
	case feedMsg:
		if len(msg.batch.Rollouts) > 0 || msg.batch.Reset {
			return v.load()
		}
	case themeChangedMsg:
		v.table.setStyles(v.ctx.Styles)
	case tea.KeyPressMsg:
		if v.table.navigate(msg, v.ctx.Keys, len(v.list)) {
			return nil
		}
		if isSortKey(msg, v.ctx.Keys) {
			return v.sortKey(msg)
		}
		if col, ok := columnSortKey(v.table, msg); ok {
			if col == v.sortCol {
				v.desc = !v.desc
			} else {
				v.sortCol, v.desc = col, false
			}
			v.sort()
			return info("rollouts sorted by " + rolloutColumns[v.sortCol] + " (again reverses)")
		}
		if v.table.cursor >= len(v.list) {
			return nil
		}
		ro := &v.list[v.table.cursor]
		if key.Matches(msg, v.ctx.Keys.Enter) {
			return v.ctx.open(newRolloutDetail(v.ctx, ro.ID, ro.Name))
		}
		return rolloutKeys(v.ctx, msg, ro)
	}
	return nil
}

// rolloutKeys runs the steering keys on a rollout, confirming the ones that
// stop or restart work.
func rolloutKeys(ctx *Context, msg tea.KeyPressMsg, ro *registry.Rollout) tea.Cmd {
	act := func(action, done string) tea.Cmd {
		id, name, b := ro.ID, ro.Name, ctx.Backend
		return runAction(action+" rollout "+name, func(c context.Context) outcome {
			after, err := admin.RolloutAction(c, b, id, action, "from the console")
			if err != nil {
				return outcome{err: err}
			}
			return outcome{ok: fmt.Sprintf("rollout %s %s: %s", name, done, after.Summary())}
		})
	}
	switch {
	case key.Matches(msg, keyRolloutPause):
		return act("pause", "paused")
	case key.Matches(msg, keyRolloutResume):
		body := "No new wave starts until then; running jobs finish. Resume starts the next wave."
		if ro.State == registry.RolloutHalted {
			body = fmt.Sprintf("It halted after %d failures. Resuming accepts them: the failure budget (%d) counts only failures from now on.", ro.Failures(), ro.MaxFailures)
		}
		return ctx.showModal(newConfirm(ctx, "Resume rollout "+ro.Name+"?", body, "resume", false, act("resume", "resumed")))
	case key.Matches(msg, keyRolloutAbort):
		body := fmt.Sprintf("Its queued jobs are canceled and the %d targets not reached are skipped; jobs already in progress finish. An aborted rollout cannot be resumed.", ro.Counts[registry.TargetPending])
		return ctx.showModal(newConfirm(ctx, "Abort rollout "+ro.Name+"?", body, "abort", true, act("abort", "aborted")))
	case key.Matches(msg, keyRolloutRetry):
		n := ro.Counts[registry.TargetFailed] + ro.Counts[registry.TargetRefused]
		body := fmt.Sprintf("The %d failed and refused targets go back to pending and get a new job when their wave comes.", n)
		return ctx.showModal(newConfirm(ctx, "Retry the failed targets of "+ro.Name+"?", body, "retry", false, act("retry-failed", "retrying")))
	}
	return nil
}

func rolloutStateKind(s registry.RolloutState) themes.Kind {
	switch s {
	case registry.RolloutRunning:
		return themes.Good
	case registry.RolloutPaused:
		return themes.Warning
	case registry.RolloutHalted:
		return themes.Danger
	}
	return themes.Muted
}

// progressBar renders the share of targets done: "██████░░░░".
func progressBar(ro *registry.Rollout, width int) string {
	if width < 1 {
		return ""
	}
	filled := 0
	if total := ro.Total(); total > 0 {
		filled = ro.Done() * width / total
	}
	return strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
}

func (v *rolloutsView) rowCount() int   { return len(v.list) }
func (v *rolloutsView) marked(int) bool { return false }
func (v *rolloutsView) rowKey(i int) string {
	ro := &v.list[i]
	return fmt.Sprint(ro.ID, ro.Version, ago(v.ctx.Now, ro.CreatedAt))
}

func (v *rolloutsView) rowCells(i int) []cell {
	ro := &v.list[i]
	failed := themes.Plain
	if ro.Failures() > 0 {
		failed = themes.Danger
	}
	return []cell{
		txt(ro.Name, themes.Plain),
		txt(string(ro.State), rolloutStateKind(ro.State)),
		txt(progressBar(ro, 20), rolloutStateKind(ro.State)),
		txt(fmt.Sprintf("%d/%d", ro.Done(), ro.Total()), themes.Plain),
		txt(fmt.Sprint(ro.Failures()), failed),
		txt(fmt.Sprint(ro.Counts[registry.TargetRunning]), themes.Plain),
		txt(ro.Selector, themes.Muted),
		txt(age(v.ctx.Now, ro.CreatedAt), themes.Muted),
	}
}

func (v *rolloutsView) View() string {
	st := v.ctx.Styles
	mark := st.Render(themes.Good, "  ● live")
	if m := liveMark(v.ctx, "live"); m == offlineMark {
		mark = st.Render(themes.Danger, "  "+m)
	}
	title := st.Title.Render("Rollouts") + mark + st.Render(themes.Muted, fmt.Sprintf("  %d", len(v.list)))
	empty := "loading rollouts…"
	switch {
	case v.err != nil:
		empty = "could not read rollouts: " + errText(v.err)
	case v.loaded:
		empty = "no rollouts yet: tether rollout create --selector SEL --kind KIND -f FILE starts one"
	}
	return pad(title, v.width) + "\n" + v.table.view(v, empty)
}

func (v *rolloutsView) Actions() []key.Binding {
	return []key.Binding{keyRolloutPause, keyRolloutResume, keyRolloutAbort, keyRolloutRetry}
}

func (v *rolloutsView) KeyMap() help.KeyMap {
	k := v.ctx.Keys
	acts := []key.Binding{k.Enter}
	if v.ctx.allows(registry.PermOperate, true) { // read-only or a viewer: neither help offers them
		acts = append(acts, v.Actions()...)
	}
	return keyMap{
		short: append(acts[:len(acts):len(acts)], k.Back, k.Help),
		full: [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown}, acts,
			{k.Sort, k.SortPrev, k.SortReverse}},
	}
}

// rolloutDetail is one rollout: its state and limits, and every target in
// order with its state, job, attempts, duration and reason, live.
type rolloutDetail struct {
	ctx     *Context
	id      string
	name    string
	ro      *registry.Rollout
	table   *table
	loading bool
	stale   bool
	err     error
	width   int
}

func newRolloutDetail(ctx *Context, id, name string) *rolloutDetail {
	d := &rolloutDetail{ctx: ctx, id: id, name: name}
	d.table = ctx.table([]column{
		{Title: "#", Width: 4, Right: true},
		{Title: "CLUSTER", Width: 18, Min: 10, Flex: 1},
		{Title: "STATE", Width: 10},
		{Title: "JOB", Width: 29, Min: 12, Drop: 2},
		{Title: "JOB STATE", Width: 11, Drop: 3},
		{Title: "ATT", Width: 3, Right: true, Drop: 4},
		{Title: "TOOK", Width: 6, Right: true, Drop: 1},
		{Title: "REASON", Width: 30, Min: 12, Flex: 3},
	})
	return d
}

func (d *rolloutDetail) Title() string { return d.name }

func (d *rolloutDetail) SetSize(w, h int) {
	d.width = w
	d.table.setSize(w, h-4)
}

func (d *rolloutDetail) load() tea.Cmd {
	if d.loading {
		d.stale = true
		return nil
	}
	d.loading = true
	id, b := d.id, d.ctx.Backend
	return func() tea.Msg {
		ro, err := b.GetRollout(context.Background(), id)
		return rolloutMsg{id: id, ro: ro, err: err}
	}
}

// targetKey identifies a target: a rollout reaches each cluster once.
func (d *rolloutDetail) targetKey(i int) string { return d.ro.Targets[i].ClusterID }

func (d *rolloutDetail) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case rolloutMsg:
		if msg.id != d.id {
			return nil
		}
		d.loading, d.err = false, msg.err
		if msg.err == nil {
			var sel anchor[string]
			if d.ro != nil {
				sel = anchorAt(d.table, len(d.ro.Targets), d.targetKey)
			}
			d.ro = msg.ro
			d.id, d.name = msg.ro.ID, msg.ro.Name // opened by name: follow its id
			sel.restore(d.table, len(d.ro.Targets), d.targetKey)
		}
		if d.stale {
			d.stale = false
			return d.load()
		}
	case feedMsg:
		if d.touches(&msg.batch) {
			return d.load()
		}
	case themeChangedMsg:
		d.table.setStyles(d.ctx.Styles)
	case tea.KeyPressMsg:
		if d.ro == nil {
			return nil
		}
		if d.table.navigate(msg, d.ctx.Keys, len(d.ro.Targets)) {
			return nil
		}
		if key.Matches(msg, d.ctx.Keys.Enter) && d.table.cursor < len(d.ro.Targets) {
			if t := d.ro.Targets[d.table.cursor]; t.JobID != "" {
				return d.ctx.open(newJobDetail(d.ctx, t.JobID, nil))
			}
			return nil
		}
		return rolloutKeys(d.ctx, msg, d.ro)
	}
	return nil
}

// touches reports whether a frame's changes concern this rollout: the
// rollout itself, or the job of one of its targets.
func (d *rolloutDetail) touches(b *feedBatch) bool {
	if b.Reset {
		return true
	}
	for _, r := range b.Rollouts {
		if r.ID == d.id {
			return true
		}
	}
	if d.ro == nil || len(b.Jobs) == 0 {
		return false
	}
	for _, j := range b.Jobs {
		for i := range d.ro.Targets {
			if d.ro.Targets[i].JobID == j.ID {
				return true
			}
		}
	}
	return false
}

func (d *rolloutDetail) rowCount() int {
	if d.ro == nil {
		return 0
	}
	return len(d.ro.Targets)
}
func (d *rolloutDetail) marked(int) bool { return false }
func (d *rolloutDetail) rowKey(i int) string {
	t := &d.ro.Targets[i]
	return fmt.Sprint(t.Position, t.State, t.JobID, t.JobState, t.Attempts, t.Reason, d.took(t))
}

func (d *rolloutDetail) took(t *registry.RolloutTarget) string {
	switch {
	case t.StartedAt.IsZero():
		return ""
	case t.FinishedAt.IsZero():
		return humanDuration(d.ctx.Now.Sub(t.StartedAt))
	}
	return humanDuration(t.FinishedAt.Sub(t.StartedAt))
}

func targetStateKind(s registry.TargetState) themes.Kind {
	switch s {
	case registry.TargetSucceeded:
		return themes.Good
	case registry.TargetRunning:
		return themes.Accent
	case registry.TargetFailed, registry.TargetRefused:
		return themes.Danger
	}
	return themes.Muted
}

func (d *rolloutDetail) rowCells(i int) []cell {
	t := &d.ro.Targets[i]
	return []cell{
		txt(fmt.Sprint(t.Position+1), themes.Muted),
		txt(t.ClusterName, themes.Plain),
		txt(string(t.State), targetStateKind(t.State)),
		txt(t.JobID, themes.Muted),
		txt(stateLabel(t.JobState), jobStateKind(t.JobState)), // in progress, as every other view says it
		txt(fmt.Sprint(t.Attempts), themes.Muted),
		txt(d.took(t), themes.Muted),
		txt(t.Reason, themes.Plain), // a job's error is an agent's text: txt makes it safe

	}
}

func (d *rolloutDetail) View() string {
	st := d.ctx.Styles
	if d.ro == nil {
		msg := "loading rollout " + d.name + "…"
		if d.err != nil {
			msg = "could not read rollout " + d.name + ": " + errText(d.err)
		}
		return pad(st.Title.Render("Rollout "+d.name), d.width) + "\n" + st.Render(themes.Muted, msg)
	}
	ro := d.ro
	head := st.Title.Render("Rollout "+ro.Name) + "  " + st.Render(rolloutStateKind(ro.State), string(ro.State)) +
		"  " + st.Render(rolloutStateKind(ro.State), progressBar(ro, 20)) + st.Render(themes.Plain, "  "+ro.Summary())
	limits := fmt.Sprintf("selector %s · %s · max parallel %d · max failures %d", ro.Selector, ro.Kind, ro.MaxParallel, ro.MaxFailures)
	if ro.FailureBase > 0 {
		limits += fmt.Sprintf(" (after %d accepted)", ro.FailureBase)
	}
	if ro.PauseBetween > 0 {
		limits += " · pause " + humanDuration(ro.PauseBetween)
	}
	next := ""
	switch {
	case ro.State == registry.RolloutRunning && ro.NextWaveAt.After(d.ctx.Now):
		next = "next wave in " + humanDuration(ro.NextWaveAt.Sub(d.ctx.Now))
	case ro.State == registry.RolloutHalted:
		next = "halted: P resumes (accepting the failures), F retries the failed targets, X aborts"
	case ro.State == registry.RolloutPaused:
		next = "paused: P resumes"
	}
	lines := pad(head, d.width) + "\n" + pad(st.Render(themes.Muted, limits), d.width) + "\n" + pad(st.Render(themes.Warning, next), d.width) + "\n"
	return lines + d.table.view(d, "this rollout has no targets")
}

func (d *rolloutDetail) Actions() []key.Binding {
	return []key.Binding{keyRolloutPause, keyRolloutResume, keyRolloutAbort, keyRolloutRetry}
}

func (d *rolloutDetail) KeyMap() help.KeyMap {
	k := d.ctx.Keys
	acts := []key.Binding{k.Enter}
	if d.ctx.allows(registry.PermOperate, true) { // read-only or a viewer: neither help offers them
		acts = append(acts, d.Actions()...)
	}
	return keyMap{
		short: append(acts[:len(acts):len(acts)], k.Back, k.Help),
		full:  [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown}, acts},
	}
}
