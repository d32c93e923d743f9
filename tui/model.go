// Package tui is tether's console: a Bubble Tea program over a Backend.
//
// The root Model owns the screens (overview, clusters, jobs, events, audit;
// each a stack, so that a detail opens over its list and esc goes back), the
// modal on top, the `:` command line, the `/` filter, the status line and the
// help line. Data flows in through tea.Cmds only: a registry watch feeds
// every screen, coalesced to at most 20 frames a second, and the screens
// read what they show (never everything) through the Backend. Keys never wait
// on the database.
package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// Options configure the console.
type Options struct {
	Backend Backend
	// Theme is the starting theme; with Theme.Auto the console switches
	// between dark and light when the terminal reports its background.
	Theme    themes.Choice
	ReadOnly bool
	// ServeAddr is the agent API's address when the console serves it
	// (tether console --serve); it is shown in the header.
	ServeAddr string
	// ServerURL and AgentStateDir fill in the register command shown with a
	// new token (AgentStateDir defaults to ./tether-agent-NAME).
	ServerURL     string
	AgentStateDir string
	// Source names what the console looks at (the database file), for the
	// header.
	Source string
	// Start is the first screen: overview (default), clusters, jobs,
	// events or audit.
	Start string
	// Context ends the console's background work (the watch) when done.
	Context context.Context
}

// Screens, in tab order.
const (
	screenOverview = iota
	screenClusters
	screenJobs
	screenEvents
	screenAudit
	numScreens
)

var screenNames = [numScreens]string{"overview", "clusters", "jobs", "events", "audit"}

// countsEvery bounds how often job counts are re-read while jobs change.
const countsEvery = 500 * time.Millisecond

// Model is the console's root model.
type Model struct {
	ctx    *Context
	opts   Options
	choice themes.Choice

	screen int
	stacks [numScreens][]view

	overview *overview
	clusters *clustersView
	jobs     *jobsView
	events   *eventsView
	audit    *auditView

	modal       modal
	cmdline     *cmdline
	filtering   bool
	filterInput textinput.Model
	filterWas   string

	spinner    spinner.Model
	spinning   bool
	running    map[int]string
	nextAction int

	status     string
	statusKind statusKind
	statusAt   time.Time

	feed        *feed
	watchErr    error
	countsDirty bool
	countsBusy  bool
	countsLast  time.Time
	credsLoaded bool

	sized bool
}

// New returns the console's model.
func New(opts Options) *Model {
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	if opts.ServerURL == "" {
		opts.ServerURL = "URL"
	}
	b := opts.Backend
	if opts.ReadOnly {
		b = readOnly{opts.Backend}
	}
	keys := DefaultKeys()
	keys.SetReadOnly(opts.ReadOnly)
	ctx := &Context{
		Width: 120, Height: 40,
		Styles: themes.NewStyles(opts.Theme.Theme), Keys: keys, Now: b.Now(), ReadOnly: opts.ReadOnly,
		Backend: b, Fleet: newFleet(), Opts: &opts,
	}
	m := &Model{ctx: ctx, opts: opts, choice: opts.Theme, running: map[int]string{}}
	m.overview = newOverview(ctx)
	m.clusters = newClustersView(ctx)
	m.jobs = newJobsView(ctx)
	m.events = newEventsView(ctx)
	m.audit = newAuditView(ctx)
	m.stacks = [numScreens][]view{{m.overview}, {m.clusters}, {m.jobs}, {m.events}, {m.audit}}
	m.cmdline = newCmdline(ctx)
	m.spinner = spinner.New(spinner.WithSpinner(spinner.MiniDot))
	m.restyle()
	for i, n := range screenNames {
		if strings.EqualFold(opts.Start, n) {
			m.screen = i
		}
	}
	m.layout()
	return m
}

// Init starts the watch, the clock, and the first reads of every screen.
func (m *Model) Init() tea.Cmd {
	m.feed = newFeed(m.opts.Context)
	cmds := []tea.Cmd{
		startWatch(m.ctx.Backend, m.feed),
		m.loadCounts(),
		m.tick(),
		m.overview.Init(),
		m.jobs.Init(),
		m.events.Init(),
		m.audit.Init(),
	}
	if m.choice.Auto {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

func (m *Model) tick() tea.Cmd {
	b := m.ctx.Backend
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tickMsg{now: b.Now()} })
}

func (m *Model) loadCounts() tea.Cmd {
	m.countsBusy, m.countsDirty, m.countsLast = true, false, time.Now()
	return loadCounts(m.ctx.Backend)
}

