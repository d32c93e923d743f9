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
	"strings"
	"time"

	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// Options configure the console.
type Options struct {
	Backend Backend
	// Theme is the starting theme; with Theme.Auto the console switches
	// between dark and light when the terminal reports its background.
	Theme    themes.Choice
	ReadOnly bool
	// Role is what the console may do: the token's role over the admin API
	// (a *Remote backend's, when empty), an admin's locally.
	Role registry.Role
	// ServeAddr is the agent API's address when the console serves it
	// (tether console --serve); it is shown in the header.
	ServeAddr string
	// ServerURL and AgentStateDir fill in the register command shown with a
	// new token (AgentStateDir defaults to ~/.local/state/tether-agent-NAME).
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
	// NoHostAccess: the console's person is not at the machine it runs on
	// (the console over SSH), so it reads none of that machine's files and
	// runs none of its programs for them: the submit form has no From file
	// field and no ctrl+e ($EDITOR, whose shell escape would be a shell
	// there).
	NoHostAccess bool
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

	// back holds where esc returns to after drills across screens (a
	// cluster's detail to its jobs), innermost last.
	back []returnPoint

	modal       modal
	cmdline     *cmdline
	filtering   bool
	filterInput textinput.Model
	filterWas   string

	spinner    spinner.Model
	spinning   bool
	running    map[int]string
	progress   map[int]*bulkProgress // of the running bulk actions
	nextAction int

	status     string
	statusKind statusKind
	statusAt   time.Time
	statusSeq  uint64 // of the status shown (statusMsg.seq)
	// statusOutcome: the status is an action's outcome (outcomeShown).
	statusOutcome bool

	feed        *feed
	watchErr    error
	conn        admin.ConnState // the remote backend's connection, read each tick
	storeHealth storeHealth     // whether the database answers (model_store.go)
	countsDirty bool
	countsBusy  bool
	countsLast  time.Time
	credsLoaded bool
	queues      queueLoader
	// feedReady: the current feed's watch runs; listAsked: its cluster
	// list was asked for (see startWatch).
	feedReady, listAsked bool

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
		b = admin.ReadOnly(opts.Backend, errReadOnly)
	}
	if opts.Role == "" {
		opts.Role = registry.RoleAdmin
		if r, ok := opts.Backend.(*admin.Remote); ok && r.Role != "" {
			opts.Role = r.Role
		}
	}
	keys := DefaultKeys()
	keys.SetAccess(opts.Role, opts.ReadOnly)
	ctx := &Context{
		Width: 120, Height: 40, Role: opts.Role,
		Styles: themes.NewStyles(opts.Theme.Theme), Keys: keys, Now: b.Now(), ReadOnly: opts.ReadOnly,
		Backend: b, Fleet: newFleet(), Opts: &opts,
	}
	m := &Model{ctx: ctx, opts: opts, choice: opts.Theme, running: map[int]string{}, progress: map[int]*bulkProgress{}}
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

// setStatus shows a message from now on. Its time is read from the clock,
// not from the last tick: a busy console handles its ticks late, and a
// message stamped with a stale tick's time would be taken at the next tick
// for one shown long ago and vanish after a second or two.
func (m *Model) setStatus(k statusKind, text string) {
	m.status, m.statusKind, m.statusAt = text, k, m.ctx.Backend.Now()
	m.statusOutcome = false
}

// outcomeShown: the status line shows an action's outcome, which a
// background read's failure does not replace (bgFailed).
func (m *Model) outcomeShown() bool { return m.statusOutcome && m.status != "" }

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
		!m.queues.busy && (m.ctx.Fleet.queuesLoaded || m.ctx.Fleet.queuesErr != nil) &&
		len(m.running) == 0 && !j.loading && !j.counting && !j.dirty && !j.countDirty && j.loaded &&
		m.events.loaded && m.audit.loaded && !m.overview.counting && m.overview.backfilled
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmds := []tea.Cmd{m.update(msg)}
	for len(m.ctx.pending) > 0 {
		req := m.ctx.pending[0]
		m.ctx.pending = m.ctx.pending[1:]
		cmds = append(cmds, m.update(req))
	}
	cmds = append(cmds, m.maybeLoadFleet())
	return m, tea.Batch(cmds...)
}

// maybeLoadFleet asks for the cluster list once the watch runs and the
// first screen's own reads (the jobs page, the counts) are in: see
// startWatch.
func (m *Model) maybeLoadFleet() tea.Cmd {
	if !m.feedReady || m.listAsked || m.jobs.loading || m.countsBusy {
		return nil
	}
	m.listAsked = true
	return loadFleetList(m.ctx.Backend, m.feed)
}

// push opens a detail over the current screen and starts its first read.
func (m *Model) push(d detail) tea.Cmd {
	d.SetSize(m.ctx.Width, m.ctx.bodyHeight())
	m.stacks[m.screen] = append(m.stacks[m.screen], d)
	return d.load()
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	if cmd, ok := m.request(msg); ok {
		return cmd
	}
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
		m.storeCheck()
		cmds := []tea.Cmd{m.tick(), m.checkConn(), m.broadcast(msg)}
		if m.ctx.Fleet.loaded && m.queues.due() { // first read when the list is in (watchStarted)
			cmds = append(cmds, m.loadQueues())
		}
		return tea.Batch(cmds...)
	case queuesMsg:
		m.queues.busy = false
		m.storeHealth.askedAt = time.Time{}
		m.ctx.Fleet.setQueues(msg.list, msg.err)
		return m.storeRead(msg.err)
	case feedStartedMsg:
		return m.feedStarted(msg)
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
			if !m.outcomeShown() {
				m.setStatus(statusErr, "could not read job counts: "+errText(msg.err))
			}
		} else {
			m.ctx.Fleet.setCounts(msg.counts)
			m.queues.dirty = true
		}
		cmds := []tea.Cmd{m.broadcast(msg), m.storeRead(msg.err)}
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
		if msg.seq < m.statusSeq {
			return nil // a newer message is already shown
		}
		m.statusSeq = msg.seq
		if msg.background && m.outcomeShown() {
			return nil
		}
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

// connReporter is a backend that can lose its connection: the remote one.
type connReporter interface {
	Connection() admin.ConnState
	Reconnected() (time.Duration, bool)
}

// checkConn reads the remote backend's connection for the header and the
// live marks, and says when a lost connection came back (the counts are
// read again: changes made meanwhile came through the resumed watch, but
// counts are not fed).
func (m *Model) checkConn() tea.Cmd {
	var cmd tea.Cmd
	if r, ok := m.opts.Backend.(connReporter); ok {
		if d, back := r.Reconnected(); back {
			m.setStatus(statusOK, "reconnected after "+humanDuration(roundDuration(d))+"; live updates resumed")
			cmd = m.loadCounts()
		}
		m.conn = r.Connection()
	}
	m.ctx.Offline = m.offline()
	return cmd
}

type quitMsg struct{}

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
