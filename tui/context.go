package tui

import (
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// Context is what every view and component shares: the terminal's size, the
// styles (created once per theme), the keys, the registry's clock as of the
// last tick, the mode, the backend and the fleet data.
type Context struct {
	Width, Height int
	Styles        *themes.Styles
	Keys          *Keys
	Now           time.Time
	ReadOnly      bool
	// Role is what the console's person may do: over the admin API the
	// token's role (GET /whoami), locally an admin's.
	Role    registry.Role
	Backend Backend
	Fleet   *fleet
	Opts    *Options
	// Wide is the wide layout (w): every list's columns at their content's
	// width, cut only at the terminal's edge.
	Wide bool
	// Offline: the live feed lost the server (or stopped); the views'
	// live marks say so instead of "● live".
	Offline bool

	// pending are requests to the root (requests.go: show a modal, open a
	// detail, switch screens) made while a message is handled; the root
	// handles them right after, so that the very next key already goes
	// where it should.
	pending []tea.Msg
}

// allows reports whether the console may offer an action needing perm
// (change: it changes something, which --read-only refuses).
func (c *Context) allows(perm registry.Permission, change bool) bool {
	return registry.RoleAllows(c.Role, perm) && !(c.ReadOnly && change)
}

// refusal says why an action is not offered: the --read-only flag, or the
// role of the console's token and the role the action needs.
func (c *Context) refusal(what string, perm registry.Permission, change bool) string {
	if c.ReadOnly && change {
		return "read-only mode: " + what + " is disabled (the console was started with --read-only)"
	}
	return what + " needs the " + string(perm.Role()) + " role; this console has the " + string(c.Role) + " role"
}

func (c *Context) request(msg tea.Msg) tea.Cmd {
	c.pending = append(c.pending, msg)
	return nil
}

// showModal opens a modal over the screen.
func (c *Context) showModal(md modal) tea.Cmd { return c.request(showModalMsg{md}) }

// open pushes a detail over the current screen and starts its first read.
func (c *Context) open(d detail) tea.Cmd { return c.request(openDetailMsg{d}) }

// switchTo shows another screen, optionally with a filter or a jobs tab.
func (c *Context) switchTo(sw switchMsg) tea.Cmd { return c.request(sw) }

// bodyHeight is the lines a view may use: the header, the status line and the
// help line take three.
func (c *Context) bodyHeight() int { return max(1, c.Height-3) }

// component is what every view is: it handles messages, renders itself at
// its size, and declares its keys for help.
type component interface {
	Update(msg tea.Msg) tea.Cmd
	View() string
	SetSize(width, height int)
	KeyMap() help.KeyMap
}

// view is a component the root shows as a screen.
type view interface {
	component
	// Title names the screen in the header's breadcrumb.
	Title() string
	// Actions are the bindings of this view that change something: in
	// read-only mode pressing one says why nothing happens.
	Actions() []key.Binding
}

// filterable views accept a `/` filter.
type filterable interface {
	Filter() string
	SetFilter(s string) tea.Cmd
	// FilterHelp says what the filter understands.
	FilterHelp() string
	// FilterErr says what is wrong with the filter in force ("" when
	// nothing is): the status line shows it.
	FilterErr() string
}

// filterApplier is a filterable whose filter waits for typing to pause
// before it reads the store: enter applies it at once.
type filterApplier interface {
	ApplyFilter() tea.Cmd
}

// Messages shared by several views.

// tickMsg moves the console's clock (every second): ages and countdowns
// follow it.
type tickMsg struct{ now time.Time }

// themeChangedMsg tells components to rebuild anything styled.
type themeChangedMsg struct{}

// statusMsg puts a message in the status line.
type statusMsg struct {
	text string
	kind statusKind
	// seq orders messages by when they were decided: Bubble Tea runs each
	// command in its own goroutine, so two keys' messages may arrive in
	// either order, and the older must not overwrite the newer.
	seq uint64
	// background: a read the console repeats by itself failed; it does
	// not take the place of an action's outcome still shown.
	background bool
}

// statusSeq numbers status messages as info and failed make them.
var statusSeq atomic.Uint64

type statusKind int

const (
	statusInfo statusKind = iota
	statusOK
	statusErr
)

func info(text string) tea.Cmd {
	msg := statusMsg{text: text, kind: statusInfo, seq: statusSeq.Add(1)}
	return func() tea.Msg { return msg }
}

func failed(text string) tea.Cmd {
	msg := statusMsg{text: text, kind: statusErr, seq: statusSeq.Add(1)}
	return func() tea.Msg { return msg }
}

// bgFailed is failed for a read the console repeats by itself (the
// counters): with the database or the server gone it fails every few
// seconds, and it must not wipe the outcome of what the person just did
// ("cancel … failed: the server is unreachable") before it is read.
func bgFailed(text string) tea.Cmd {
	msg := statusMsg{text: text, kind: statusErr, seq: statusSeq.Add(1), background: true}
	return func() tea.Msg { return msg }
}

// detail is a view pushed over a list: it reads its data when opened.
type detail interface {
	view
	load() tea.Cmd
}

// switchMsg says which screen to show, optionally with a filter or a jobs
// tab.
type switchMsg struct {
	screen int
	filter string
	tab    string
	// drill: the switch goes from a record to what belongs to it (a
	// cluster's jobs or events): esc there comes back, rather than only
	// clearing the filter the drill set.
	drill bool
}

// table returns a table styled for the console that follows the wide
// layout toggle.
func (c *Context) table(cols []column) *table {
	t := newTable(cols)
	t.wide = &c.Wide
	t.setStyles(c.Styles)
	return t
}