type countsTickMsg struct{}

// countsLater re-reads the job counters soon, at most every countsEvery.
func (m *Model) countsLater() tea.Cmd {
	if m.countsDirty {
		return nil
	}
	m.countsDirty = true
	if m.countsBusy {
		return nil
	}
	wait := max(countsEvery-time.Since(m.countsLast), frameInterval)
	return tea.Tick(wait, func(time.Time) tea.Msg { return countsTickMsg{} })
}

// restyle applies the current theme to the root's own components.
func (m *Model) restyle() {
	in := newInput(m.ctx, "")
	in.Prompt = ""
	m.filterInput = in
	m.cmdline.input = newInput(m.ctx, m.cmdline.input.Value())
	if m.cmdline.active {
		m.cmdline.input.Focus()
	}
	m.spinner.Style = m.ctx.Styles.Of(themes.Accent, false)
}

func (m *Model) setTheme(t themes.Theme) tea.Cmd {
	if t.Name == m.ctx.Styles.Theme.Name {
		return nil
	}
	m.ctx.Styles = themes.NewStyles(t)
	m.restyle()
	return m.broadcast(themeChangedMsg{})
}

func (m *Model) top() view {
	s := m.stacks[m.screen]
	return s[len(s)-1]
}

func (m *Model) layout() {
	for _, s := range m.stacks {
		for _, v := range s {
			v.SetSize(m.ctx.Width, m.ctx.bodyHeight())
		}
	}
}

