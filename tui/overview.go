package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// overview is the first screen: clusters by state, jobs by state with bars,
// stuck jobs by reason, silent clusters, and throughput and queue-depth
// sparklines over the last minutes.
type overview struct {
	ctx        *Context
	pager      pager
	stuck      stuckCounts
	stuckKnown bool
	counting   bool
	lastCount  time.Time
	err        error
	throughput *series
	depth      *series
	depthSince time.Time // the first queue-depth sample
	backfilled bool
	partial    bool // the backfill hit its limit: older buckets are incomplete
	recount    bool // the fleet changed while counting
	failures   []registry.Job
	failErr    error
	failLoaded bool
	failBusy   bool
	failDirty  bool
	rollouts   []registry.Rollout // running, paused and halted ones
	// sel is the selected item (overview_items.go), by its record, so the
	// selection stays on it as the order changes; Enter opens it. selKey is
	// what the blocks mark (sel, or the first item), reveal asks View to
	// scroll the selection into sight after [ or ].
	sel     string
	selKey  string
	reveal  bool
	drawn   string
	version int
	width   int
	height  int
}

// The sparklines' window: 90 buckets of 10 seconds, the last 15 minutes.
const (
	seriesStep    = 10 * time.Second
	seriesBuckets = 90
	backfillLimit = 5000
)

var (
	keyShowStuck = key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "show stuck jobs"))
	keyNextItem  = key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "select next ▸"))
	keyPrevItem  = key.NewBinding(key.WithKeys("["), key.WithHelp("[", "select previous ▸"))
	keyOpenItem  = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open ▸"))
)

// overviewQueueRows is how many clusters the QUEUES block lists.
const overviewQueueRows = 5

// queueFigures is the width of a QUEUES row but the name: the mark and the
// five figures.
const queueFigures = 2 + 7 + 8 + 7 + 9 + 8

type overviewStuckMsg struct {
	counts stuckCounts
	err    error
}

type overviewFailuresMsg struct {
	jobs []registry.Job
	err  error
}

type overviewFailuresTickMsg struct{}

type overviewBackfillMsg struct {
	entries []registry.AuditEntry
	err     error
}

func newOverview(ctx *Context) *overview {
	return &overview{
		ctx: ctx, pager: newPager(),
		throughput: newSeries(seriesStep, seriesBuckets, ctx.Now),
		depth:      &series{step: seriesStep, buckets: make([]int64, seriesBuckets), start: ctx.Now.Truncate(seriesStep).Add(-(seriesBuckets - 1) * seriesStep), carry: true},
	}
}

func (o *overview) Title() string { return "Overview" }

func (o *overview) SetSize(w, h int) {
	o.width, o.height = w, h
	o.pager.setSize(w, h-1)
}

// Init counts stuck jobs and backfills throughput from the audit trail
// (every job that ended has an entry: a result, a lease exhausted, an
// expiry or a cancel).
func (o *overview) Init() tea.Cmd {
	b := o.ctx.Backend
	return tea.Batch(o.loadFailures(), o.loadRollouts(), func() tea.Msg {
		list, err := b.ListAudit(context.Background(), registry.AuditListParams{Action: "job.", Limit: backfillLimit})
		return overviewBackfillMsg{entries: list, err: err}
	})
}

func (o *overview) countStuck() tea.Cmd {
	if o.counting || !o.ctx.Fleet.loaded {
		o.recount = o.counting
		return nil
	}
	o.counting, o.lastCount = true, time.Now()
	b, now := o.ctx.Backend, o.ctx.Now
	unreachable := o.ctx.Fleet.unreachable(now)
	return func() tea.Msg {
		c, err := countStuckByReason(context.Background(), b, registry.StuckJobQueries(registry.JobListParams{}, unreachable, now))
		return overviewStuckMsg{counts: c, err: err}
	}
}

// endsJob reports whether an audit entry records one job ending. (The
// reaper's entries summarize a whole batch, so they are not counted.)
func endsJob(action string) bool {
	switch action {
	case registry.AuditJobResult, registry.AuditJobCancel:
		return true
	}
	return false
}

// overviewRolloutsMsg carries the rollouts that are not over.
type overviewRolloutsMsg struct{ list []registry.Rollout }

func (o *overview) loadRollouts() tea.Cmd {
	b := o.ctx.Backend
	return func() tea.Msg {
		list, err := b.ListRollouts(context.Background(), consoleRollouts)
		if err != nil {
			return nil // the overview shows what it can; :rollouts says what failed
		}
		live := list[:0]
		for _, ro := range list {
			if !ro.State.Terminal() {
				live = append(live, ro)
			}
		}
		return overviewRolloutsMsg{list: live}
	}
}

