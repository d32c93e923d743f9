package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// The back stack. Opening a record pushes its detail on the screen's own
// stack (a cluster over the clusters, a job over the jobs); a drill from a
// record to what belongs to it on another screen (a cluster's jobs or
// events, the overview's stuck jobs) records a returnPoint. esc undoes the
// last step: it closes the detail, or returns from the drill to the screen
// and detail it left, with the list it went to put back as it was (tab,
// filter, selection). Moving by hand (tab, 1–5, a `:` command) starts a new
// trail. The header shows the trail as breadcrumbs.

// returnPoint is where esc goes back to after a drill: the screen the drill
// left, and what it did to the screen it went to.
type returnPoint struct {
	from, to int
	// fromDepth is how deep from's stack was (its detail stays open).
	fromDepth int
	// toStack and toState are the screen gone to as it was: its stack (the
	// drill shows the list) and its list's tab, filter and selection.
	toStack []view
	toState any
}

// listState is a list that can say where it is (tab, filter, sort,
// selection) and be put back there.
type listState interface {
	saveList() any
	restoreList(any) tea.Cmd
}

// maxBack bounds the back stack: a long walk forgets its oldest steps.
const maxBack = 16

func (m *Model) switchTo(msg switchMsg) tea.Cmd {
	if msg.drill && msg.screen != m.screen {
		rp := returnPoint{from: m.screen, to: msg.screen, fromDepth: len(m.stacks[m.screen]),
			toStack: append([]view(nil), m.stacks[msg.screen]...)}
		if l, ok := m.stacks[msg.screen][0].(listState); ok {
			rp.toState = l.saveList()
		}
		m.back = append(m.back, rp)
		if len(m.back) > maxBack {
			m.back = m.back[1:]
		}
	} else if !msg.drill {
		m.back = nil
	}
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

// goTo moves to a screen by hand: a new trail.
func (m *Model) goTo(screen int) {
	m.screen = screen
	m.back = nil
}

// goBack is esc on a screen: close the detail on top, else return from the
// drill that led here, else clear the list's filter. It reports whether
// there was anything to undo.
func (m *Model) goBack() (tea.Cmd, bool) {
	s := m.stacks[m.screen]
	if len(s) > 1 {
		m.stacks[m.screen] = s[:len(s)-1]
		return nil, true
	}
	if n := len(m.back); n > 0 && m.back[n-1].to == m.screen {
		rp := m.back[n-1]
		m.back = m.back[:n-1]
		var cmd tea.Cmd
		if l, ok := m.stacks[rp.to][0].(listState); ok && rp.toState != nil {
			cmd = l.restoreList(rp.toState)
		}
		m.stacks[rp.to] = rp.toStack
		m.screen = rp.from
		if d := rp.fromDepth; d >= 1 && d <= len(m.stacks[rp.from]) {
			m.stacks[rp.from] = m.stacks[rp.from][:d]
		}
		return cmd, true
	}
	if f, ok := s[0].(filterable); ok && f.Filter() != "" {
		return f.SetFilter(""), true
	}
	return nil, false
}

// trail is the way here, oldest first: the views of each screen a drill
// left, then this screen's.
func (m *Model) trail() []view {
	var out []view
	screen := m.screen
	for i := len(m.back) - 1; i >= 0; i-- {
		rp := m.back[i]
		if rp.to != screen {
			break
		}
		out = append(append([]view(nil), m.stacks[rp.from][:min(rp.fromDepth, len(m.stacks[rp.from]))]...), out...)
		screen = rp.from
	}
	return append(out, m.stacks[m.screen]...)
}

// crumb names a view in the trail: a list with its tab and filter, a
// record by its name (ids cut to a prefix that still reads as one).
func crumb(v view) string {
	switch v := v.(type) {
	case *jobsView:
		s := "jobs " + jobTabLabels[v.tab]
		if v.filter != "" {
			s += " /" + v.filter
		}
		return s
	case *jobDetail:
		return "job " + shortID(v.id)
	case filterable:
		s := strings.ToLower(v.(view).Title())
		if f := v.Filter(); f != "" {
			s += " /" + f
		}
		return s
	}
	t := v.Title()
	if t == "Overview" || t == "Rollouts" {
		return strings.ToLower(t)
	}
	return t
}

// shortID keeps an id's kind prefix and a few of its characters.
func shortID(id string) string {
	if ansi.StringWidth(id) <= 14 {
		return id
	}
	return ansi.Truncate(id, 13, "…")
}

// breadcrumbs renders the trail in at most width cells: when it does not
// fit, the middle steps give way to "…", the first and the last (where you
// are) stay.
func (m *Model) breadcrumbs(width int) string {
	st := m.ctx.Styles
	var names []string
	for _, v := range m.trail() {
		names = append(names, crumb(v))
	}
	sep := " › "
	render := func(names []string) string {
		parts := make([]string, len(names))
		for i, n := range names {
			if i == len(names)-1 {
				parts[i] = st.Render(themes.Accent, n)
			} else {
				parts[i] = st.Render(themes.Muted, n)
			}
		}
		return strings.Join(parts, st.Render(themes.Muted, sep))
	}
	out := render(names)
	for ansi.StringWidth(out) > width && len(names) > 2 {
		// Drop the second step (the first after the start), marking the gap.
		if names[1] == "…" {
			if len(names) == 3 {
				break
			}
			names = append(names[:2], names[3:]...)
		} else {
			names[1] = "…"
		}
		out = render(names)
	}
	if ansi.StringWidth(out) > width {
		out = ansi.Truncate(out, width, "…")
	}
	return out
}

// drilled reports whether the header shows the trail instead of the
// screens' tabs: there is a way back.
func (m *Model) drilled() bool { return len(m.trail()) > 1 }
