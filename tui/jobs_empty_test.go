package tui

import (
	"testing"
)

// R, C, F and D on an empty tab, with no job marked or selected, have
// nothing to act on and say nothing: F said "none of the marked jobs can
// be retried" on the empty stuck tab (seen in tmux over tether demo).
func TestJobActionsOnAnEmptyTab(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "3")
	for _, k := range []string{"R", "C", "F", "D"} {
		m.status = ""
		do(m, k)
		if m.status != "" || m.modal != nil {
			t.Errorf("%s on an empty tab: status %q, modal %T", k, m.status, m.modal)
		}
	}
}
