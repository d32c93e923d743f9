package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// expiringJobs submits n jobs to a new cluster "late", expiring in 5
// minutes, lets its agent take them all, and moves the clock 10 minutes on:
// requeued as they are, they would expire at once.
func expiringJobs(t *testing.T, e *env, n int) []string {
	t.Helper()
	c, tok := e.cluster(t, registry.ClusterSpec{Name: "late", AllowedNamespaces: []string{"*"}})
	a := e.agent(t, tok)
	var ids []string
	for i := range n {
		payload := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late-%d","namespace":"default"}}`, i)
		j, _, err := e.reg.SubmitJob(e.admin, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(payload), ExpiresIn: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		must(e.reg.AckJob(e.admin, a, j.ID))
		ids = append(ids, j.ID)
	}
	e.clock.Advance(10 * time.Minute)
	return ids
}

// R on a job past its expiry warns in the dialog, and e requeues it with
// its expiry an hour from now, so that it does not expire at once.
func TestRequeuePastExpiryWarnsAndExtends(t *testing.T) {
	e := newEnv(t)
	ids := expiringJobs(t, e, 2)
	m := newModel(t, e, false)
	load(t, m, e)
	m.ctx.Now = e.clock.Now()
	m.screen = screenJobs
	for i, id := range ids {
		pump(m, m.push(newJobDetail(m.ctx, id, must(e.reg.GetJob(e.admin, id)))))
		press(m, "R")
		c, ok := m.modal.(*confirm)
		if !ok || !strings.Contains(c.body, "⚠ It expired 5m ago") || !strings.Contains(c.body, "it expires at once") || c.alt == nil {
			t.Fatalf("R on a job past its expiry opened %T: %+v", m.modal, m.modal)
		}
		if !strings.Contains(m.View().Content, "requeue, expiry +1h") {
			t.Errorf("the dialog does not offer e:\n%s", m.View().Content)
		}
		key := map[int]string{0: "e", 1: "y"}[i]
		do(m, key)
		j := must(e.reg.GetJob(e.admin, id))
		switch {
		case j.State != registry.JobQueued:
			t.Errorf("%s: the job is %s", key, j.State)
		case key == "e" && !j.ExpiresAt.Equal(e.clock.Now().Add(time.Hour)):
			t.Errorf("e: the job expires at %s, want an hour from now", j.ExpiresAt)
		case key == "y" && !j.ExpiresAt.Before(e.clock.Now()):
			t.Errorf("y: the expiry moved to %s", j.ExpiresAt)
		}
		do(m, "esc")
	}
}

// The bulk requeue's dialog counts the jobs that would expire at once, and
// e extends each one's expiry, over both backends.
func TestBulkRequeueCountsWhatWouldExpire(t *testing.T) {
	bothBackends(t, func(t *testing.T, m *Model, e *env, fx fleetFixture) {
		ids := expiringJobs(t, e, 3)
		m.ctx.Fleet.setClusters(must(m.ctx.Backend.ListClusters(e.admin, registry.ClusterListParams{})))
		m.ctx.Now = e.clock.Now()
		do(m, "3", "l")
		filter(m, "cluster:late")
		settle(t, m, m.jobs.requery())
		c := bulkOver(t, m, "R")
		if !strings.Contains(c.body, "⚠ 3 of the 3 are past their expiry") || c.alt == nil {
			t.Fatalf("bulk requeue: %q %q (alt %v)", c.title, c.body, c.alt)
		}
		settle(t, m, press(m, "e"))
		for _, id := range ids {
			j := must(e.reg.GetJob(e.admin, id))
			if j.State != registry.JobQueued || !j.ExpiresAt.Equal(e.clock.Now().Add(time.Hour)) {
				t.Errorf("after e: %s is %s, expires %s (status %q)", id, j.State, j.ExpiresAt, m.status)
			}
		}
	})
}

// The requeue dialog of a job past its expiry, at both sizes: the warning
// and the e choice fit.
func TestGoldenRequeueExpiry(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("confirm_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "jobs",
				seed: func(h *harness) { expiringJobs(t, h.env, 1) }})
			h.keys("l")
			h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabInProgress && m.jobs.loaded })
			h.keys("/")
			h.typeText("cluster:late")
			h.keys("enter")
			h.waitIdle(func(m *Model) bool { return m.jobs.loaded && len(m.jobs.rows) == 1 })
			h.keys("R")
			h.waitIdle(isModal[*confirm])
			h.golden()
		})
	}
}