func (o *overview) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case overviewRolloutsMsg:
		o.rollouts = msg.list
		o.version++
		return nil
	case feedMsg:
		if len(msg.batch.Rollouts) > 0 {
			return tea.Batch(o.loadRollouts(), o.update(msg))
		}
	}
	return o.update(msg)
}

func (o *overview) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case overviewStuckMsg:
		o.counting = false
		o.err = msg.err
		if msg.err == nil {
			o.stuck, o.stuckKnown = msg.counts, true
		}
		o.version++
		if o.recount {
			o.recount = false
			return o.countStuck()
		}
	case watchStartedMsg:
		return o.countStuck()
	case overviewFailuresMsg:
		o.failBusy, o.failLoaded, o.failErr = false, true, msg.err
		if msg.err == nil {
			o.failures = msg.jobs
		}
		o.version++
		if o.failDirty {
			return tea.Tick(time.Second, func(time.Time) tea.Msg { return overviewFailuresTickMsg{} })
		}
	case overviewFailuresTickMsg:
		return o.loadFailures()
	case overviewBackfillMsg:
		if msg.err == nil {
			for _, a := range msg.entries {
				if endsJob(a.Action) {
					o.throughput.add(a.At, 1)
				}
			}
			o.backfilled = true
			o.partial = len(msg.entries) >= backfillLimit
		}
		o.version++
	case tickMsg:
		o.throughput.advance(msg.now)
		o.depth.advance(msg.now)
		if time.Since(o.lastCount) >= jobsCountEvery {
			return o.countStuck()
		}
	case countsMsg:
		if msg.err == nil {
			o.depth.advance(o.ctx.Now)
			o.depth.set(o.ctx.Now, o.ctx.Fleet.count("", registry.JobQueued))
			if o.depthSince.IsZero() {
				o.depthSince = o.ctx.Now
			}
			o.version++
		}
	case feedMsg:
		changed := false
		var cmds []tea.Cmd
		for _, j := range msg.batch.Jobs {
			if j.State.Terminal() && j.UpdatedAt.Equal(j.FinishedAt) {
				o.throughput.add(j.FinishedAt, 1)
				changed = true
				if (j.State == registry.JobFailed || j.State == registry.JobConflict) && !o.failDirty {
					cmds = append(cmds, o.loadFailures())
				}
			}
		}
		if changed || len(msg.batch.Clusters) > 0 {
			o.version++
		}
		if len(msg.batch.Clusters) > 0 || len(msg.batch.Deleted) > 0 {
			cmds = append(cmds, o.countStuck())
		}
		return tea.Batch(cmds...)
	case themeChangedMsg:
		o.drawn = ""
	case tea.MouseWheelMsg:
		o.pager.wheel(msg)
	case tea.KeyPressMsg:
		if o.pager.navigate(msg, o.ctx.Keys) {
			return nil
		}
		switch {
		case key.Matches(msg, keyShowStuck):
			return o.ctx.switchTo(switchMsg{screen: screenJobs, tab: "stuck", drill: true})
		case key.Matches(msg, keyNextItem):
			o.moveItem(1)
		case key.Matches(msg, keyPrevItem):
			o.moveItem(-1)
		case key.Matches(msg, keyOpenItem):
			if it, ok := o.selectedItem(); ok {
				return it.open()
			}
		}
	}
	return nil
}

func (o *overview) View() string {
	st := o.ctx.Styles
	title := st.Title.Render("Overview")
	if in := fmt.Sprint(o.ctx.Fleet.version, o.ctx.Now.Unix(), o.version, o.width, o.sel); in != o.drawn {
		doc := o.render()
		o.pager.setContent(doc)
		o.drawn = in
		if o.reveal {
			o.reveal = false
			o.pager.show(markedLine(doc))
		}
	}
	if info := o.pager.scrollInfo(); info != "" {
		title += st.Render(themes.Muted, "  "+info+" (↑/↓ scroll)")
	}
	return pad(title, o.width) + "\n" + o.pager.view()
}

