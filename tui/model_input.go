package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// How the root model handles input: keys, the / filter, the : command line and the mouse.

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
	for _, b := range v.Actions() {
		perm, change := m.ctx.Keys.need(b)
		if m.ctx.allows(perm, change) {
			continue
		}
		b.SetEnabled(true)
		if key.Matches(msg, b) {
			return failed(m.ctx.refusal(b.Help().Desc, perm, change))
		}
	}
	switch {
	case key.Matches(msg, k.Back) && m.stopBulk():
		return nil
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
		cmd, _ := m.goBack()
		return cmd
	case key.Matches(msg, k.Wide):
		return m.toggleWide()
	case key.Matches(msg, k.NextView):
		m.goTo((m.screen + 1) % numScreens)
		return nil
	case key.Matches(msg, k.PrevView):
		m.goTo((m.screen + numScreens - 1) % numScreens)
		return nil
	}
	for i, b := range k.Views {
		if key.Matches(msg, b) {
			m.goTo(i)
			return nil
		}
	}
	return v.Update(msg)
}

// stopBulk asks the running bulk actions to stop after the job in hand (esc
// while one runs; the status line says so). It reports whether one was
// running and not already stopping.
func (m *Model) stopBulk() bool {
	stopped := false
	for _, p := range m.progress {
		if !p.stop.Load() {
			p.stop.Store(true)
			stopped = true
		}
	}
	return stopped
}

// toggleWide switches every list between columns fitted to the screen and
// columns at their content's width (cut at the terminal's edge).
func (m *Model) toggleWide() tea.Cmd {
	m.ctx.Wide = !m.ctx.Wide
	m.wideHelp()
	m.layout()
	if m.ctx.Wide {
		return info("wide layout: columns at their full width, cut at the screen's edge (w fits them again)")
	}
	return info("columns fit the screen again (w for the wide layout)")
}

// wideHelp names what w does next.
func (m *Model) wideHelp() {
	if m.ctx.Wide {
		m.ctx.Keys.Wide.SetHelp("w", "fit columns")
	} else {
		m.ctx.Keys.Wide.SetHelp("w", "wide")
	}
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
		cmd := f.SetFilter(strings.TrimSpace(m.filterInput.Value()))
		if a, ok := f.(filterApplier); ok {
			cmd = tea.Batch(cmd, a.ApplyFilter())
		}
		if e := f.FilterErr(); e != "" {
			m.setStatus(statusErr, e)
		}
		return cmd
	case "esc":
		m.filtering = false
		m.filterInput.Blur()
		return f.SetFilter(m.filterWas)
	}
	var cmd tea.Cmd
	m.filterInput, cmd = m.filterInput.Update(msg)
	return tea.Batch(cmd, f.SetFilter(strings.TrimSpace(m.filterInput.Value())))
}

func (m *Model) click(msg tea.MouseClickMsg) tea.Cmd {
	if m.modal != nil {
		return nil
	}
	if msg.Y == 0 {
		if m.drilled() {
			return nil // the header shows the trail, not the tabs
		}
		for i, r := range m.tabRanges() {
			if msg.X >= r[0] && msg.X < r[1] {
				m.goTo(i)
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
