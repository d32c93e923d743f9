package tui

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// reclaim is what happens to a held job while the person reads a requeue
// dialog about it: its lease runs out, it goes back to the queue (the
// reaper, here a requeue) and its agent, restarted, claims it again as
// attempt 2 with a new claim.
func reclaim(t *testing.T, e *env, a *registry.Agent, id string) *registry.Job {
	t.Helper()
	must(e.reg.RequeueJob(e.admin, id, "lease expired"))
	must(e.reg.AckJob(context.Background(), a, id))
	return must(e.reg.GetJob(e.admin, id))
}

func openRequeue(t *testing.T, e *env, fx fleetFixture) *Model {
	t.Helper()
	return openRequeueOver(t, e, fx, e.backend())
}

func openRequeueOver(t *testing.T, e *env, fx fleetFixture, b Backend) *Model {
	t.Helper()
	m := New(Options{Backend: b, Theme: themes.Choice{Theme: themes.Dark()}, ServerURL: "http://127.0.0.1:7070"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	pump(m, m.push(newJobDetail(m.ctx, fx.leasedJob, nil)))
	do(m, "R")
	c, ok := m.modal.(*confirm)
	if !ok || !strings.Contains(c.body, "attempt 1") {
		t.Fatalf("R opened %T, want the requeue dialog of attempt 1", m.modal)
	}
	return m
}

// A requeue confirmed for attempt 1 ran on attempt 2, claimed meanwhile by
// a healthy agent, and fenced it off: the dialog named claim A, the requeue
// fenced claim B. Now the dialog closes when the feed brings the change,
// a requeue that runs before the feed does reads the job first and leaves
// it alone, and one whose job changes after that read is refused by the
// registry, told the attempt confirmed.
func TestRequeueDoesNotHitTheNextAttempt(t *testing.T) {
	t.Run("the dialog closes", func(t *testing.T) {
		e := newEnv(t)
		fx := seedFleet(t, e)
		m := openRequeue(t, e, fx)
		j := reclaim(t, e, fx.euAgent, fx.leasedJob)
		_, cmd := m.Update(feedMsg{feed: m.feed, batch: feedBatch{Jobs: []*registry.Job{j}}})
		pump(m, cmd)
		if m.modal != nil {
			t.Fatalf("the dialog about attempt 1 stays open over attempt 2 (%s)", j.ClaimID)
		}
		if !strings.Contains(m.status, "changed while you were deciding") || !strings.Contains(m.status, j.ClaimID) {
			t.Errorf("status %q does not say the job changed", m.status)
		}
	})
	t.Run("the requeue checks first", func(t *testing.T) {
		e := newEnv(t)
		fx := seedFleet(t, e)
		m := openRequeue(t, e, fx)
		j := reclaim(t, e, fx.euAgent, fx.leasedJob)
		do(m, "y")
		after := must(e.reg.GetJob(e.admin, fx.leasedJob))
		if after.State != registry.JobInProgress || after.ClaimID != j.ClaimID {
			t.Fatalf("the requeue confirmed for attempt 1 fenced attempt 2 off: now %s, attempt %d, claim %q (was %q)",
				after.State, after.Attempt, after.ClaimID, j.ClaimID)
		}
		if view := ansi.Strip(m.View().Content); !strings.Contains(view, "changed since you confirmed") {
			t.Errorf("the outcome does not say why nothing was done:\n%s", view)
		}
	})
	t.Run("the registry checks last", func(t *testing.T) {
		e := newEnv(t)
		fx := seedFleet(t, e)
		b := &changesAfterRead{Backend: e.backend(), id: fx.leasedJob}
		var j *registry.Job
		b.then = func() { j = reclaim(t, e, fx.euAgent, fx.leasedJob) }
		m := openRequeueOver(t, e, fx, b)
		b.armed.Store(true) // the console's reread, then the job moves on
		do(m, "y")
		if j == nil || len(b.asked) != 1 {
			t.Fatalf("the job did not change between the console's read and the requeue (changed %v, requeues %v)", j != nil, b.asked)
		}
		after := must(e.reg.GetJob(e.admin, fx.leasedJob))
		if after.State != registry.JobInProgress || after.Attempt != 2 || after.ClaimID != j.ClaimID {
			t.Fatalf("the requeue confirmed for attempt 1 fenced attempt 2 off: now %s, attempt %d, claim %q (was %q)",
				after.State, after.Attempt, after.ClaimID, j.ClaimID)
		}
		if b.asked[0] != 1 {
			t.Errorf("the requeue asked for attempt %d, want the one confirmed, 1", b.asked[0])
		}
		if view := ansi.Strip(m.View().Content); !strings.Contains(view, "attempt 2 now") {
			t.Errorf("the outcome does not say the job is at attempt 2 now:\n%s", view)
		}
	})
}

// changesAfterRead is a backend whose job id changes (then) right after the
// first read of it once armed: between the console's reread and the
// registry's own. It records the attempt each requeue asked for.
type changesAfterRead struct {
	Backend
	id    string
	armed atomic.Bool
	once  sync.Once
	then  func()
	mu    sync.Mutex
	asked []int
}

func (b *changesAfterRead) GetJob(ctx context.Context, id string) (*registry.Job, error) {
	j, err := b.Backend.GetJob(ctx, id)
	if id == b.id && b.armed.Load() {
		b.once.Do(b.then)
	}
	return j, err
}

func (b *changesAfterRead) RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error) {
	b.mu.Lock()
	b.asked = append(b.asked, o.Attempt)
	b.mu.Unlock()
	return b.Backend.RequeueJobWith(ctx, id, o)
}

// A bulk requeue acts on each job at the attempt it listed it at: one whose
// lease ran out and that an agent took again between that listing and the
// registry's read is refused, its new holder left alone.
func TestBulkRequeueDoesNotHitTheNextAttempt(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	b := &changesAfterList{Backend: e.backend(), id: fx.leasedJob}
	var j *registry.Job
	b.then = func() { j = reclaim(t, e, fx.euAgent, fx.leasedJob) }
	m := New(Options{Backend: b, Theme: themes.Choice{Theme: themes.Dark()}, ServerURL: "http://127.0.0.1:7070"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	do(m, "3", "l")
	filter(m, "cluster:prod-eu-1")
	settle(t, m, m.jobs.requery())
	bulkOver(t, m, "R")
	b.armed.Store(true) // the bulk's listing, then the job moves on
	settle(t, m, press(m, "y"))
	if j == nil {
		t.Fatalf("the bulk requeue never listed job %s (status %q)", fx.leasedJob, m.status)
	}
	after := must(e.reg.GetJob(e.admin, fx.leasedJob))
	if after.State != registry.JobInProgress || after.Attempt != 2 || after.ClaimID != j.ClaimID {
		t.Fatalf("the bulk requeue of attempt 1 fenced attempt 2 off: now %s, attempt %d, claim %q (was %q)",
			after.State, after.Attempt, after.ClaimID, j.ClaimID)
	}
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "attempt 2 now") {
		t.Errorf("the outcome does not say the job is at attempt 2 now (status %q):\n%s", m.status, view)
	}
}

// changesAfterList is a backend whose job id changes (then) right after a
// bulk action's listing (oldest first, a page of bulkPage) first shows it,
// once armed.
type changesAfterList struct {
	Backend
	id    string
	armed atomic.Bool
	once  sync.Once
	then  func()
}

func (b *changesAfterList) ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	jobs, err := b.Backend.ListJobs(ctx, p)
	if b.armed.Load() && p.OldestFirst && p.Limit == bulkPage {
		for _, j := range jobs {
			if j.ID == b.id {
				b.once.Do(b.then)
			}
		}
	}
	return jobs, err
}