func (o *overview) render() string {
	w := o.width
	o.selKey = ""
	if it, ok := o.selectedItem(); ok {
		o.selKey = it.key
	}
	blocks := [][2]string{
		{o.clustersBlock(), o.queuesBlock()},
		{o.jobsBlock(), o.stuckBlock()},
		{o.silentBlock(), o.conditionsBlock()},
		{o.failuresBlock(), ""},
	}
	var out []string
	if w >= 100 {
		half := (w - 2) / 2
		for _, row := range blocks {
			// A pair whose lines would be cut at the middle goes one above
			// the other, each the whole width: a condition's message is
			// read whole rather than cut to fit beside a shorter block.
			if row[1] != "" && (widest(row[0]) > half || widest(row[1]) > w-half-2) {
				for _, b := range row {
					lines := strings.Split(b, "\n")
					for i, l := range lines {
						lines[i] = truncate(l, w)
					}
					out = append(out, strings.Join(lines, "\n"))
				}
				continue
			}
			if row[1] == "" { // alone on its row, a block has the whole width
				lines := strings.Split(row[0], "\n")
				for i, l := range lines {
					lines[i] = truncate(l, w)
				}
				out = append(out, strings.Join(lines, "\n"))
				continue
			}
			l, r := strings.Split(row[0], "\n"), strings.Split(row[1], "\n")
			var lines []string
			for i := range max(len(l), len(r)) {
				var a, b string
				if i < len(l) {
					a = l[i]
				}
				if i < len(r) {
					b = r[i]
				}
				lines = append(lines, pad(a, half)+"  "+truncate(b, w-half-2))
			}
			out = append(out, strings.Join(lines, "\n"))
		}
	} else {
		for _, row := range blocks {
			for _, b := range row {
				if b != "" {
					out = append(out, b)
				}
			}
		}
		for i, b := range out {
			lines := strings.Split(b, "\n")
			for j, l := range lines {
				lines[j] = truncate(l, w)
			}
			out[i] = strings.Join(lines, "\n")
		}
	}
	if len(o.rollouts) > 0 {
		out = append(out, o.rolloutsBlock())
	}
	out = append(out, o.sparkBlock())
	return strings.Join(out, "\n\n")
}

func (o *overview) clustersBlock() string {
	st := o.ctx.Styles
	f := o.ctx.Fleet
	now := o.ctx.Now
	var active, pending, disabled, silent int
	for _, c := range f.sorted {
		switch c.Health(now, nil) {
		case registry.HealthDisabled:
			disabled++
		case registry.HealthPending:
			pending++
		case registry.HealthSilent:
			silent++
		default:
			active++
		}
	}
	total := len(f.sorted)
	lines := []string{st.Section.Render("CLUSTERS") + st.Render(themes.Muted, "  "+thousands(int64(total)))}
	if !f.loaded {
		return lines[0] + "\n" + st.Render(themes.Muted, "  loading…")
	}
	if total == 0 {
		hint := "  none yet: 2 opens the clusters, n creates one"
		if !o.ctx.allows(registry.PermAdmin, true) {
			hint = "  none yet"
		}
		return lines[0] + "\n" + st.Render(themes.Muted, hint)
	}
	row := func(label string, n int, k themes.Kind, note string) {
		frac := float64(n) / float64(max(1, total))
		lines = append(lines, "  "+st.Render(themes.Plain, pad(label, 10))+st.Render(k, padLeft(thousands(int64(n)), 7))+"  "+
			bar(st, frac, 16, k)+st.Render(themes.Muted, note))
	}
	row("active", active, themes.Good, "")
	sk := themes.Muted
	if silent > 0 {
		sk = themes.Warning
	}
	row("silent", silent, sk, "  no heartbeat ≥3m")
	row("pending", pending, themes.Info, "  not registered")
	row("disabled", disabled, themes.Danger, "")
	return strings.Join(lines, "\n")
}

func (o *overview) jobsBlock() string {
	st := o.ctx.Styles
	f := o.ctx.Fleet
	total := f.total("")
	lines := []string{st.Section.Render("JOBS") + st.Render(themes.Muted, "  "+thousands(total))}
	if !f.counted {
		return lines[0] + "\n" + st.Render(themes.Muted, "  loading…")
	}
	var hi int64
	for _, s := range registry.JobStates {
		hi = max(hi, f.count("", s))
	}
	for _, s := range registry.JobStates {
		n := f.count("", s)
		k := jobStateKind(s)
		if n == 0 {
			k = themes.Muted
		}
		lines = append(lines, "  "+st.Render(themes.Plain, pad(stateLabel(s), 12))+st.Render(k, padLeft(thousands(n), 10))+"  "+
			bar(st, float64(n)/float64(max(1, hi)), 20, k))
	}
	return strings.Join(lines, "\n")
}

