package tui

import "testing"

// TestAuditSelectionHoldsWhileLive: with new entries arriving, the selected
// entry stays selected (it used to slide two rows per new entry, so that
// enter opened the wrong one).
func TestAuditSelectionHoldsWhileLive(t *testing.T) {
	h := startConsole(t, consoleOpts{start: "audit"})
	h.keys("j", "j", "j")
	var sel int64
	var rows int
	h.waitIdle(func(m *Model) bool {
		if m.audit.table.cursor != 3 {
			return false
		}
		sel, rows = m.audit.rows[3].ID, len(m.audit.rows)
		return true
	})
	for range 3 {
		must(h.env.reg.IssueToken(h.env.admin, h.fx.euID, 0))
	}
	h.waitIdle(func(m *Model) bool { return len(m.audit.rows) >= rows+3 })
	h.inspect(func(m *Model) {
		if got := m.audit.rows[m.audit.table.cursor].ID; got != sel {
			t.Fatalf("selection moved from entry %d to %d as 3 entries arrived", sel, got)
		}
	})
}
