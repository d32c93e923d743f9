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
	for _, b := range []key.Binding{keyRolloutPause, keyRolloutResume, keyRolloutAbort, keyRolloutRetry} {
		add(b)
	}
	return out
}()

// columnSortKey is the column a shift+letter sorts t by, as in k9s: the
// first whose header starts with the letter. ok is false for any other key,
// and for a capital that is an action (actionCapitals).
func columnSortKey(t *table, msg tea.KeyPressMsg) (col int, ok bool) {
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

func isColumnSortKey(t *table, msg tea.KeyPressMsg) bool {
	_, ok := columnSortKey(t, msg)
	return ok
}