func (o *overview) stuckBlock() string {
	st := o.ctx.Styles
	head := st.Section.Render("STUCK JOBS")
	switch {
	case o.err != nil && !o.stuckKnown:
		return head + "\n" + st.Render(themes.Danger, "  could not count: "+errText(o.err))
	case !o.stuckKnown:
		return head + "\n" + st.Render(themes.Muted, "  counting…")
	}
	s := o.stuck
	k := themes.Good
	if s.Total > 0 {
		k = themes.Warning
	}
	lines := []string{head + st.Render(k, "  "+thousands(int64(s.Total))) + st.Render(themes.Muted, "  (s shows them)")}
	row := func(n int, label, why string) {
		nk := themes.Muted
		if n > 0 {
			nk = themes.Warning
		}
		lines = append(lines, "  "+st.Render(nk, padLeft(thousands(int64(n)), 5))+"  "+st.Render(themes.Plain, pad(label, 21))+st.Render(themes.Muted, why))
	}
	row(s.Expired, "lease expired", "the reaper requeues it")
	row(s.Silent, "no lease, silent", fmt.Sprintf("silent ≥%s: needs a person", humanDuration(registry.NoLeaseStuckAfter)))
	row(s.Stranded, "cluster unreachable", "silent, disabled or pending")
	row(s.Exhausted, "attempts exhausted", "failed lease_expired: requeue")
	return strings.Join(lines, "\n")
}

// nameWidth is the width of the cluster names in the overview's blocks,
// the same in each: the fleet's longest name, up to what leaves the queues'
// figures their room in the block's column (half the screen from 100
// columns, else all of it).
// widest is the width of a block's widest line.
func widest(block string) int {
	w := 0
	for _, l := range strings.Split(block, "\n") {
		w = max(w, ansi.StringWidth(l))
	}
	return w
}

// namesWidth is the width a block pads its cluster names to: its own
// widest, not the fleet's, within nameWidth.
func (o *overview) namesWidth(names []string) int {
	w := 1
	for _, n := range names {
		w = max(w, ansi.StringWidth(n))
	}
	return min(w, o.nameWidth())
}

func (o *overview) nameWidth() int {
	longest := 8
	for _, c := range o.ctx.Fleet.sorted {
		longest = max(longest, ansi.StringWidth(c.Name))
	}
	column := o.width
	if column >= 100 {
		column = (column - 2) / 2
	}
	return max(8, min(longest, column-queueFigures))
}

func (o *overview) loadFailures() tea.Cmd {
	if o.failBusy {
		o.failDirty = true
		return nil
	}
	o.failBusy, o.failDirty = true, false
	b := o.ctx.Backend
	return func() tea.Msg {
		list, err := b.ListJobs(context.Background(), registry.JobListParams{
			States: []registry.JobState{registry.JobFailed, registry.JobConflict}, Limit: 5})
		return overviewFailuresMsg{jobs: list, err: err}
	}
}

func (o *overview) sparkBlock() string {
	st := o.ctx.Styles
	w := max(10, min(o.width-4, seriesBuckets))
	window := humanDuration(time.Duration(w) * seriesStep)
	note := ""
	if !o.backfilled {
		note = " (reading history…)"
	} else if o.partial {
		note = " (history partial: older buckets incomplete)"
	}
	tp := o.throughput.values()
	lines := []string{
		st.Section.Render("THROUGHPUT") + st.Render(themes.Muted, fmt.Sprintf("  jobs finished per %s, last %s%s", humanDuration(seriesStep), window, note)) +
			st.Render(themes.Plain, fmt.Sprintf("  %s in the window", thousands(sum(tp[len(tp)-w:])))),
		"  " + st.Render(themes.Good, sparkline(tp, w)),
		"",
		st.Section.Render("QUEUE DEPTH") + st.Render(themes.Muted, fmt.Sprintf("  queued jobs, last %s (sampled since the console started)", window)) +
			st.Render(themes.Plain, "  now "+thousands(o.ctx.Fleet.count("", registry.JobQueued))),
		"  " + st.Render(themes.Info, pad(sparkline(o.sampledDepth(), w), w)),
	}
	return strings.Join(lines, "\n")
}

func sum(v []int64) int64 {
	var n int64
	for _, x := range v {
		n += x
	}
	return n
}

// sampledDepth is the queue depth since the first sample: the buckets
// before it are unknown, not zero.
func (o *overview) sampledDepth() []int64 {
	if o.depthSince.IsZero() {
		return nil
	}
	v := o.depth.values()
	if i := o.depth.index(o.depthSince); i > 0 {
		return v[i:]
	}
	return v
}

func (o *overview) Actions() []key.Binding { return nil }

func (o *overview) KeyMap() help.KeyMap {
	k := o.ctx.Keys
	return keyMap{
		short: []key.Binding{keyOpenItem, keyShowStuck, k.NextView, k.Views[1], k.Views[2], k.Command, k.Help, k.Quit},
		full:  [][]key.Binding{{keyShowStuck, k.Up, k.Down}, {keyOpenItem, keyNextItem, keyPrevItem}},
	}
}
