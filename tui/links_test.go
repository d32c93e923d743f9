package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// A job's `retry of` and `retried as` are links: enter opens the selected
// one over the job (esc comes back), ] selects the next; a `retry of` whose
// job was deleted says so and opens nothing (issue 30).
func TestJobDetailOpensLinkedJobs(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	failed, err := e.reg.ListJobs(context.Background(), registry.JobListParams{States: []registry.JobState{registry.JobFailed}})
	if err != nil || len(failed) == 0 {
		t.Fatalf("no failed job in the fixture: %v", err)
	}
	orig := failed[0].ID
	r1 := must(e.reg.RetryJob(e.admin, orig, "first"))
	m := newModel(t, e, false)
	load(t, m, e)

	runCmd(m, "job "+r1.ID)
	pump(m, nil)
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "▸ "+orig) {
		t.Fatalf("the retry's detail does not offer its original as a link:\n%s", view)
	}
	do(m, "enter")
	d, ok := m.top().(*jobDetail)
	if !ok || d.id != orig {
		t.Fatalf("enter on `retry of` opened %T %v; want the job %s", m.top(), d, orig)
	}
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "▸ "+r1.ID) {
		t.Fatalf("the original's detail does not link its retry:\n%s", view)
	}
	do(m, "esc")
	if d, ok := m.top().(*jobDetail); !ok || d.id != r1.ID {
		t.Fatalf("esc from the linked job: top %T; want the retry again", m.top())
	}

	// The original deleted: the link says so and leads nowhere.
	if _, err := e.reg.DeleteJob(e.admin, orig, "cleanup"); err != nil {
		t.Fatal(err)
	}
	do(m, "esc")
	runCmd(m, "job "+r1.ID)
	view := ansi.Strip(m.View().Content)
	if !strings.Contains(view, orig+" (deleted)") || strings.Contains(view, "▸ "+orig) {
		t.Fatalf("the retry of a deleted job still links to it:\n%s", view)
	}
	do(m, "enter")
	if d, ok := m.top().(*jobDetail); !ok || d.id != r1.ID || !strings.Contains(m.status, "was deleted") {
		t.Fatalf("enter on a deleted `retry of`: top %T, status %q", m.top(), m.status)
	}
}

// Small things on-call reads (issue 30): a focused form label is whole
// ("▸ Catalog entries", not "▸ Catalog entri"), a rollout's job state
// reads as the jobs view says it, a confirmation's way out is not called
// "cancel" next to "cancel them", the all tab's empty filter says "no job
// matches".
func TestConsoleWordsOnCall(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)

	do(m, "2", "n")
	for range 4 { // Name, Organization, Mode, Namespaces, then Catalog entries
		do(m, "tab")
	}
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "▸ Catalog entries") {
		t.Errorf("the focused label is cut:\n%s", view)
	}
	do(m, "esc")
	for isForm := true; isForm; {
		_, isForm = m.modal.(*clusterForm)
		if isForm {
			do(m, "esc")
		}
	}

	do(m, "3", "space", "C")
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "n/esc do nothing") {
		t.Errorf("the cancel confirmation's way out:\n%s", view)
	}
	do(m, "n", "u")

	runCmd(m, "jobs all nothing-is-called-this")
	pump(m, m.jobs.requery())
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "no job matches /nothing-is-called-this") {
		t.Errorf("the all tab's empty filter:\n%s", view)
	}
}

// An audit entry's target opens from the entry: enter on the entry shows
// it, enter again opens its job (esc comes back to the audit trail).
func TestAuditEntryOpensItsTarget(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	must(e.reg.CancelJob(e.admin, fx.strandedJob, "on-call"))
	m := newModel(t, e, false)
	load(t, m, e)
	runCmd(m, "audit action:job.cancel")
	if len(m.audit.rows) == 0 {
		t.Fatal("no job.cancel entry in the audit trail")
	}
	do(m, "enter")
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "enter open job") {
		t.Fatalf("the entry does not offer its job:\n%s", view)
	}
	do(m, "enter")
	if d, ok := m.top().(*jobDetail); !ok || d.id != fx.strandedJob || m.screen != screenAudit {
		t.Fatalf("enter on the entry opened %T on screen %d; want the job %s", m.top(), m.screen, fx.strandedJob)
	}
	do(m, "esc")
	if m.top() != m.audit {
		t.Fatalf("esc from the entry's job: top %T", m.top())
	}
}
