package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// A cluster: filter reads the trail page by page: a full page says that
// older entries are there and o reads them, rather than end silently at the
// page's size (issue 30).
func TestAuditClusterFilterSaysMoreAreOlder(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	v := m.audit
	v.spec.page = 3 // the seeded trail of prod-eu-1 holds more than a few pages of 3
	do(m, "5")
	v.table.setSize(80, 5) // a screenful is 4 rows: 2 pages fill it
	pump(m, v.SetFilter("cluster:prod-eu-1"))
	if len(v.rows) != 6 || v.oldest {
		t.Fatalf("the filtered trail holds %d entries (all read: %v), want 2 pages of 3 and more in the store", len(v.rows), v.oldest)
	}
	title := ansi.Strip(strings.Split(v.View(), "\n")[0])
	if !strings.Contains(title, "6 shown") || !strings.Contains(title, "o loads older") {
		t.Errorf("a full page of the filtered trail says %q: nothing tells that older entries exist", title)
	}
	do(m, "o")
	if len(v.rows) <= 6 {
		t.Errorf("o read no older entries: %d shown", len(v.rows))
	}
	// Everything read: nothing more is promised.
	for range 20 {
		if v.oldest {
			break
		}
		do(m, "o")
	}
	if title := ansi.Strip(strings.Split(v.View(), "\n")[0]); strings.Contains(title, "older") {
		t.Errorf("with the whole trail read the title still says %q", title)
	}
}
