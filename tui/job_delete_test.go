package tui

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestDeleteJobFromTheConsole: D on a finished job's detail asks, y deletes
// it (audited as the console's user) and goes back to the list; D on a
// queued job in the list says to cancel it first and asks nothing.
func TestDeleteJobFromTheConsole(t *testing.T) {
	h := startConsole(t, consoleOpts{start: "jobs"})
	h.keys("D") // the queued tab: the first job is queued
	h.waitIdle(func(m *Model) bool { return strings.Contains(m.status, "cancel it first") })
	h.inspect(func(m *Model) {
		if m.modal != nil {
			t.Fatalf("D on a queued job opened %T", m.modal)
		}
	})

	h.keys(":")
	h.typeText("job " + h.id(h.fx.exhaustedJob))
	h.keys("enter")
	h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
	h.keys("D")
	h.waitIdle(isModal[*confirm])
	if frame := h.frame(); !strings.Contains(frame, "Delete job") || !strings.Contains(frame, "deleted for good") {
		t.Fatalf("the confirmation does not say what it deletes:\n%s", frame)
	}
	h.keys("y")
	h.waitIdle(func(m *Model) bool { return topIs[*jobsView](m) && strings.Contains(m.status, "deleted") })
	if _, err := h.env.reg.GetJob(h.env.admin, h.fx.exhaustedJob); registry.ErrorCode(err) != registry.CodeNotFound {
		t.Fatalf("the job after D, y: %v", err)
	}
	entries := must(h.env.reg.ListAudit(h.env.admin, registry.AuditListParams{Action: registry.AuditJobDelete}))
	if len(entries) != 1 || entries[0].TargetID != h.fx.exhaustedJob || entries[0].Actor != "admin:alice" ||
		!strings.HasSuffix(entries[0].Reason, "deleted from the console") {
		t.Fatalf("audit %+v", entries)
	}
}

// TestDeleteJobReadOnly: a read-only console offers no delete.
func TestDeleteJobReadOnly(t *testing.T) {
	h := startConsole(t, consoleOpts{start: "jobs", readOnly: true})
	h.keys("l", "l", "l", "l") // the all tab
	h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabAll && m.jobs.loaded })
	h.keys("D")
	h.waitIdle(func(*Model) bool { return true })
	h.inspect(func(m *Model) {
		if m.modal != nil {
			t.Fatalf("D in a read-only console opened %T", m.modal)
		}
	})
}

// TestDeletedJobLeavesTheList: a job deleted elsewhere (the CLI, the API)
// leaves the jobs list through the watch, and an open detail says so.
func TestDeletedJobLeavesTheList(t *testing.T) {
	h := startConsole(t, consoleOpts{start: "jobs"})
	h.keys("l", "l", "l", "l") // the all tab
	has := func(m *Model) bool {
		return slicesContainsJob(m.jobs.rows, h.id(h.fx.exhaustedJob))
	}
	h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabAll && m.jobs.loaded && has(m) })
	must(h.env.reg.DeleteJob(h.env.admin, h.fx.exhaustedJob, "from elsewhere"))
	h.waitIdle(func(m *Model) bool { return !has(m) })
}

func slicesContainsJob(rows []registry.Job, id string) bool {
	for _, j := range rows {
		if j.ID == id {
			return true
		}
	}
	return false
}
