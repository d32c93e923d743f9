package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// A cluster form taller than the screen (30 namespaces) scrolls: it never
// overflows the screen, the focused line is always in view, and the error
// line and the key hints always show (issue 12, defect 5).
func TestClusterFormScrolls(t *testing.T) {
	e := newEnv(t)
	var namespaces []string
	for i := range 30 {
		namespaces = append(namespaces, fmt.Sprintf("team-%02d", i))
	}
	for _, size := range []struct{ w, h int }{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := newModel(t, e, false)
			m.Update(tea.WindowSizeMsg{Width: size.w, Height: size.h})
			f := newClusterForm(m.ctx, registry.ClusterSpec{Name: "wide", AllowedNamespaces: namespaces, Policy: registry.DefaultPolicy()}, nil, 0)
			check := func(what string, want ...string) string {
				t.Helper()
				view := ansi.Strip(f.View())
				if n := strings.Count(view, "\n") + 1; n > size.h {
					t.Fatalf("%s: the form is %d lines on a %d-line screen:\n%s", what, n, size.h, view)
				}
				for _, w := range append(want, "ctrl+s save") {
					if !strings.Contains(view, w) {
						t.Fatalf("%s: %q is not in view:\n%s", what, w, view)
					}
				}
				return view
			}
			check("opened", "Name")
			ns := -1
			for i, fd := range f.fields {
				if fd.key == "namespaces" {
					ns = i
				}
			}
			if ns < 0 {
				t.Fatal("no namespaces field")
			}
			f.focusField(ns)
			f.fields[ns].sel = 29
			check("the last namespace selected", "team-29", "↑")
			f.fields[ns].sel = 0
			check("the first namespace selected", "team-00", "↓")
			f.focusField(len(f.fields) - 1)
			f.err = "allowed namespace \"Team\" is not valid: expected a Kubernetes namespace name"
			check("the last field, with an error", "first registration token", "is not valid", "↑ ")
		})
	}
}

// The scrolled form, drawn on the screen under the header, keeps its frame:
// its bottom border and key hints are on the screen's last lines, not cut
// off below it (a form exactly as tall as the screen, placed under the
// header, lost its bottom border at 80x24 and 120x40).
func TestClusterFormFitsUnderTheHeader(t *testing.T) {
	e := newEnv(t)
	var namespaces []string
	for i := range 30 {
		namespaces = append(namespaces, fmt.Sprintf("team-%02d", i))
	}
	for _, size := range []struct{ w, h int }{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := newModel(t, e, false)
			m.Update(tea.WindowSizeMsg{Width: size.w, Height: size.h})
			m.Update(showModalMsg{modal: newClusterForm(m.ctx, registry.ClusterSpec{Name: "wide", AllowedNamespaces: namespaces, Policy: registry.DefaultPolicy()}, nil, 0)})
			lines := strings.Split(ansi.Strip(m.View().Content), "\n")
			if len(lines) != size.h {
				t.Fatalf("the screen is %d lines, want %d", len(lines), size.h)
			}
			if !strings.Contains(lines[0], "tether") {
				t.Fatalf("the header is covered: %q", lines[0])
			}
			bottom := -1
			for i, l := range lines {
				if strings.Contains(l, "╰") {
					bottom = i
				}
			}
			if bottom < 0 {
				t.Fatalf("the form's bottom border is off the screen:\n%s", strings.Join(lines, "\n"))
			}
			if !strings.Contains(lines[bottom-1], "ctrl+s save") {
				t.Fatalf("the key hints are not above the bottom border:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}
