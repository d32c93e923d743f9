package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// ? at 80 columns shows every key of every screen: groups that do not fit
// side by side go below, rather than behind an ellipsis (issue 12,
// defect 7).
func TestHelpShowsEveryKeyAt80Columns(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	load(t, m, e)
	for screen, want := range map[string][]string{
		"2": {"force rotation", "revoke credentials", "pause/resume queue"},
		"3": {"extend lease", "copy id", "clear marks"},
	} {
		do(m, screen, "?")
		view := ansi.Strip(m.View().Content)
		if strings.Contains(view, "…") {
			t.Errorf("screen %s: the help hides keys behind an ellipsis:\n%s", screen, view)
		}
		for _, w := range want {
			if !strings.Contains(view, w) {
				t.Errorf("screen %s: the help lacks %q:\n%s", screen, w, view)
			}
		}
		if n := strings.Count(view, "\n") + 1; n > 24 {
			t.Errorf("screen %s: %d lines on a 24-line screen", screen, n)
		}
		do(m, "esc")
	}
}

// The events and the audit trail sort by any column (s, <, S): their ? says
// so, as every view's help shows every key it handles.
func TestHelpListsTheLiveListsSortKeys(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	for _, screen := range []string{"4", "5"} {
		do(m, screen)
		help := ansi.Strip(m.helpModal().View())
		for _, w := range []string{"s/> sort", "< ", "sort: previous column", "S ", "reverse sort"} {
			if !strings.Contains(help, w) {
				t.Errorf("screen %s: the help lacks %q:\n%s", screen, w, help)
			}
		}
	}
}
