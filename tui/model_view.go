package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// How the console draws its frame: the header with its tabs, the screen, the status line and the help line.

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
	bottom := m.statusLine()
	if !strings.Contains(bottom, "\n") { // a long status takes the help line's row too
		bottom += "\n" + m.helpLine()
	}
	screen := m.header() + "\n" + body + "\n" + bottom
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
	drilled := m.drilled()
	if !drilled {
		for i := range numScreens {
			if i == m.screen {
				left += st.TabActive.Render(m.tabLabel(i))
			} else {
				left += st.TabInactive.Render(m.tabLabel(i))
			}
		}
	}
	// Right-hand items with their importance: what does not fit is left out,
	// least important first.
	type item struct {
		text string
		prio int
		// short, when set, replaces text rather than the item going,
		// and then counts as shortPrio.
		short     string
		shortPrio int
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
		items = append(items, item{text: st.Render(themes.Warning, "⚠ "+plural(silent, "silent cluster", "silent clusters")), prio: 4})
	}
	if n := m.ctx.Fleet.notDrainingCount(); n > 0 {
		items = append(items, item{text: st.Render(themes.Danger, "⚠ "+thousands(int64(n))+" not draining"), prio: 5})
	}
	if n := m.overview.stuck.Total; m.overview.stuckKnown && n > 0 {
		items = append(items, item{text: st.Render(themes.Warning, "⚠ "+thousands(int64(n))+" stuck"), prio: 4})
	}
	if m.opts.ServeAddr != "" {
		items = append(items, item{text: st.Render(themes.Muted, "serving ") + st.Render(themes.Good, m.opts.ServeAddr), prio: 3})
	} else if m.opts.Source != "" {
		items = append(items, item{text: st.Render(themes.Muted, m.opts.Source), prio: 1})
	}
	if c := m.conn; !c.LostAt.IsZero() {
		// The remote console lost its server: for how long, and when it
		// tries again (the watch reconnects by itself, with backoff).
		text := "connection lost " + humanDuration(roundDuration(max(now.Sub(c.LostAt), 0)))
		if wait := c.RetryAt.Sub(now); wait > 0 {
			text += " · retrying in " + humanDuration(roundDuration(wait))
		} else {
			text += " · retrying"
		}
		// Short of room (80 columns), the badge stays, before anything
		// else: the screen may be out of date.
		badge := st.DangerBadge.Render(" OFFLINE ")
		items = append(items, item{badge + " " + st.Render(themes.Danger, text), 5, badge, 7})
	} else if text := m.storeHeader(); text != "" {
		// The database does not answer: what the screen shows is as old as
		// the last read that succeeded. As above, the badge stays at 80
		// columns.
		badge := st.DangerBadge.Render(" OFFLINE ")
		items = append(items, item{badge + " " + st.Render(themes.Danger, text), 5, badge, 7})
	} else if m.watchErr != nil {
		items = append(items, item{text: st.DangerBadge.Render(" OFFLINE "), prio: 7})
	}
	if m.ctx.ReadOnly {
		items = append(items, item{text: st.Badge.Render(" READ-ONLY "), prio: 6})
	} else if m.ctx.Role != registry.RoleAdmin {
		// The token's role (GET /whoami): what the keys on offer follow.
		items = append(items, item{text: st.Badge.Render(" " + strings.ToUpper(string(m.ctx.Role)) + " "), prio: 6})
	}
	if m.ctx.Wide {
		items = append(items, item{text: st.Render(themes.Accent, "⇔ wide"), prio: 5})
	}
	items = append(items, item{text: st.Render(themes.Muted, clock(now)+"Z"), prio: 2})
	var right []string
	w := m.ctx.Width
	if drilled {
		// The trail takes the tabs' place. It is where you are: the
		// right-hand items give it room, least important first (the
		// badges stay), before it is shortened.
		keep := ansi.StringWidth(left)
		itemsWidth := func() int {
			n := 0
			for _, it := range items {
				n += ansi.StringWidth(it.text) + 2
			}
			return n
		}
		full := ansi.StringWidth(m.breadcrumbs(1 << 20))
		for keep+full+itemsWidth()+1 > w {
			low := -1
			for i, it := range items {
				if it.prio < 5 && (low < 0 || it.prio < items[low].prio) {
					low = i
				}
			}
			if low < 0 {
				break
			}
			items = append(items[:low], items[low+1:]...)
		}
		left += m.breadcrumbs(max(10, w-keep-itemsWidth()-1))
	}
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
		if it := &items[low]; it.short != "" {
			it.text, it.prio, it.short = it.short, it.shortPrio, ""
			continue
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
			if e := f.FilterErr(); e != "" {
				hint = st.Render(themes.Danger, "  "+e)
			}
		}
		return pad(st.Render(themes.Accent, "/")+m.filterInput.View()+hint, w)
	}
	var left string
	if len(m.running) > 0 {
		var names []string
		stoppable := false
		for id, n := range m.running {
			if p := m.progress[id]; p != nil {
				n += ": " + p.String()
				stoppable = stoppable || !p.stop.Load()
			}
			names = append(names, n)
		}
		left = m.spinner.View() + " " + st.Render(themes.Info, strings.Join(names, ", ")+"…")
		if stoppable {
			left += st.Render(themes.Muted, "  esc stops")
		}
	} else if m.status != "" {
		at := clock(m.statusAt) + " "
		text, k := m.status, themes.Plain
		switch m.statusKind {
		case statusOK:
			text, k = "✓ "+m.status, themes.Good
		case statusErr:
			text, k = "✗ "+m.status, themes.Danger
		}
		// An outcome or an error too long for the line goes on over the
		// help line's row, which it hides while it shows: cut at 80
		// columns, an error would lose what it says to do.
		room := w - 1 - ansi.StringWidth(at)
		if m.modal == nil && room >= 20 && ansi.StringWidth(text) > room { // a modal's keys stay
			lines := strings.Split(ansi.Wrap(text, room, ""), "\n")
			rest := strings.TrimSpace(strings.Join(lines[1:], " "))
			return pad(" "+st.Render(themes.Muted, at)+st.Render(k, strings.TrimRight(lines[0], " ")), w) + "\n" +
				pad(" "+strings.Repeat(" ", ansi.StringWidth(at))+st.Render(k, rest), w)
		}
		left = st.Render(themes.Muted, at) + st.Render(k, text)
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
		switch m.top().(type) {
		case *clustersView, *jobsView, *eventsView, *auditView, *rolloutsView, *rolloutDetail:
			km = withWide(km, m.ctx.Keys)
		}
	}
	h := newHelp(m.ctx)
	width := m.ctx.Width - 1
	h.SetWidth(width)
	short := km.ShortHelp()
	line := h.ShortHelpView(short)
	// Where the keys that fit leave no room for the ellipsis, bubbles' help
	// adds the rest anyway and the line runs past the screen's edge: fewer
	// keys, then, and the ellipsis.
	h.SetWidth(0)
	tail := " " + h.Styles.Ellipsis.Render(h.Ellipsis)
	for n := len(short) - 1; ansi.StringWidth(line) > width && n >= 0; n-- {
		line = h.ShortHelpView(short[:n]) + tail
	}
	return " " + line
}

// withWide adds the wide-layout toggle (w) to a list's short help, before
// its help key: every list has it.
func withWide(km help.KeyMap, k *Keys) help.KeyMap {
	short := km.ShortHelp()
	at := -1
	for i, b := range short {
		if b.Help().Key == k.Help.Help().Key {
			at = i
		}
		if b.Help().Key == k.Wide.Help().Key {
			return km
		}
	}
	if at < 0 {
		return km // not a list (a form, a modal)
	}
	out := append(append(append([]key.Binding{}, short[:at]...), k.Wide), short[at:]...)
	return keyMap{short: out, full: km.FullHelp()}
}
