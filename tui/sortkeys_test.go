package tui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// shift is the key a terminal sends for shift+letter.
func shift(m *Model, r rune) {
	_, cmd := m.Update(tea.KeyPressMsg{Code: r, ShiftedCode: r - 'a' + 'A', Mod: tea.ModShift, Text: string(r - 'a' + 'A')})
	pump(m, cmd)
	m.View() // the clusters sort as they are drawn
}

// TestSortByColumnLetter: shift+letter sorts by the column whose header
// starts with it, as k9s does; again reverses; the arrow moves there. A
// capital that is an action keeps its action, and the jobs, which the store
// pages by age only, say so rather than sort the window on screen.
func TestSortByColumnLetter(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)

	do(m, "2")
	v := m.clusters
	names := func() []string {
		var out []string
		for _, c := range v.rows {
			out = append(out, c.Name)
		}
		return out
	}
	shift(m, 'q') // QUEUED: the most queued first
	if h := ansi.Strip(v.table.header()); !strings.Contains(h, "QUEUED▼") || strings.Contains(h, "NAME▲") {
		t.Fatalf("shift+q: the header is %q, want QUEUED▼", h)
	}
	shift(m, 'n')
	if h := ansi.Strip(v.table.header()); !strings.Contains(h, "NAME▲") || strings.Contains(h, "QUEUED▼") {
		t.Fatalf("shift+n: the header is %q, want NAME▲", h)
	}
	if got := names(); len(got) < 3 || !slices.IsSorted(got) {
		t.Fatalf("shift+n: clusters read %v", got)
	}
	shift(m, 'n')
	if got := names(); !slices.IsSortedFunc(got, func(a, b string) int { return strings.Compare(b, a) }) || !strings.Contains(ansi.Strip(v.table.header()), "NAME▼") {
		t.Fatalf("shift+n again: clusters read %v, header %q; want reversed, NAME▼", got, ansi.Strip(v.table.header()))
	}
	// S is reverse, not STATE: the action wins.
	shift(m, 's')
	if got := names(); !slices.IsSorted(got) || !strings.Contains(ansi.Strip(v.table.header()), "NAME▲") {
		t.Errorf("S: clusters read %v, want the reverse reversed (S keeps its meaning)", got)
	}

	// Events: K sorts by kind.
	do(m, "4")
	shift(m, 'k')
	if h := ansi.Strip(m.events.table.header()); !strings.Contains(h, "KIND▲") {
		t.Errorf("events, shift+k: the header is %q, want KIND▲", h)
	}

	// Jobs: T is TARGET, which the store cannot page by.
	do(m, "3")
	shift(m, 't')
	if !strings.Contains(m.status, "cannot sort by TARGET") {
		t.Errorf("jobs, shift+t: status %q, want it to say jobs cannot sort by TARGET", m.status)
	}
	if h := ansi.Strip(m.jobs.table().header()); !strings.Contains(h, "AGE▲") || strings.Contains(h, "TARGET▲") {
		t.Errorf("jobs, shift+t: the header is %q, want AGE▲ still", h)
	}
	// R is requeue in the jobs: it never sorts (a letter shared by an
	// action anywhere never does).
	if _, ok := columnSortKey(m.jobs.table(), tea.KeyPressMsg{Code: 'r', Mod: tea.ModShift, Text: "R"}); ok {
		t.Error("R is taken as a sort key, want requeue")
	}
}

// TestWideScrollShowsLaterColumns: in the wide layout, wider than the
// screen, → scrolls the columns with the name column kept; ← comes back.
func TestWideScrollShowsLaterColumns(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	do(m, "2", "w")
	m.View()
	h := ansi.Strip(m.clusters.table.header())
	if strings.Contains(h, "WRITES") {
		t.Skipf("the wide clusters fit in 80 columns: %q", h)
	}
	for range 12 {
		do(m, "right")
	}
	m.View()
	h = ansi.Strip(m.clusters.table.header())
	if !strings.HasPrefix(h, "NAME") || !strings.Contains(h, "WRITES") || strings.Contains(h, " ID ") {
		t.Fatalf("scrolled right, the header is %q: want NAME kept, then the last columns", h)
	}
	for range 12 {
		do(m, "left")
	}
	m.View()
	if h = ansi.Strip(m.clusters.table.header()); !strings.Contains(h, " ID ") {
		t.Errorf("scrolled back, the header is %q, want ID again", h)
	}
}
