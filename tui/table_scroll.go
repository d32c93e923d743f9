package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// shown reports whether column i is drawn: laid out, and not scrolled out
// of sight in the wide layout (hscroll columns after the first, which stays
// as the row's name).
func (t *table) shown(i int) bool {
	if t.widths[i] == 0 {
		return false
	}
	if !t.isWide() || t.hscroll == 0 {
		return true
	}
	pos := 0
	for j := range i {
		if t.widths[j] > 0 {
			pos++
		}
	}
	return pos == 0 || pos > t.hscroll
}

// overflows reports whether the shown columns run past the table's width.
func (t *table) overflows() bool {
	used := -1
	if t.marks {
		used += 2
	}
	for i := range t.cols {
		if t.shown(i) {
			used += t.widths[i] + 1
		}
	}
	return used > t.width
}

// hscrollKey scrolls the wide layout's columns: shift+←/→ anywhere, ←/→
// (h/l) where the view does not use them (tabKeys: the jobs' tabs).
func (t *table) hscrollKey(msg tea.KeyPressMsg, k *Keys) bool {
	if !t.isWide() {
		return false
	}
	s := msg.String()
	left := s == "shift+left" || (!t.tabKeys && key.Matches(msg, k.Left))
	right := s == "shift+right" || (!t.tabKeys && key.Matches(msg, k.Right))
	switch {
	case left && t.hscroll > 0:
		t.hscroll--
	case right && t.overflows():
		t.hscroll++
	case !left && !right:
		return false
	}
	clear(t.cache)
	return true
}
