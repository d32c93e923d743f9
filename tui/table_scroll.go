package tui

import (
	"strings"

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

// keyScrollLeft and keyScrollRight scroll the wide layout's columns in
// every table, the jobs' (whose ←/→ change tabs) included.
var (
	keyScrollLeft  = key.NewBinding(key.WithKeys("shift+left"), key.WithHelp("shift+←", "scroll columns left"))
	keyScrollRight = key.NewBinding(key.WithKeys("shift+right"), key.WithHelp("shift+→", "scroll columns right"))
)

// scrollLeftRight are the keys that scroll t's columns left and right:
// shift+←/→, and ←/→ (h/l) where the view does not use them (tabKeys: the
// jobs' tabs). None outside the wide layout, which alone scrolls.
func (t *table) scrollLeftRight(k *Keys) (left, right []key.Binding) {
	if !t.isWide() {
		return nil, nil
	}
	left, right = []key.Binding{keyScrollLeft}, []key.Binding{keyScrollRight}
	if !t.tabKeys {
		left, right = append(left, k.Left), append(right, k.Right)
	}
	return left, right
}

// scrollKeys are scrollLeftRight for the help, each direction one binding.
func (t *table) scrollKeys(k *Keys) []key.Binding {
	left, right := t.scrollLeftRight(k)
	if len(left) == 0 {
		return nil
	}
	join := func(bs []key.Binding, desc string) key.Binding {
		var keys, helps []string
		for _, b := range bs {
			keys = append(keys, b.Keys()...)
			helps = append(helps, b.Help().Key)
		}
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(strings.Join(helps, " "), desc))
	}
	return []key.Binding{join(left, "scroll columns left"), join(right, "scroll columns right")}
}

// hscrollKey scrolls the wide layout's columns (scrollLeftRight); it
// reports whether msg was one of its keys.
func (t *table) hscrollKey(msg tea.KeyPressMsg, k *Keys) bool {
	l, r := t.scrollLeftRight(k)
	left, right := key.Matches(msg, l...), key.Matches(msg, r...)
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
