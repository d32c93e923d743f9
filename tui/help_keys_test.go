package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// helpBindings are the bindings the help of the view on top lists.
func helpBindings(m *Model) []key.Binding {
	var out []key.Binding
	for _, g := range m.top().KeyMap().FullHelp() {
		out = append(out, g...)
	}
	return out
}

// listsKey reports whether help lists a binding that takes k.
func listsKey(help []key.Binding, k string) bool {
	return slices.ContainsFunc(help, func(b key.Binding) bool { return b.Enabled() && slices.Contains(b.Keys(), k) })
}

// listsSort reports whether help lists k as a sort key.
func listsSort(help []key.Binding, k string) bool {
	return slices.ContainsFunc(help, func(b key.Binding) bool {
		return b.Enabled() && slices.Contains(b.Keys(), k) && strings.HasPrefix(b.Help().Desc, "sort by")
	})
}

// The ? help lists exactly the keys a view takes: every shift+letter that
// sorts its table (and none that does not), and in the wide layout the
// keys that scroll its columns (and none in the narrow one, where they do
// nothing). Each view is driven with the keys themselves.
func TestHelpListsExactlyTheKeysEachViewTakes(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	must(e.reg.CreateRollout(e.admin, registry.RolloutSpec{
		Name: "config-v2-every-production-cluster-but-the-canaries", Selector: "!canary", Kind: registry.KindApply, MaxParallel: 2,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"default"}}`),
	}))
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	load(t, m, e)

	type view struct {
		name  string
		open  func()
		table func() *table
	}
	jobsTab := func(tab int) func() {
		return func() {
			do(m, "3")
			pump(m, m.jobs.setTab(tab))
		}
	}
	views := []view{
		{"clusters", func() { do(m, "2") }, func() *table { return m.clusters.table }},
		{"jobs", jobsTab(tabQueued), func() *table { return m.jobs.table() }},
		{"stuck jobs", jobsTab(tabStuck), func() *table { return m.jobs.table() }},
		{"failed jobs", jobsTab(tabFailed), func() *table { return m.jobs.table() }},
		{"events", func() { do(m, "4") }, func() *table { return m.events.table }},
		{"audit", func() { do(m, "5") }, func() *table { return m.audit.table }},
		{"rollouts", func() { do(m, "1", ":", "r", "o", "l", "l", "o", "u", "t", "s", "enter") },
			func() *table { return m.top().(*rolloutsView).table }},
		{"rollout", func() { do(m, "1", ":", "r", "o", "l", "l", "o", "u", "t", "s", "enter", "enter") },
			func() *table { return m.top().(*rolloutDetail).table }},
	}
	sorts := map[string][]string{}
	for _, wide := range []bool{false, true} {
		m.ctx.Wide = wide
		for _, v := range views {
			name := fmt.Sprintf("%s (wide %v)", v.name, wide)
			v.open()
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 24}) // lays the table out as wide or not
			m.View()
			tb := v.table()
			help := helpBindings(m)

			// Every capital that is not an action anywhere: it sorts
			// (the arrow moves or turns) exactly when the help lists it.
			for c := 'A'; c <= 'Z'; c++ {
				if actionCapitals[string(c)] {
					if listsSort(help, string(c)) {
						t.Errorf("%s: the help lists %c as a sort key; it is an action", name, c)
					}
					continue
				}
				col, arrow := tb.sortCol, tb.sortDesc
				shift(m, c+'a'-'A')
				sorted := tb.sortCol != col || tb.sortDesc != arrow
				if listed := listsSort(help, string(c)); sorted != listed {
					t.Errorf("%s: %c sorts: %v; the help lists it: %v", name, c, sorted, listed)
				}
				if sorted {
					sorts[name] = append(sorts[name], string(c))
				}
				if m.modal != nil {
					t.Fatalf("%s: %c opened a modal", name, c)
				}
			}

			// The keys that scroll the columns.
			scrolls := []string{"shift+right", "shift+left"}
			if v.name != "jobs" && v.name != "stuck jobs" && v.name != "failed jobs" {
				scrolls = append(scrolls, "right", "left", "l", "h")
			}
			for i := 0; i < len(scrolls); i += 2 {
				if wide && !tb.overflows() {
					t.Fatalf("%s: the wide layout fits 80 columns: nothing to scroll", name)
				}
				right, left := scrolls[i], scrolls[i+1]
				for _, k := range []string{right, left} {
					if listed := listsKey(help, k); listed != wide {
						t.Errorf("%s: the help lists %s: %v, want %v", name, k, listed, wide)
					}
				}
				m.Update(scrollKey(right))
				if got := tb.hscroll; got != map[bool]int{false: 0, true: 1}[wide] {
					t.Errorf("%s: after %s the columns scrolled by %d", name, right, got)
				}
				m.Update(scrollKey(left))
				if tb.hscroll != 0 {
					t.Errorf("%s: after %s the columns scrolled by %d, want 0", name, left, tb.hscroll)
				}
			}
			if wide {
				overlay := ansi.Strip(m.helpModal().View())
				if !strings.Contains(overlay, "scroll columns right") {
					t.Errorf("%s: the ? overlay does not say how to scroll the columns:\n%s", name, overlay)
				}
			}
		}
	}
	// The views that sort by a letter do, and say so in the overlay.
	for name, want := range map[string][]string{
		"clusters (wide false)": {"H", "I", "M", "N", "O", "Q", "W"},
		"events (wide false)":   {"K", "T"},
		"audit (wide false)":    {"T"},
		"rollouts (wide false)": {"N"},
	} {
		if got := sorts[name]; !slices.Equal(got, want) {
			t.Errorf("%s: the letters that sort are %v, want %v", name, got, want)
		}
	}
	do(m, "2", "?")
	if overlay := ansi.Strip(m.View().Content); !strings.Contains(overlay, "sort by heartbeat") {
		t.Errorf("the clusters' ? overlay does not list H sort by heartbeat:\n%s", overlay)
	}
}

// scrollKey is the key press for a key name of the scroll test (h, l, the
// arrows with or without shift).
func scrollKey(k string) tea.KeyPressMsg {
	if dir, ok := strings.CutPrefix(k, "shift+"); ok {
		msg := keyMsg(dir)
		msg.Mod = tea.ModShift
		return msg
	}
	return keyMsg(k)
}
