package tui

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// settle feeds cmd's messages to the model until nothing more comes, waiting
// as long as a bulk action takes; ticks are not fed (they re-arm forever).
func settle(t *testing.T, m *Model, cmd tea.Cmd) {
	t.Helper()
	for range 20 {
		var next []tea.Cmd
		for _, msg := range exec(cmd, 2*time.Minute) {
			switch msg.(type) {
			case spinner.TickMsg, tickMsg, feedTickMsg, feedMsg, jobsFilterMsg, jobsReloadMsg, jobsCountTickMsg:
				continue
			}
			_, c := m.Update(msg)
			next = append(next, c)
		}
		if len(next) == 0 {
			return
		}
		cmd = tea.Batch(next...)
	}
}

// bulkOver asks for a bulk action (A, then key) on the jobs view as it is,
// and returns the confirmation it opens.
func bulkOver(t *testing.T, m *Model, key string) *confirm {
	t.Helper()
	if !m.jobs.all {
		settle(t, m, press(m, "A"))
	}
	settle(t, m, press(m, key))
	c, ok := m.modal.(*confirm)
	if !ok {
		t.Fatalf("A %s opened %T (status %q)", key, m.modal, m.status)
	}
	return c
}

func countJobs(t *testing.T, e *env, p registry.JobListParams) int {
	t.Helper()
	return must(e.reg.CountJobs(e.admin, p))
}

func countAudit(t *testing.T, e *env, action string) int {
	t.Helper()
	n, before := 0, int64(0)
	for {
		page := must(e.reg.ListAudit(e.admin, registry.AuditListParams{Action: action, BeforeID: before, Limit: 500}))
		n += len(page)
		if len(page) < 500 {
			return n
		}
		before = page[len(page)-1].ID
	}
}

// TestBulkActions: A marks the whole tab as filtered, and R, C, F, D count
// in the background what they will act on and skip (and why), ask once,
// and act on every job of it, each its own audited registry operation,
// across more than one page; over both backends.
func TestBulkActions(t *testing.T) {
	bothBackends(t, func(t *testing.T, m *Model, e *env, fx fleetFixture) {
		c, _ := e.cluster(t, registry.ClusterSpec{Name: "bulk", AllowedNamespaces: []string{"*"}})
		const n = 450 // more than two pages of bulkPage
		for i := range n {
			e.submit(t, c.ID, "default", fmt.Sprintf("b-%d", i))
		}
		m.ctx.Fleet.setClusters(must(m.ctx.Backend.ListClusters(e.admin, registry.ClusterListParams{})))
		in := registry.JobListParams{ClusterIDs: []string{c.ID}}
		byState := func(s registry.JobState) int {
			p := in
			p.States = []registry.JobState{s}
			return countJobs(t, e, p)
		}

		do(m, "3")
		filter(m, "cluster:bulk")
		settle(t, m, m.jobs.requery())
		cf := bulkOver(t, m, "C")
		if cf.title != "Cancel 450 jobs?" || !strings.Contains(cf.body, "450 of the 450 jobs in the queued tab, /cluster:bulk can be canceled") {
			t.Fatalf("cancel: %q %q", cf.title, cf.body)
		}
		settle(t, m, press(m, "y"))
		if got := byState(registry.JobCanceled); got != n {
			t.Fatalf("canceled %d of %d jobs (status %q)", got, n, m.status)
		}
		if got := countAudit(t, e, registry.AuditJobCancel); got != n {
			t.Errorf("%d job.cancel audit entries, want one per job (%d)", got, n)
		}
		if m.jobs.all || !strings.Contains(m.status, "canceled 450 jobs") {
			t.Errorf("after the bulk cancel: all %v, status %q", m.jobs.all, m.status)
		}

		// The all tab: retry the canceled ones.
		do(m, "l", "l", "l", "l")
		settle(t, m, m.jobs.requery())
		rt := bulkOver(t, m, "F")
		if rt.title != "Retry 450 jobs?" {
			t.Fatalf("retry: %q %q", rt.title, rt.body)
		}
		settle(t, m, press(m, "y"))
		if got := byState(registry.JobQueued); got != n {
			t.Fatalf("%d retries queued, want %d (status %q)", got, n, m.status)
		}
		if got := countAudit(t, e, registry.AuditJobRetry); got != n {
			t.Errorf("%d job.retry audit entries, want %d", got, n)
		}

		// Delete over the all tab: the queued retries are skipped, and the
		// dialog says how many and why.
		settle(t, m, m.jobs.requery())
		del := bulkOver(t, m, "D")
		if del.title != "Delete 450 jobs?" || !strings.Contains(del.body, "Skipped: 450 queued (only finished jobs can be deleted") {
			t.Fatalf("delete: %q %q", del.title, del.body)
		}
		settle(t, m, press(m, "y"))
		if got, left := byState(registry.JobCanceled), byState(registry.JobQueued); got != 0 || left != n {
			t.Errorf("after the bulk delete: %d canceled left, %d queued (want 0, %d)", got, left, n)
		}

		// Requeue over the queued: nothing applies, and it says why.
		settle(t, m, m.jobs.requery())
		settle(t, m, press(m, "A"))
		settle(t, m, press(m, "R"))
		if m.modal != nil || !strings.Contains(m.status, "can be requeued") {
			t.Errorf("requeue over queued jobs: modal %T status %q", m.modal, m.status)
		}
	})
}