// broadcast sends a data message to every view of every screen (each takes
// what concerns it) and to the modal.
func (m *Model) broadcast(msg tea.Msg) tea.Cmd {
	var cmds []tea.Cmd
	for _, s := range m.stacks {
		for _, v := range s {
			cmds = append(cmds, v.Update(msg))
		}
	}
	if m.modal != nil {
		var cmd tea.Cmd
		m.modal, cmd = m.modal.Update(msg)
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

// How long a status message stays: long enough to read, not forever (an
// error longer, since it may need acting on).
const (
	statusShownFor      = 10 * time.Second
	statusErrorShownFor = 30 * time.Second
)

func (m *Model) expireStatus() {
	if m.status == "" || len(m.running) > 0 {
		return
	}
	keep := statusShownFor
	if m.statusKind == statusErr {
		keep = statusErrorShownFor
	}
	if m.ctx.Now.Sub(m.statusAt) >= keep {
		m.status = ""
	}
}

func (m *Model) setStatus(k statusKind, text string) {
	m.status, m.statusKind, m.statusAt = text, k, m.ctx.Now
}

func (m *Model) startSpinner() tea.Cmd {
	if m.spinning {
		return nil
	}
	m.spinning = true
	return m.spinner.Tick
}

// closeModal closes md if it is still the open modal.
func (m *Model) closeModal(md modal) {
	if m.modal == md {
		m.modal = nil
	}
}

// probe lets a test look at the model from inside its event loop.
type probe interface{ probe(*Model) }

// idle reports whether nothing is loading or running: what golden tests
// wait for.
func (m *Model) idle() bool {
	j := m.jobs
	for _, s := range m.stacks {
		for _, v := range s {
			if b, ok := v.(interface{ busy() bool }); ok && b.busy() {
				return false
			}
		}
	}
	return m.ctx.Fleet.loaded && m.ctx.Fleet.counted && !m.countsBusy && !m.countsDirty && m.credsLoaded &&
		len(m.running) == 0 && !j.loading && !j.counting && !j.dirty && !j.countDirty && j.loaded &&
		m.events.loaded && m.audit.loaded && !m.overview.counting && m.overview.backfilled
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmds := []tea.Cmd{m.update(msg)}
	for len(m.ctx.pending) > 0 {
		f := m.ctx.pending[0]
		m.ctx.pending = m.ctx.pending[1:]
		cmds = append(cmds, f(m))
	}
	return m, tea.Batch(cmds...)
}

// push opens a detail over the current screen and starts its first read.
func (m *Model) push(d detail) tea.Cmd {
	d.SetSize(m.ctx.Width, m.ctx.bodyHeight())
	m.stacks[m.screen] = append(m.stacks[m.screen], d)
	return d.load()
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case probe:
		msg.probe(m)
		return nil
	case tea.WindowSizeMsg:
		m.ctx.Width, m.ctx.Height, m.sized = msg.Width, msg.Height, true
		m.layout()
		if m.jobs.loaded {
			return m.jobs.ensureWindow()
		}
		return nil
	case tea.BackgroundColorMsg:
		if m.choice.Auto {
			return m.setTheme(themes.ForBackground(msg.IsDark()))
		}
		return nil
	case tickMsg:
		m.ctx.Now = msg.now
		m.expireStatus()
		return tea.Batch(m.tick(), m.broadcast(msg))
	case watchStartedMsg:
		return m.watchStarted(msg)
	case feedMsg:
		return m.applyFeed(msg)
	case feedTickMsg:
		if msg.feed == m.feed {
			return m.feed.wait()
		}
		return nil
	case restartWatchMsg:
		return m.restartWatch()
	case countsTickMsg:
		if m.countsDirty && !m.countsBusy {
			return m.loadCounts()
		}
		return nil
	case countsMsg:
		m.countsBusy = false
		if msg.err != nil {
			m.setStatus(statusErr, "could not read job counts: "+errText(msg.err))
		} else {
			m.ctx.Fleet.setCounts(msg.counts)
		}
		cmds := []tea.Cmd{m.broadcast(msg)}
		if m.countsDirty {
			m.countsDirty = false
			cmds = append(cmds, m.countsLater())
		}
		return tea.Batch(cmds...)
	case credentialsMsg:
		m.credsLoaded = true
		if msg.err != nil {
			m.setStatus(statusErr, "could not read credentials: "+errText(msg.err))
			return nil
		}
		m.ctx.Fleet.setCredentials(msg.byCluster)
		m.ctx.Fleet.setTokens(msg.tokens)
		return m.broadcast(msg)
	case runActionMsg:
		return m.startAction(msg)
	case actionDoneMsg:
		return m.finishAction(msg)
	case statusMsg:
		m.setStatus(msg.kind, msg.text)
		return nil
	case spinner.TickMsg:
		if len(m.running) == 0 {
			m.spinning = false
			return nil
		}
		var cmd tea.Cmd
		m.spinner, cmd = m.spinner.Update(msg)
		return cmd
	case commandMsg:
		return m.runCommand(msg)
	case quitMsg:
		return tea.Quit
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.MouseClickMsg:
		return m.click(msg)
	case tea.MouseWheelMsg:
		if m.modal != nil {
			var cmd tea.Cmd
			m.modal, cmd = m.modal.Update(msg)
			return cmd
		}
		wm := msg
		wm.Y--
		return m.top().Update(wm)
	}
	return m.broadcast(msg)
}

type restartWatchMsg struct{}

type quitMsg struct{}

func (m *Model) watchStarted(msg watchStartedMsg) tea.Cmd {
	if msg.feed != m.feed {
		return nil
	}
	if msg.err != nil {
		m.watchErr = msg.err
		m.setStatus(statusErr, "live updates unavailable: "+errText(msg.err)+"; retrying in 5s")
		return tea.Tick(5*time.Second, func(time.Time) tea.Msg { return restartWatchMsg{} })
	}
	if m.watchErr != nil {
		m.setStatus(statusOK, "live updates reconnected")
	}
	m.watchErr = nil
	m.ctx.Fleet.setClusters(msg.clusters)
	ids := make([]string, 0, len(msg.clusters))
	for _, c := range msg.clusters {
		ids = append(ids, c.ID)
	}
	return tea.Batch(m.feed.wait(), loadCredentials(m.ctx.Backend, ids), m.broadcast(msg))
}

// restartWatch starts over after the watch ended: a new feed, the cluster
// list and the counters read again.
func (m *Model) restartWatch() tea.Cmd {
	if m.feed != nil {
		m.feed.stop()
	}
	m.feed = newFeed(m.opts.Context)
	return tea.Batch(startWatch(m.ctx.Backend, m.feed), m.loadCounts())
}

func (m *Model) applyFeed(msg feedMsg) tea.Cmd {
	if msg.feed != m.feed {
		return nil
	}
	b := &msg.batch
	f := m.ctx.Fleet
	for _, c := range b.Clusters {
		f.upsert(c)
	}
	for _, id := range b.Deleted {
		f.remove(id)
	}
	if len(b.Clusters) > 0 || len(b.Deleted) > 0 {
		f.resort()
	}
	for _, c := range b.Credentials {
		f.upsertCredential(c)
	}
	for _, t := range b.Tokens {
		f.upsertToken(t)
	}
	cmds := []tea.Cmd{m.broadcast(msg)}
	if len(b.Jobs) > 0 || len(b.Deleted) > 0 {
		cmds = append(cmds, m.countsLater())
	}
	switch {
	case b.Reset:
		m.setStatus(statusInfo, "the console fell behind the change feed; reloading")
		cmds = append(cmds, m.restartWatch(), m.jobs.requery())
	case b.Closed:
		if m.opts.Context.Err() == nil {
			m.watchErr = fmt.Errorf("the watch ended")
			m.setStatus(statusErr, "live updates stopped; reconnecting in 5s")
			cmds = append(cmds, tea.Tick(5*time.Second, func(time.Time) tea.Msg { return restartWatchMsg{} }))
		}
	default:
		cmds = append(cmds, m.feed.next())
	}
	return tea.Batch(cmds...)
}

func (m *Model) switchTo(msg switchMsg) tea.Cmd {
	m.screen = msg.screen
	var cmds []tea.Cmd
	if msg.filter != "" || msg.tab != "" {
		m.stacks[m.screen] = m.stacks[m.screen][:1] // the list, where the filter applies
	}
	if msg.tab != "" && m.screen == screenJobs {
		cmd, _ := m.jobs.showTab(msg.tab)
		cmds = append(cmds, cmd)
	}
	if msg.filter != "" {
		if f, ok := m.top().(filterable); ok {
			cmds = append(cmds, f.SetFilter(msg.filter))
		}
	}
	return tea.Batch(cmds...)
}

func (m *Model) quit() tea.Cmd {
	if len(m.running) == 0 {
		return tea.Quit
	}
	var names []string
	for _, n := range m.running {
		names = append(names, n)
	}
	m.modal = newConfirm(m.ctx, "Quit while an action is running?",
		"Still running: "+strings.Join(names, ", ")+". It may complete after the console exits, but its outcome will not be shown here.",
		"quit anyway", true, func() tea.Msg { return quitMsg{} })
	return nil
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.ctx.Keys
	if msg.String() == "ctrl+c" {
		return m.quit()
	}
	if m.modal != nil {
		var cmd tea.Cmd
		m.modal, cmd = m.modal.Update(msg)
		return cmd
	}
	if m.cmdline.active {
		return m.cmdline.Update(msg)
	}
	if m.filtering {
		return m.filterKey(msg)
	}
	v := m.top()
	if m.ctx.ReadOnly {
		for _, b := range v.Actions() {
			b.SetEnabled(true)
			if key.Matches(msg, b) {
				return failed("read-only mode: " + b.Help().Desc + " is disabled (the console was started with --read-only)")
			}
		}
	}
	switch {
	case key.Matches(msg, k.Quit) && len(m.stacks[m.screen]) > 1 && msg.String() == "q":
		// q in a detail goes back to its list, as esc does: quitting from
		// deep inside a view by a key meant for "close this" loses the
		// console (and the agent API it serves). ctrl+c still quits.
		m.stacks[m.screen] = m.stacks[m.screen][:len(m.stacks[m.screen])-1]
		return nil
	case key.Matches(msg, k.Quit) && m.opts.ServeAddr != "" && len(m.running) == 0:
		m.modal = newConfirm(m.ctx, "Quit the console?",
			"This console also serves the agent API on "+m.opts.ServeAddr+": quitting stops it, and agents connected to it lose their server until it runs again.",
			"quit", true, func() tea.Msg { return quitMsg{} })
		return nil
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Command):
		m.cmdline.open()
		return nil
	case key.Matches(msg, k.Help):
		m.modal = m.helpModal()
		return nil
	case key.Matches(msg, k.Filter):
		f, ok := v.(filterable)
		if !ok {
			return info("this view has no filter")
		}
		m.filtering, m.filterWas = true, f.Filter()
		m.filterInput.SetValue(f.Filter())
		m.filterInput.CursorEnd()
		m.filterInput.Focus()
		return nil
	case key.Matches(msg, k.Back):
		if f, ok := v.(filterable); ok && f.Filter() != "" {
			return f.SetFilter("")
		}
		if s := m.stacks[m.screen]; len(s) > 1 {
			m.stacks[m.screen] = s[:len(s)-1]
		}
		return nil
	case key.Matches(msg, k.NextView):
		m.screen = (m.screen + 1) % numScreens
		return nil
	case key.Matches(msg, k.PrevView):
		m.screen = (m.screen + numScreens - 1) % numScreens
		return nil
	}
	for i, b := range k.Views {
		if key.Matches(msg, b) {
			m.screen = i
			return nil
		}
	}
	return v.Update(msg)
}

