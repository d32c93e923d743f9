package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
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
	m := newModel(t, e, false)
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
// and a requeue that runs before the feed does reads the job first and
// leaves it alone.
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
}
