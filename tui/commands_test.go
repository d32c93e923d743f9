package tui

import (
	"os"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// TestEveryCommandIsListed: the `:` commands are one table, and each of
// them runs, shows in the `?` help, in the list a bare `:` prompt shows
// (at 80 and 120 columns), and in docs/console.md. `:ca` was a command that
// neither listed.
func TestEveryCommandIsListed(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	doc, err := os.ReadFile("../docs/console.md")
	if err != nil {
		t.Fatal(err)
	}
	do(m, "?")
	helpView := ansi.Strip(m.View().Content)
	do(m, "esc")
	prompts := map[int]string{}
	for _, w := range []int{80, 120} {
		m.Update(tea.WindowSizeMsg{Width: w, Height: 24})
		do(m, ":")
		prompts[w] = ansi.Strip(m.statusLine())
		do(m, "esc")
	}
	if !strings.Contains(helpView, ":ca") {
		t.Errorf("the ? help does not list :ca:\n%s", helpView)
	}
	for _, c := range commands {
		if c.run == nil {
			t.Errorf(":%s has no run", c.name)
		}
		if !strings.Contains(helpView, ":"+c.name) {
			t.Errorf("the ? help does not list :%s", c.name)
		}
		for w, p := range prompts {
			if !strings.Contains(p+" ", " "+c.name+" ") {
				t.Errorf("a bare : at %d columns does not list %s: %q", w, c.name, p)
			}
		}
		if !strings.Contains(string(doc), "`:"+c.name) {
			t.Errorf("docs/console.md does not list :%s", c.name)
		}
	}
	// And each runs: :ca opens the CA view.
	do(m, ":")
	for _, r := range "ca" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	do(m, "enter")
	if _, ok := m.top().(*caView); !ok {
		t.Errorf(":ca opened %T", m.top())
	}
}

// A completion (tab) or the history (↑) that sets a longer line shows it
// whole: the prompt used to keep scrolled as for the shorter line, showing
// ":ers edge-lab" for ":clusters edge-lab".
func TestCommandLineShowsACompletedLineWhole(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, ":")
	for _, r := range "clusters prod-e" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	m.View()
	do(m, "tab")
	if line := ansi.Strip(m.statusLine()); !strings.HasPrefix(line, ":clusters prod-eu-1") {
		t.Errorf("after tab the command line reads %q, want it whole", line)
	}
	do(m, "enter", ":") // runs it: it is the history's last line
	m.View()
	do(m, "up")
	if line := ansi.Strip(m.statusLine()); !strings.HasPrefix(line, ":clusters prod-eu-1") {
		t.Errorf("after ↑ the command line reads %q, want it whole", line)
	}
}