func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	f, ok := m.top().(filterable)
	if !ok {
		m.filtering = false
		return nil
	}
	switch msg.String() {
	case "enter":
		m.filtering = false
		m.filterInput.Blur()
		return f.SetFilter(strings.TrimSpace(m.filterInput.Value()))
	case "esc":
		m.filtering = false
		m.filterInput.Blur()
		return f.SetFilter(m.filterWas)
	}
	var cmd tea.Cmd
	m.filterInput, cmd = m.filterInput.Update(msg)
	return tea.Batch(cmd, f.SetFilter(strings.TrimSpace(m.filterInput.Value())))
}

func (m *Model) helpModal() modal {
	k := m.ctx.Keys
	global := [][]key.Binding{
		{k.Views[0], k.Views[1], k.Views[2], k.Views[3], k.Views[4]},
		{k.NextView, k.PrevView, k.Command, k.Filter},
		{k.Back, k.Help, k.Quit},
	}
	return &helpModal{ctx: m.ctx, title: m.top().Title(), keys: m.top().KeyMap(), global: global}
}

// runCommand executes a `:` command.
func (m *Model) runCommand(c commandMsg) tea.Cmd {
	rest := strings.Join(c.args, " ")
	switch c.name {
	case "overview":
		m.screen = screenOverview
	case "clusters":
		m.screen = screenClusters
		if rest != "" {
			found := m.ctx.Fleet.resolve(rest)
			if len(found) != 1 {
				return m.switchTo(switchMsg{screen: screenClusters, filter: rest})
			}
			m.stacks[screenClusters] = m.stacks[screenClusters][:1]
			d := newClusterDetail(m.ctx, found[0].ID)
			return m.push(d)
		}
	case "jobs":
		sw := switchMsg{screen: screenJobs}
		args := c.args
		if len(args) > 0 {
			if _, ok := m.jobs.tabByName(args[0]); ok {
				sw.tab, args = args[0], args[1:]
			}
		}
		sw.filter = strings.Join(args, " ")
		return m.switchTo(sw)
	case "job":
		if rest == "" {
			return failed(":job needs a job id, e.g. :job j-01…")
		}
		m.screen = screenJobs
		d := newJobDetail(m.ctx, rest, nil)
		return m.push(d)
	case "events":
		return m.switchTo(switchMsg{screen: screenEvents, filter: rest})
	case "audit":
		return m.switchTo(switchMsg{screen: screenAudit, filter: rest})
	case "rollouts":
		// Over the overview, which shows the rollouts that need a look.
		m.screen = screenOverview
		m.stacks[m.screen] = m.stacks[m.screen][:1]
		if rest != "" {
			return m.push(newRolloutDetail(m.ctx, rest, rest))
		}
		return m.push(newRolloutsView(m.ctx))
	case "help":
		m.modal = m.helpModal()
	case "quit":
		return m.quit()
	}
	return nil
}

