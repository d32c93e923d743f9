package tui

import (
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The help line fits the screen at every width: where the keys that fit
// left no room for the "…" that says more follow, the line went on past
// the terminal's edge, which cut it mid-key ("R requeue •" on the failed
// tab at 80 columns).
func TestHelpLineFitsTheScreen(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	for width := 60; width <= 140; width++ {
		m.Update(tea.WindowSizeMsg{Width: width, Height: 24})
		for _, keys := range [][]string{{"1"}, {"2"}, {"3"}, {"l"}, {"l"}, {"l"}, {"l"}, {"4"}, {"5"}} {
			do(m, keys...)
			help := m.helpLine()
			if w := ansi.StringWidth(help); w > width {
				t.Fatalf("at %d columns, after %v, the help line is %d wide: %q", width, keys, w, ansi.Strip(help))
			}
		}
	}
}
