package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// Keys are every binding of the console, declared once; each view's help
// KeyMap picks the ones it handles, so `?` always shows what works where.
type Keys struct {
	// Global.
	Quit, Command, Filter, Help, Back, NextView, PrevView, Wide key.Binding
	Views                                                       [5]key.Binding

	// Navigation.
	Up, Down, Top, Bottom, PageUp, PageDown, Enter, Left, Right key.Binding

	// Clusters.
	NewCluster, IssueToken, Edit, Rotate, Revoke, Toggle, PauseQueue, Delete, Sort, SortPrev, SortReverse key.Binding

	// Jobs.
	Requeue, Cancel, Retry, ExtendLease, CopyID, Mark, MarkAll, ClearMarks, ShowPayload key.Binding

	// Events and audit.
	Follow key.Binding
}

// DefaultKeys are k9s-like: vim keys and arrows, capitals for the
// consequential job actions.
func DefaultKeys() *Keys {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	k := &Keys{
		Quit:     b("q", "quit", "q", "ctrl+c"),
		Command:  b(":", "command", ":"),
		Filter:   b("/", "filter", "/"),
		Help:     b("?", "help", "?"),
		Back:     b("esc", "back", "esc"),
		NextView: b("tab", "next view", "tab"),
		PrevView: b("shift+tab", "previous view", "shift+tab"),
		Wide:     b("w", "wide", "w"),

		Up:       b("↑/k", "up", "up", "k"),
		Down:     b("↓/j", "down", "down", "j"),
		Top:      b("g/home", "top", "g", "home"),
		Bottom:   b("G/end", "bottom", "G", "end"),
		PageUp:   b("pgup/ctrl+u", "page up", "pgup", "ctrl+u", "ctrl+b"),
		PageDown: b("pgdn/ctrl+d", "page down", "pgdown", "ctrl+d", "ctrl+f"),
		Enter:    b("enter", "open", "enter"),
		Left:     b("←/h", "previous tab", "left", "h"),
		Right:    b("→/l", "next tab", "right", "l"),

		NewCluster:  b("n", "new cluster", "n"),
		IssueToken:  b("t", "issue token", "t"),
		Edit:        b("e", "edit", "e"),
		Rotate:      b("r", "force rotation", "r"),
		Revoke:      b("x", "revoke credentials", "x"),
		Toggle:      b("d", "disable/enable", "d"),
		PauseQueue:  b("p", "pause/resume queue", "p"),
		Delete:      b("D", "delete", "D"),
		Sort:        b("s/>", "sort", "s", ">"),
		SortPrev:    b("<", "sort: previous column", "<"),
		SortReverse: b("S", "reverse sort", "S"),

		Requeue:     b("R", "requeue", "R"),
		Cancel:      b("C", "cancel", "C"),
		Retry:       b("F", "retry", "F"),
		ExtendLease: b("L", "extend lease", "L"),
		CopyID:      b("y", "copy id", "y"),
		Mark:        b("space", "mark", "space"),
		MarkAll:     b("A", "mark the whole tab", "A"),
		ClearMarks:  b("u", "clear marks", "u"),
		ShowPayload: b("P", "show sealed payload (audited)", "P"),

		Follow: b("f", "follow/pause", "f"),
	}
	names := []string{"overview", "clusters", "jobs", "events", "audit"}
	for i := range k.Views {
		n := string(rune('1' + i))
		k.Views[i] = b(n, names[i], n)
	}
	return k
}

// mutations are the bindings that change something: read-only mode
// disables them, which also hides them from help.
func (k *Keys) mutations() []*key.Binding {
	return []*key.Binding{&k.NewCluster, &k.IssueToken, &k.Edit, &k.Rotate, &k.Revoke, &k.Toggle, &k.PauseQueue, &k.Delete,
		&k.Requeue, &k.Cancel, &k.Retry, &k.ExtendLease, &k.Mark, &k.MarkAll, &k.ClearMarks}
}

// SetReadOnly disables (and hides) every mutation.
func (k *Keys) SetReadOnly(ro bool) {
	for _, b := range k.mutations() {
		b.SetEnabled(!ro)
	}
}

// keyMap adapts binding lists to help.KeyMap.
type keyMap struct {
	short []key.Binding
	full  [][]key.Binding
}

func (m keyMap) ShortHelp() []key.Binding  { return m.short }
func (m keyMap) FullHelp() [][]key.Binding { return m.full }

// isSortKey reports whether msg is one of the sort keys (s, >, <, S).
func isSortKey(msg tea.KeyPressMsg, k *Keys) bool {
	return key.Matches(msg, k.Sort) || key.Matches(msg, k.SortPrev) || key.Matches(msg, k.SortReverse)
}