func (m *Model) click(msg tea.MouseClickMsg) tea.Cmd {
	if m.modal != nil {
		return nil
	}
	if msg.Y == 0 {
		for i, r := range m.tabRanges() {
			if msg.X >= r[0] && msg.X < r[1] {
				m.screen = i
			}
		}
		return nil
	}
	if msg.Y > m.ctx.bodyHeight() {
		return nil
	}
	cm := msg
	cm.Y--
	return m.top().Update(cm)
}

// View draws the header, the current screen, the status line and the help
// line, and the modal over them.
func (m *Model) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "tether · " + m.top().Title()
	if !m.sized {
		return v
	}
	w, h := m.ctx.Width, m.ctx.Height
	body := fit(m.top().View(), w, m.ctx.bodyHeight())
	screen := m.header() + "\n" + body + "\n" + m.statusLine() + "\n" + m.helpLine()
	if m.modal != nil {
		box := m.modal.View()
		bw, bh := lipgloss.Width(box), lipgloss.Height(box)
		x, y := max(0, (w-bw)/2), max(1, (h-bh)/2)
		screen = lipgloss.NewCompositor(
			lipgloss.NewLayer(screen),
			lipgloss.NewLayer(box).X(x).Y(y).Z(1),
		).Render()
	}
	v.SetContent(screen)
	return v
}

// fit makes s exactly h lines of at most w cells.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "")
		}
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func (m *Model) tabLabel(i int) string { return fmt.Sprintf(" %d %s ", i+1, screenNames[i]) }