// TestBulkProgressInTheStatusLine: a running bulk action counts its
// progress in the status line.
func TestBulkProgressInTheStatusLine(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	p := &bulkProgress{total: 4500}
	p.done.Add(1200)
	p.fail("j-1", registry.Errorf(registry.CodeConflict, "changed"))
	m.running[1], m.progress[1] = "retry 4,500 jobs", p
	if got := m.statusLine(); !strings.Contains(got, "retry 4,500 jobs: 1,201 of 4,500, 1 failed") {
		t.Errorf("status line %q", got)
	}
}

// gatedCancels holds the at-th CancelJob until release: the test presses a
// key while a bulk action is between two known jobs.
type gatedCancels struct {
	Backend
	calls   atomic.Int32
	at      int32
	reached chan struct{}
	release chan struct{}
}

func (g *gatedCancels) CancelJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	j, err := g.Backend.CancelJob(ctx, id, reason)
	if g.calls.Add(1) == g.at {
		close(g.reached)
		<-g.release
	}
	return j, err
}

// TestBulkActionStops: esc while a bulk action runs stops it between two
// jobs (the one in hand completes), and the outcome says how far it got;
// the status line offers esc while it runs.
func TestBulkActionStops(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster(t, registry.ClusterSpec{Name: "bulk", AllowedNamespaces: []string{"*"}})
	const n = 40
	for i := range n {
		e.submit(t, c.ID, "default", fmt.Sprintf("b-%d", i))
	}
	g := &gatedCancels{Backend: e.backend(), at: 5, reached: make(chan struct{}), release: make(chan struct{})}
	m := New(Options{Backend: g, Theme: themes.Choice{Theme: themes.Dark()}})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	do(m, "3")
	cf := bulkOver(t, m, "C")
	if !strings.Contains(cf.body, "esc stops them") {
		t.Errorf("the confirmation does not say how to stop: %q", cf.body)
	}
	// y: the confirmation asks the root to run the action; run it by hand,
	// so that the test presses esc while it is held at the fifth job.
	var run runActionMsg
	for _, msg := range exec(press(m, "y"), time.Second) {
		if r, ok := msg.(runActionMsg); ok {
			run = r
		}
	}
	if run.progress == nil {
		t.Fatal("y did not start the bulk cancel")
	}
	_, start := m.Update(run)
	msgs := make(chan []tea.Msg, 1)
	go func() { msgs <- exec(start, time.Minute) }()
	<-g.reached
	if line := ansi.Strip(m.statusLine()); !strings.Contains(line, "esc stops") {
		t.Errorf("while it runs the status line reads %q, want esc offered", line)
	}
	m.Update(keyMsg("esc"))
	if line := ansi.Strip(m.statusLine()); !strings.Contains(line, "stopping") {
		t.Errorf("after esc the status line reads %q, want stopping", line)
	}
	close(g.release)
	for _, msg := range <-msgs {
		if done, ok := msg.(actionDoneMsg); ok {
			m.Update(done)
		}
	}
	if got := countJobs(t, e, registry.JobListParams{ClusterIDs: []string{c.ID}, States: []registry.JobState{registry.JobCanceled}}); got != 5 {
		t.Errorf("%d jobs canceled, want the 5 up to esc", got)
	}
	if want := "canceled 5 jobs in the queued tab, stopped (esc) after 5 of 40"; !strings.Contains(m.status, want) {
		t.Errorf("status %q, want %q", m.status, want)
	}
	if len(m.running) != 0 || m.jobs.all {
		t.Errorf("after the stop: %d running, tab marked %v", len(m.running), m.jobs.all)
	}
}
