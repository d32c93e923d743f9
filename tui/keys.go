package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
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

	// Jobs (DeleteJob is D, as Delete is for a cluster: an operator may
	// delete a job, only an admin a cluster).
	Requeue, Cancel, Retry, DeleteJob, ExtendLease, CopyID, Mark, MarkAll, ClearMarks, ShowPayload, SubmitJob key.Binding

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
		DeleteJob:   b("D", "delete", "D"),
		ExtendLease: b("L", "extend lease", "L"),
		CopyID:      b("y", "copy id", "y"),
		Mark:        b("space", "mark", "space"),
		MarkAll:     b("A", "mark the whole tab", "A"),
		ClearMarks:  b("u", "clear marks", "u"),
		ShowPayload: b("P", "show sealed payload (audited)", "P"),
		SubmitJob:   b("n", "submit job", "n"),

		Follow: b("f", "follow/pause", "f"),
	}
	names := []string{"overview", "clusters", "jobs", "events", "audit"}
	for i := range k.Views {
		n := string(rune('1' + i))
		k.Views[i] = b(n, names[i], n)
	}
	return k
}

// guarded is a binding the role of the console's token may lack: the
// permission its registry operation needs (registry.authorize), and whether
// it changes something (--read-only disables those).
type guarded struct {
	b      *key.Binding
	perm   registry.Permission
	change bool
}

// guarded lists the bindings that need more than reading, with the
// permission of the operation each runs.
func (k *Keys) guarded() []guarded {
	admin, operate := registry.PermAdmin, registry.PermOperate
	return []guarded{
		{&k.NewCluster, admin, true}, {&k.IssueToken, admin, true}, {&k.Edit, admin, true}, {&k.Rotate, admin, true},
		{&k.Revoke, admin, true}, {&k.Toggle, admin, true}, {&k.PauseQueue, operate, true}, {&k.Delete, admin, true},
		{&k.Requeue, operate, true}, {&k.Cancel, operate, true}, {&k.Retry, operate, true}, {&k.DeleteJob, operate, true},
		{&k.ExtendLease, operate, true}, {&k.Mark, operate, true}, {&k.MarkAll, operate, true}, {&k.ClearMarks, operate, true},
		{&k.ShowPayload, admin, false}, {&k.SubmitJob, operate, true},
	}
}

// SetAccess enables exactly the bindings the role allows (registry.RoleAllows),
// and none that changes something when the console is read-only: the others
// are disabled, which also hides them from help.
func (k *Keys) SetAccess(role registry.Role, readOnly bool) {
	for _, g := range k.guarded() {
		g.b.SetEnabled(registry.RoleAllows(role, g.perm) && !(readOnly && g.change))
	}
}

// SetReadOnly disables (and hides) every change, for an admin's console.
func (k *Keys) SetReadOnly(ro bool) { k.SetAccess(registry.RoleAdmin, ro) }

// need is the permission b's operation needs, and whether it changes
// something: those of the bindings above by their key and description,
// PermOperate (a change) for a view's other actions (a rollout's pause,
// resume, abort and retry).
func (k *Keys) need(b key.Binding) (registry.Permission, bool) {
	for _, g := range k.guarded() {
		if g.b.Help() == b.Help() {
			return g.perm, g.change
		}
	}
	if b.Help() == keyCAInit.Help() {
		return registry.PermAdmin, true
	}
	return registry.PermOperate, true
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
