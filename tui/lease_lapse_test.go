package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// TestLeaseRenewedUnseen: a lease heartbeat renews a lease without a change
// in the feed, so a job on screen keeps the lease end it was read with. When
// that end passes, the jobs view and the job's detail read the job again,
// and show the renewed lease instead of "expired"; a lease that really ran
// out is read once and then shown expired, without reading again each second.
func TestLeaseRenewedUnseen(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "3", "l") // the jobs screen, in-progress tab
	v := m.jobs
	row := func() registry.Job {
		t.Helper()
		for _, j := range v.rows {
			if j.ID == fx.leasedJob {
				return j
			}
		}
		t.Fatalf("the leased job is not in the in-progress tab")
		return registry.Job{}
	}
	first := row()
	if !first.Leased() {
		t.Fatal("the fixture's leased job has no lease")
	}
	detail := newJobDetail(m.ctx, fx.leasedJob, nil)
	pump(m, m.push(detail))
	if detail.job == nil || !detail.job.LeaseExpiresAt.Equal(first.LeaseExpiresAt) {
		t.Fatalf("detail read %+v", detail.job)
	}
	tick := func() {
		t.Helper()
		_, cmd := m.Update(tickMsg{now: e.clock.Now()}) // to every view
		pump(m, cmd)
	}

	// The agent heartbeats ten seconds before the end: nothing in the feed.
	e.clock.Set(first.LeaseExpiresAt.Add(-10 * time.Second))
	renewed := must(e.reg.HeartbeatJob(e.admin, fx.euAgent, fx.leasedJob, ""))
	tick()
	if got := row().LeaseExpiresAt; !got.Equal(first.LeaseExpiresAt) {
		t.Fatalf("before the old end the row was read again (lease %s)", got)
	}

	// The old end passes: both read the job again and show the renewed lease.
	e.clock.Set(first.LeaseExpiresAt.Add(time.Second))
	tick()
	if got := row().LeaseExpiresAt; !got.Equal(renewed) {
		t.Fatalf("after the old end the row's lease is %s, want the renewed %s", got, renewed)
	}
	if got := detail.job.LeaseExpiresAt; !got.Equal(renewed) {
		t.Fatalf("after the old end the detail's lease is %s, want the renewed %s", got, renewed)
	}
	if line := lineWith(ansi.Strip(v.View()), fx.leasedJob); strings.Contains(line, "expired") {
		t.Errorf("a renewed lease is shown expired: %q", line)
	}

	// No heartbeat this time: one read when the end passes, then "expired".
	e.clock.Set(renewed.Add(time.Second))
	tick()
	if v.dirty || detail.dirty {
		t.Fatal("a lease read after it ended is read again")
	}
	if _, cmd := m.Update(tickMsg{now: e.clock.Now().Add(time.Second)}); v.dirty {
		_ = cmd
		t.Fatal("each tick reads an expired lease again")
	}
	if line := lineWith(ansi.Strip(v.View()), fx.leasedJob); !strings.Contains(line, "expired") {
		t.Errorf("a lease that ran out is not shown expired: %q", line)
	}
}

// lineWith is the first line of s that holds sub, or "".
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