const brand = " ◆ tether "

func (m *Model) tabRanges() [][2]int {
	x := ansi.StringWidth(brand) + 1
	var out [][2]int
	for i := range numScreens {
		w := ansi.StringWidth(m.tabLabel(i))
		out = append(out, [2]int{x, x + w})
		x += w
	}
	return out
}

func (m *Model) header() string {
	st := m.ctx.Styles
	left := st.Brand.Render(brand) + " "
	for i := range numScreens {
		if i == m.screen {
			left += st.TabActive.Render(m.tabLabel(i))
		} else {
			left += st.TabInactive.Render(m.tabLabel(i))
		}
	}
	// Right-hand items with their importance: what does not fit is left out,
	// least important first.
	type item struct {
		text string
		prio int
	}
	var items []item
	now := m.ctx.Now
	silent := 0
	for _, c := range m.ctx.Fleet.sorted {
		if c.Silent(now) {
			silent++
		}
	}
	if silent > 0 {
		items = append(items, item{st.Render(themes.Warning, "⚠ "+plural(silent, "silent cluster", "silent clusters")), 4})
	}
	if n := m.overview.stuck.Total; m.overview.stuckKnown && n > 0 {
		items = append(items, item{st.Render(themes.Warning, "⚠ "+thousands(int64(n))+" stuck"), 4})
	}
	if m.opts.ServeAddr != "" {
		items = append(items, item{st.Render(themes.Muted, "serving ") + st.Render(themes.Good, m.opts.ServeAddr), 3})
	} else if m.opts.Source != "" {
		items = append(items, item{st.Render(themes.Muted, m.opts.Source), 1})
	}
	if m.watchErr != nil {
		items = append(items, item{st.DangerBadge.Render(" OFFLINE "), 5})
	}
	if m.ctx.ReadOnly {
		items = append(items, item{st.Badge.Render(" READ-ONLY "), 6})
	}
	items = append(items, item{st.Render(themes.Muted, clock(now)+"Z"), 2})
	var right []string
	w := m.ctx.Width
	for {
		right = right[:0]
		for _, it := range items {
			right = append(right, it.text)
		}
		if len(items) == 0 || ansi.StringWidth(left)+ansi.StringWidth(strings.Join(right, "  "))+2 <= w {
			break
		}
		low := 0
		for i, it := range items {
			if it.prio < items[low].prio {
				low = i
			}
		}
		items = append(items[:low], items[low+1:]...)
	}
	r := strings.Join(right, "  ")
	gap := w - ansi.StringWidth(left) - ansi.StringWidth(r) - 1
	if gap < 1 {
		return truncate(left, w)
	}
	return left + strings.Repeat(" ", gap) + r + " "
}

func (m *Model) statusLine() string {
	st := m.ctx.Styles
	w := m.ctx.Width
	if m.cmdline.active {
		return m.cmdline.View(w)
	}
	if m.filtering {
		m.filterInput.SetWidth(max(10, w/2))
		hint := ""
		if f, ok := m.top().(filterable); ok {
			hint = st.Render(themes.Muted, "  "+f.FilterHelp())
		}
		return pad(st.Render(themes.Accent, "/")+m.filterInput.View()+hint, w)
	}
	var left string
	if len(m.running) > 0 {
		var names []string
		for _, n := range m.running {
			names = append(names, n)
		}
		left = m.spinner.View() + " " + st.Render(themes.Info, strings.Join(names, ", ")+"…")
	} else if m.status != "" {
		at := st.Render(themes.Muted, clock(m.statusAt)+" ")
		switch m.statusKind {
		case statusOK:
			left = at + st.Render(themes.Good, "✓ "+m.status)
		case statusErr:
			left = at + st.Render(themes.Danger, "✗ "+m.status)
		default:
			left = at + st.Render(themes.Plain, m.status)
		}
	}
	return pad(" "+left, w)
}

func (m *Model) helpLine() string {
	var km help.KeyMap
	switch {
	case m.modal != nil:
		km = m.modal.KeyMap()
	case m.cmdline.active:
		km = m.cmdline.KeyMap()
	case m.filtering:
		km = keyMap{short: []key.Binding{keyConfirm, keyCancel}}
	default:
		km = m.top().KeyMap()
	}
	h := newHelp(m.ctx)
	h.SetWidth(m.ctx.Width - 1)
	return " " + h.ShortHelpView(km.ShortHelp())
}
