package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// rowsSource is a tableSource over fixed rows of plain text.
type rowsSource [][]string

func (r rowsSource) rowCount() int       { return len(r) }
func (r rowsSource) marked(int) bool     { return false }
func (r rowsSource) rowKey(i int) string { return strings.Join(r[i], "|") }
func (r rowsSource) rowCells(i int) []cell {
	var cells []cell
	for _, s := range r[i] {
		cells = append(cells, txt(s, themes.Plain))
	}
	return cells
}

// Columns size to what they show: a name is not cut while an id column
// keeps room it does not need, and ids give up their width first, down to
// the prefix that keeps them distinct (issue 12, defect 4).
func TestColumnsFitTheirContent(t *testing.T) {
	rows := rowsSource{
		{"j-01m88nn8s45hkn1az5dgzahdwb", "tmp-delete-me", "Deployment/payments/queued-payments", "queued"},
		{"j-01m88nn8s4xq7tb2mk0c9vj3fe", "prod-eu-1", "Deployment/web/api", "in_progress"},
		{"j-01m88pq2aaaaaaaaaaaaaaaaaa", "staging", "ConfigMap/default/x", "queued"},
	}
	tb := newTable([]column{
		{Title: "ID", Width: 28, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "CLUSTER", Width: 10, Min: 8, Flex: 1, Fit: true},
		{Title: "TARGET", Width: 20, Min: 10, Flex: 2, Fit: true},
		{Title: "STATE", Width: 13, Min: 8, Fit: true},
	})
	tb.setStyles(themes.NewStyles(themes.Dark()))
	for _, width := range []int{120, 80, 64} {
		tb.setSize(width, 10)
		view := ansi.Strip(tb.view(rows, ""))
		wants := []string{"tmp-delete-me", "Deployment/payments/queued-payments", "in_progress"}
		if width < 80 {
			wants = wants[2:] // too narrow for everything: ids are cut first, then names and targets share
		}
		for _, want := range wants {
			if !strings.Contains(view, want) {
				t.Errorf("at %d columns %q is cut:\n%s", width, want, view)
			}
		}
		// The ids stay told apart: each shown prefix is distinct.
		seen := map[string]bool{}
		for _, line := range strings.Split(view, "\n")[1:4] {
			id := strings.Fields(line)[0]
			if seen[id] {
				t.Errorf("at %d columns two ids show as %q:\n%s", width, id, view)
			}
			seen[id] = true
		}
	}
}
