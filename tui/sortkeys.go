package tui

import (
	"reflect"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// actionCapitals are the capital letters bound to something anywhere in the
// console (R requeue, D delete, G bottom, S reverse...): those keep their
// meaning in every view and never sort, so that a letter does not act in
// one view and sort in the next.
var actionCapitals = func() map[string]bool {
	out := map[string]bool{}
	add := func(b key.Binding) {
		for _, s := range b.Keys() {
			if len(s) == 1 && s[0] >= 'A' && s[0] <= 'Z' {
				out[s] = true
			}
		}
	}
	v := reflect.ValueOf(*DefaultKeys())
	for i := range v.NumField() {
		switch f := v.Field(i).Interface().(type) {
		case key.Binding:
			add(f)
		case [5]key.Binding:
			for _, b := range f {
				add(b)
			}
		}
	}
	for _, b := range []key.Binding{keyRolloutPause, keyRolloutResume, keyRolloutAbort, keyRolloutRetry, keyClusterJobs, keyClusterEvents} {
		add(b)
	}
	return out
}()

// columnLetter is the column a shift+letter names, as in k9s: the first
// whose header starts with the letter. ok is false for any other key, and
// for a capital that is an action (actionCapitals).
func columnLetter(t *table, msg tea.KeyPressMsg) (col int, ok bool) {
	s := msg.String()
	if len(s) != 1 || s[0] < 'A' || s[0] > 'Z' || actionCapitals[s] {
		return -1, false
	}
	for i, c := range t.cols {
		if strings.HasPrefix(c.Title, s) {
			return i, true
		}
	}
	return -1, false
}

// columnSortKey is the column a shift+letter sorts t by (columnLetter),
// in a view that sorts its rows by any column (letterSort); ok is false
// elsewhere.
func columnSortKey(t *table, msg tea.KeyPressMsg) (col int, ok bool) {
	if !t.letterSort {
		return -1, false
	}
	return columnLetter(t, msg)
}

func isColumnLetter(t *table, msg tea.KeyPressMsg) bool {
	_, ok := columnLetter(t, msg)
	return ok
}

func isColumnSortKey(t *table, msg tea.KeyPressMsg) bool {
	_, ok := columnSortKey(t, msg)
	return ok
}

// shiftLetter is the key a terminal sends for shift+c (c a capital).
func shiftLetter(c rune) tea.KeyPressMsg {
	return tea.KeyPressMsg{Code: c - 'A' + 'a', ShiftedCode: c, Mod: tea.ModShift, Text: string(c)}
}

// sortLetterKeys are the shift+letters that sort t, one binding each
// naming its column: found by asking columnSortKey about every capital, so
// that the help lists exactly what the view's keys take.
func (t *table) sortLetterKeys() []key.Binding {
	var out []key.Binding
	for c := 'A'; c <= 'Z'; c++ {
		if col, ok := columnSortKey(t, shiftLetter(c)); ok {
			l := string(c)
			out = append(out, key.NewBinding(key.WithKeys(l), key.WithHelp(l, "sort by "+strings.ToLower(t.cols[col].Title))))
		}
	}
	return out
}

// helpGroups are the table's own keys for a view's help: the shift+letters
// that sort it, and in the wide layout those that scroll its columns.
func (t *table) helpGroups(k *Keys) [][]key.Binding {
	var out [][]key.Binding
	for _, g := range [][]key.Binding{t.sortLetterKeys(), t.scrollKeys(k)} {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}
