package tui

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// TestLiveListsSortByAnyColumn: s, < and S sort the events and the audit
// trail by any column, with the arrow in the header as in the other lists;
// the selection stays on its record as rows arrive and as the order
// changes; s around the columns comes back to the newest first.
func TestLiveListsSortByAnyColumn(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)

	// Events by cluster.
	v := m.events
	do(m, "4")
	if h := ansi.Strip(v.table.header()); !strings.Contains(h, "TIME▼") {
		t.Fatalf("the events header is %q, want TIME▼ (the newest first)", h)
	}
	do(m, "s")
	names := func() []string {
		var out []string
		for _, r := range v.rows {
			out = append(out, m.ctx.Fleet.clusterName(r.ClusterID))
		}
		return out
	}
	if h := ansi.Strip(v.table.header()); !strings.Contains(h, "CLUSTER▲") || strings.Contains(h, "TIME▼") {
		t.Errorf("sorted by cluster, the header is %q", h)
	}
	if got := names(); len(got) < 3 || !slices.IsSorted(got) || got[0] == got[len(got)-1] {
		t.Fatalf("s: the events by cluster read %v", got)
	}
	do(m, "j", "j")
	sel := v.rows[v.table.cursor].ID
	last := v.rows[len(v.rows)-1].ClusterID // sorts last
	v.Update(feedMsg{batch: feedBatch{Events: []registry.Event{{ID: 99999, ClusterID: last, Kind: registry.EventAudit, ReceivedAt: e.clock.Now()}}}})
	if got := v.rows[v.table.cursor].ID; got != sel {
		t.Errorf("an event arriving moved the selection from %d to %d", sel, got)
	}
	if i := slices.IndexFunc(v.rows, func(r *registry.Event) bool { return r.ID == 99999 }); i == 0 {
		t.Error("sorted by cluster, a new event went on top instead of in its place")
	}
	do(m, "S")
	if got := names(); !slices.IsSortedFunc(got, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("S: the events by cluster, reversed, read %v", got)
	}
	if h := ansi.Strip(v.table.header()); !strings.Contains(h, "CLUSTER▼") {
		t.Errorf("reversed, the header is %q", h)
	}
	if got := v.rows[v.table.cursor].ID; got != sel {
		t.Errorf("S moved the selection from %d to %d", sel, got)
	}
	do(m, "<")
	if !v.asRead() || v.rows[0].ID != 99999 {
		t.Errorf("< back on TIME: the first row is %d, want the newest (99999)", v.rows[0].ID)
	}

	// The audit trail by action, and around every column back to the time.
	a := m.audit
	do(m, "5", "s", "s")
	actions := func() []string {
		var out []string
		for _, r := range a.rows {
			out = append(out, r.Action)
		}
		return out
	}
	if h := ansi.Strip(a.table.header()); !strings.Contains(h, "ACTION▲") {
		t.Errorf("s s: the audit header is %q, want ACTION▲", h)
	}
	if got := actions(); !slices.IsSorted(got) || got[0] == got[len(got)-1] {
		t.Errorf("the audit trail by action reads %v", got)
	}
	do(m, "s", "s", "s", "s")
	if !a.asRead() || !slices.IsSortedFunc(a.rows, func(x, y *registry.AuditEntry) int { return int(y.ID - x.ID) }) {
		t.Error("s past the last column: the audit trail is not back to the newest first")
	}
}

// TestJobsPauseLikeTheTails: f pauses the jobs as it pauses the events and
// the audit trail (the same liveFollow): the rows hold still while the
// queue moves, the title counts what changed, and f reads the window again
// with the selection on its job.
func TestJobsPauseLikeTheTails(t *testing.T) {
	q := newBusyQueue(t, 50, 120, 40)
	v := q.m.jobs
	do(q.m, "j", "j")
	sel := q.selected()
	do(q.m, "f")
	if v.follow {
		t.Fatal("f did not pause the jobs")
	}
	top := v.rows[0]
	q.submit(5)
	fresh := must(q.e.reg.ListJobs(q.e.admin, registry.JobListParams{Limit: 5}))
	var batch []*registry.Job
	for i := range fresh {
		batch = append(batch, &fresh[i])
	}
	moved := top
	moved.Phase = "Verifying"
	batch = append(batch, &moved)
	v.Update(feedMsg{batch: feedBatch{Jobs: batch}})
	if v.dirty || v.waiting != 6 || v.rows[0].ID != top.ID || v.rows[0].Phase == "Verifying" {
		t.Fatalf("paused: dirty %v, %d waiting, top %s (phase %q); want the rows as they were and 6 changes counted",
			v.dirty, v.waiting, v.rows[0].Target.Name, v.rows[0].Phase)
	}
	if title := ansi.Strip(strings.SplitN(v.View(), "\n", 2)[0]); !strings.Contains(title, "paused, 6 changed (f resumes)") {
		t.Errorf("the title does not count the changes: %q", title)
	}
	do(q.m, "f")
	if !v.follow || v.waiting != 0 || v.rows[0].Target.Name != "app-55" {
		t.Fatalf("after f: following %v, %d waiting, top %s; want the newest job (app-55) read from the store", v.follow, v.waiting, v.rows[0].Target.Name)
	}
	if got := q.selected(); got != sel {
		t.Errorf("the selection moved from %s to %s", sel, got)
	}
}

// o with every record loaded (or the most the console keeps) says so,
// rather than do nothing without a word.
func TestLiveListsOlderSaysWhyNothingLoads(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	for _, screen := range []string{"4", "5"} {
		m.status = ""
		do(m, screen, "o")
		if !strings.Contains(m.status, "are loaded: there are no older ones") {
			t.Errorf("screen %s: o over everything said %q", screen, m.status)
		}
	}
	v := m.events
	v.spec.keep = len(v.all) // full: nothing older is read
	v.oldest = false
	m.status = ""
	do(m, "4", "o")
	if !strings.Contains(m.status, "holds at most") {
		t.Errorf("o with the events full said %q", m.status)
	}
}
