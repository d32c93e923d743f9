package tui

import (
	"context"
	"fmt"
	"image/color"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

func isQuit(msgs []tea.Msg) bool {
	_, ok := find[tea.QuitMsg](msgs)
	return ok
}

func TestRootKeys(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)

	for i, k := range []string{"1", "2", "3", "4", "5"} {
		press(m, k)
		if m.screen != i {
			t.Errorf("%s: screen %d, want %d", k, m.screen, i)
		}
	}
	press(m, "tab")
	if m.screen != screenOverview {
		t.Errorf("tab from the last screen: %d, want the first", m.screen)
	}
	press(m, "shift+tab")
	if m.screen != screenAudit {
		t.Errorf("shift+tab from the first screen: %d, want the last", m.screen)
	}

	// enter opens a detail at once (the next key goes to it); esc goes back.
	press(m, "2", "enter")
	if _, ok := m.top().(*clusterDetail); !ok {
		t.Fatalf("enter on a cluster opened %T", m.top())
	}
	press(m, "esc")
	if _, ok := m.top().(*clustersView); !ok {
		t.Errorf("esc left %T on top", m.top())
	}

	// ? and : open help and the command line; esc closes them.
	press(m, "?")
	if !isModal[*helpModal](m) {
		t.Errorf("? opened %T", m.modal)
	}
	press(m, "esc", ":")
	if m.modal != nil || !m.cmdline.active {
		t.Errorf("esc then : : modal %T, command line %v", m.modal, m.cmdline.active)
	}
	press(m, "esc")

	// / filters the current screen live; esc clears it.
	press(m, "/", "p", "r", "o", "d")
	if got := m.clusters.Filter(); got != "prod" || !m.filtering {
		t.Errorf("filter %q (editing %v), want prod", got, m.filtering)
	}
	press(m, "enter")
	m.clusters.rebuild()
	if len(m.clusters.rows) != 2 {
		t.Errorf("/prod shows %d clusters, want 2", len(m.clusters.rows))
	}
	press(m, "esc")
	if m.clusters.Filter() != "" {
		t.Error("esc should clear the filter")
	}

	// q quits at once when nothing is running...
	if !isQuit(exec(press(m, "q"), time.Second)) {
		t.Error("q should quit when nothing runs")
	}
	// ...and asks when an action is in flight; ctrl+c too.
	m.running[1] = "requeue j-1"
	for _, k := range []string{"q", "ctrl+c"} {
		m.modal = nil
		if isQuit(exec(press(m, k), time.Second)) {
			t.Errorf("%s quit while an action runs", k)
		}
		c, ok := m.modal.(*confirm)
		if !ok || !strings.Contains(c.body, "requeue j-1") {
			t.Fatalf("%s: modal %T, want a confirmation naming the running action", k, m.modal)
		}
	}
	if msgs := exec(press(m, "y"), time.Second); !slices0(msgs, func(msg tea.Msg) bool { _, ok := msg.(quitMsg); return ok }) {
		t.Error("y should quit")
	}
}

func slices0(msgs []tea.Msg, f func(tea.Msg) bool) bool {
	for _, m := range msgs {
		if f(m) {
			return true
		}
	}
	return false
}

func TestReadOnlyHidesAndRefusesMutations(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, true)
	load(t, m, e)

	press(m, "2")
	for _, k := range []string{"n", "t", "e", "r", "x", "d", "p", "D"} {
		m.status = ""
		do(m, k)
		if m.modal != nil {
			t.Errorf("read-only: %s opened %T", k, m.modal)
		}
		if !strings.Contains(m.status, "read-only") {
			t.Errorf("read-only: %s said %q, want why nothing happens", k, m.status)
		}
	}
	help := m.helpLine() + m.helpModal().View()
	for _, word := range []string{"new cluster", "issue token", "requeue", "revoke", "pause/resume queue"} {
		if strings.Contains(help, word) {
			t.Errorf("read-only help still offers %q", word)
		}
	}
	if !strings.Contains(ansi.Strip(m.header()), "READ-ONLY") {
		t.Error("no READ-ONLY badge in the header")
	}
	// The backend refuses too, whatever gets through.
	if _, err := m.ctx.Backend.RequeueJob(e.admin, fx.expiredJob, ""); registry.ErrorCode(err) != registry.CodeForbidden {
		t.Errorf("read-only backend requeue: %v", err)
	}
	if got, _ := e.reg.GetJob(e.admin, fx.expiredJob); got.State != registry.JobInProgress {
		t.Errorf("the job changed: %s", got.State)
	}
}

func TestClustersViewKeys(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	press(m, "2")
	v := m.clusters
	v.rebuild()
	names := func() []string {
		var out []string
		for _, c := range v.rows {
			out = append(out, c.Name)
		}
		return out
	}
	if got := strings.Join(names(), " "); got != "edge-lab legacy-dc prod-eu-1 prod-us-1 staging" {
		t.Fatalf("by name: %s", got)
	}
	press(m, "j", "j")
	if c := v.selected(); c == nil || c.Name != "prod-eu-1" {
		t.Fatalf("j j selected %v", c)
	}
	if h := v.table.header(); !strings.Contains(h, "NAME▲") {
		t.Errorf("sorted by name, the header has no arrow on NAME: %q", h)
	}
	press(m, "s", "s", "s", "s", "s", "s", "<") // s cycles the columns, < steps back: heartbeat, the silent (and never-seen) first
	v.rebuild()
	if got := names(); got[0] != "staging" && got[0] != "legacy-dc" {
		t.Errorf("by heartbeat: %v", got)
	}
	if h := v.table.header(); !strings.Contains(h, "HEARTBEAT▼") || strings.Contains(h, "NAME▲") {
		t.Errorf("sorted by heartbeat, the header is %q", h)
	}
	press(m, "S")
	v.rebuild()
	if h := v.table.header(); !strings.Contains(h, "HEARTBEAT▲") {
		t.Errorf("S did not reverse the arrow: %q", h)
	}
	if got := names(); got[0] == "staging" || got[0] == "legacy-dc" {
		t.Errorf("reversed, by heartbeat: %v", got)
	}
	press(m, "S")
	if c := v.selected(); c == nil || c.Name != "prod-eu-1" {
		t.Errorf("sorting moved the selection to %v", c)
	}

	// d on an active cluster asks, y disables it.
	press(m, "d")
	c, ok := m.modal.(*confirm)
	if !ok || !strings.Contains(c.title, "Disable prod-eu-1") {
		t.Fatalf("d opened %T", m.modal)
	}
	do(m, "y")
	if got := must(e.reg.GetCluster(e.admin, fx.euID)); got.State != registry.ClusterDisabled {
		t.Errorf("after d y: %s", got.State)
	}
	if !strings.Contains(m.status, "disabled prod-eu-1") {
		t.Errorf("status %q", m.status)
	}

	// D asks for the name; a wrong one refuses, the right one deletes.
	press(m, "D")
	if !isModal[*typedConfirm](m) {
		t.Fatalf("D opened %T", m.modal)
	}
	for _, r := range "prod" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	press(m, "enter")
	if tc, ok := m.modal.(*typedConfirm); !ok || tc.hint == "" {
		t.Fatal("a wrong name must not confirm")
	}
	for _, r := range "-eu-1" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	do(m, "enter")
	if _, err := e.reg.GetCluster(e.admin, fx.euID); registry.ErrorCode(err) != registry.CodeNotFound {
		t.Errorf("after D: %v", err)
	}
}

func TestJobsViewKeys(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	press(m, "3")
	v := m.jobs
	if v.tab != tabQueued || !v.loaded || len(v.rows) != 6 {
		t.Fatalf("queued tab: tab %d loaded %v rows %d", v.tab, v.loaded, len(v.rows))
	}
	// l, l: the stuck tab, read through its own queries.
	do(m, "l", "l")
	if v.tab != tabStuck || v.stuck != 6 || len(v.rows) != 6 {
		t.Fatalf("stuck tab: tab %d count %d rows %d", v.tab, v.stuck, len(v.rows))
	}
	if v.rows[0].ID != fx.expiredJob {
		t.Fatalf("the newest stuck job is %s, want the lease-expired one", v.rows[0].ID)
	}
	// space marks and moves down; u clears.
	press(m, "space", "space")
	if len(v.marks) != 2 || v.table().cursor != 2 {
		t.Errorf("marks %d cursor %d", len(v.marks), v.table().cursor)
	}
	press(m, "u")
	if len(v.marks) != 0 {
		t.Error("u should clear the marks")
	}
	// R on the lease-expired job: the confirmation says the holder is fenced.
	press(m, "g", "R")
	c, ok := m.modal.(*confirm)
	if !ok || !strings.Contains(c.body, "fenced off") || !strings.Contains(c.body, "409 stale_claim") {
		t.Fatalf("R opened %T %+v", m.modal, m.modal)
	}
	do(m, "y")
	j := must(e.reg.GetJob(e.admin, fx.expiredJob))
	if j.State != registry.JobQueued || j.Attempt != 2 || j.ClaimID != "" {
		t.Errorf("after R y: %s attempt %d claim %q", j.State, j.Attempt, j.ClaimID)
	}
	if !strings.Contains(m.status, "requeued "+fx.expiredJob) {
		t.Errorf("status %q", m.status)
	}
	// R on a queued job says why not, without a dialog.
	v.rows[0] = *j
	m.status = ""
	do(m, "R")
	if m.modal != nil || !strings.Contains(m.status, "cannot requeue") {
		t.Errorf("R on a queued job: modal %T status %q", m.modal, m.status)
	}
	// C cancels after y; L refuses a job without a lease.
	press(m, "C")
	do(m, "y")
	if j := must(e.reg.GetJob(e.admin, fx.expiredJob)); j.State != registry.JobCanceled {
		t.Errorf("after C y: %s", j.State)
	}
	m.status = ""
	do(m, "L")
	if m.modal != nil || !strings.Contains(m.status, "no lease") {
		t.Errorf("L without a lease: modal %T status %q", m.modal, m.status)
	}
	// y copies the id.
	if cmd := press(m, "y"); cmd == nil {
		t.Error("y should copy the id")
	}
}

func TestJobsExtendLease(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	before := must(e.reg.GetJob(e.admin, fx.leasedJob))
	d := newJobDetail(m.ctx, fx.leasedJob, before)
	m.screen = screenJobs
	pump(m, m.push(d))
	press(m, "L")
	p, ok := m.modal.(*prompt)
	if !ok {
		t.Fatalf("L opened %T", m.modal)
	}
	p.input.SetValue("never")
	press(m, "enter")
	if m.modal != p || p.err == "" {
		t.Fatal("a bad duration keeps the prompt with an error")
	}
	p.input.SetValue("15m")
	do(m, "enter")
	after := must(e.reg.GetJob(e.admin, fx.leasedJob))
	if got, want := after.LeaseExpiresAt.Sub(before.LeaseExpiresAt), 15*time.Minute; got != want {
		t.Errorf("lease moved by %s, want %s (status %q)", got, want, m.status)
	}
}

func TestJobsViewAppliesTheFeed(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "3", "l") // in progress
	v := m.jobs
	i := -1
	for k, j := range v.rows {
		if j.ID == fx.leasedJob {
			i = k
		}
	}
	if i < 0 {
		t.Fatal("the leased job is not in the in-progress tab")
	}
	updated := v.rows[i]
	updated.Phase = "Verifying"
	updated.UpdatedAt = updated.UpdatedAt.Add(time.Second)
	cmd := v.Update(feedMsg{batch: feedBatch{Jobs: []*registry.Job{&updated}}})
	if v.rows[i].Phase != "Verifying" {
		t.Error("a job on screen is updated in place from the feed")
	}
	if cmd == nil || !v.dirty {
		t.Error("a change schedules a re-read of the window")
	}
}

func TestEventsFollowAndPause(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	v := m.events
	n := len(v.rows)
	ev := func(id int64) registry.Event {
		return registry.Event{ID: id, ClusterID: "x", Kind: registry.EventClusterHeartbeat, ReceivedAt: e.clock.Now()}
	}
	v.Update(feedMsg{batch: feedBatch{Events: []registry.Event{ev(1000)}}})
	if len(v.rows) != n+1 || v.rows[0].ID != 1000 {
		t.Fatalf("following: the new event is not on top (%d rows)", len(v.rows))
	}
	press(m, "4", "f")
	if v.follow {
		t.Fatal("f should pause")
	}
	var batch []registry.Event
	for i := range eventsPending + 3 {
		batch = append(batch, ev(2000+int64(i)))
	}
	v.Update(feedMsg{batch: feedBatch{Events: batch, DroppedEvents: 2}})
	if len(v.rows) != n+1 || len(v.pending) != eventsPending || v.dropped != 5 {
		t.Errorf("paused: rows %d pending %d dropped %d; want %d, %d, 5", len(v.rows), len(v.pending), v.dropped, n+1, eventsPending)
	}
	if view := ansi.Strip(v.View()); !strings.Contains(view, "5 dropped") || !strings.Contains(view, "paused") {
		t.Errorf("the title should show the pause and the drops:\n%s", strings.SplitN(view, "\n", 2)[0])
	}
	press(m, "f")
	if !v.follow || len(v.pending) != 0 || v.rows[0].ID != 2000+eventsPending-1 {
		t.Error("f resumes and shows what waited, newest on top")
	}
}

func TestConflictFlow(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	c := m.ctx.Fleet.cluster(fx.euID)
	f := newClusterForm(m.ctx, c.ClusterSpec, c, c.Version)
	m.modal = f
	f.field("namespaces").items = append(f.field("namespaces").items, "batch")
	must(e.reg.ModifyCluster(e.admin, fx.euID, func(s *registry.ClusterSpec) error {
		s.AllowedNamespaces = append(s.AllowedNamespaces, "ml")
		return nil
	}))
	do(m, "ctrl+s")
	d, ok := m.modal.(*conflictDialog)
	if !ok {
		t.Fatalf("a lost compare-and-swap opened %T (status %q)", m.modal, m.status)
	}
	if d.current == nil || d.current.Version != 2 {
		t.Fatalf("the dialog did not read the current version: %+v", d.current)
	}
	if got := must(e.reg.GetCluster(e.admin, fx.euID)); strings.Contains(strings.Join(got.AllowedNamespaces, ","), "batch") {
		t.Fatal("the edit overwrote the other change")
	}
	press(m, "r")
	f2, ok := m.modal.(*clusterForm)
	if !ok || f2.version != 2 {
		t.Fatalf("r opened %T", m.modal)
	}
	do(m, "ctrl+s")
	got := must(e.reg.GetCluster(e.admin, fx.euID))
	if ns := strings.Join(got.AllowedNamespaces, ","); ns != "default,web,payments,ml,batch" || got.Version != 3 {
		t.Errorf("after reapplying: %s version %d, want both changes at version 3", ns, got.Version)
	}
}

func TestCommands(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	run := func(line string) {
		press(m, ":")
		for _, r := range line {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		do(m, "enter")
	}
	run("jobs failed")
	if m.screen != screenJobs || m.jobs.tab != tabFailed {
		t.Errorf(":jobs failed: screen %d tab %d", m.screen, m.jobs.tab)
	}
	run("job " + fx.silentJob)
	if d, ok := m.top().(*jobDetail); !ok || d.job == nil || d.job.ID != fx.silentJob {
		t.Errorf(":job ID opened %T", m.top())
	}
	run("cl prod-us-1")
	if d, ok := m.top().(*clusterDetail); !ok || d.id != fx.usID {
		t.Errorf(":cl NAME opened %T", m.top())
	}
	run("events cluster:edge-lab")
	if m.screen != screenEvents || m.events.fl.cluster != fx.edgeID {
		t.Errorf(":events cluster:edge-lab: screen %d filter %+v", m.screen, m.events.fl)
	}
}

func TestMouse(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	click := func(x, y int) {
		_, cmd := m.Update(tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseLeft})
		pump(m, cmd)
	}
	// The header's tabs.
	r := m.tabRanges()[screenJobs]
	click(r[0]+1, 0)
	if m.screen != screenJobs {
		t.Fatalf("a click on the jobs tab: screen %d", m.screen)
	}
	// The jobs view's state tabs are on its second line (screen line 2).
	_, ranges := m.jobs.tabLabels()
	click(ranges[tabStuck][0]+2, 2)
	if m.jobs.tab != tabStuck {
		t.Fatalf("a click on the stuck tab: tab %d", m.jobs.tab)
	}
	// Rows start under the table header (screen line 4): a click selects,
	// a second click opens.
	click(5, 6)
	if got := m.jobs.table().cursor; got != 2 {
		t.Fatalf("a click on the third row: cursor %d", got)
	}
	click(5, 6)
	if _, ok := m.top().(*jobDetail); !ok {
		t.Fatalf("a click on the selected row opened %T", m.top())
	}
	press(m, "esc")
	// The wheel scrolls.
	_, cmd := m.Update(tea.MouseWheelMsg{X: 5, Y: 6, Button: tea.MouseWheelDown})
	pump(m, cmd)
	if got := m.jobs.table().cursor; got != 5 {
		t.Errorf("the wheel moved the cursor to %d, want 5", got)
	}
	// Clicks outside the body (the status and help lines) do nothing.
	click(5, 39)
	if _, ok := m.top().(*jobsView); !ok || m.jobs.table().cursor != 5 {
		t.Error("a click on the help line changed something")
	}
}

func TestAutoThemeFollowsTheBackground(t *testing.T) {
	e := newEnv(t)
	m := New(Options{Backend: e.backend(), Theme: themes.Choice{Theme: themes.Dark(), Auto: true}})
	if msgs := exec(m.Init(), 2*time.Second); !slices0(msgs, func(msg tea.Msg) bool {
		return fmt.Sprintf("%T", msg) == "tea.backgroundColorMsg"
	}) {
		t.Error("an auto theme asks the terminal for its background")
	}
	m.feed.stop()
	m.Update(tea.BackgroundColorMsg{Color: color.White})
	if got := m.ctx.Styles.Theme.Name; got != themes.NameLight {
		t.Errorf("on a white background: %s", got)
	}
	m.Update(tea.BackgroundColorMsg{Color: color.Black})
	if got := m.ctx.Styles.Theme.Name; got != themes.NameDark {
		t.Errorf("on a black background: %s", got)
	}
	fixed := New(Options{Backend: e.backend(), Theme: themes.Choice{Theme: themes.HighContrast()}})
	fixed.Update(tea.BackgroundColorMsg{Color: color.White})
	if got := fixed.ctx.Styles.Theme.Name; got != themes.NameHighContrast {
		t.Errorf("a chosen theme stays: %s", got)
	}
}

func TestOverviewAuditAndDetailKeys(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)

	// Overview: s shows the stuck jobs.
	do(m, "1", "s")
	if m.screen != screenJobs || m.jobs.tab != tabStuck {
		t.Errorf("s on the overview: screen %d tab %d", m.screen, m.jobs.tab)
	}

	// Cluster detail: J and E open the cluster's jobs and events.
	do(m, "2", "j", "j", "enter")
	if d, ok := m.top().(*clusterDetail); !ok || d.id != fx.euID || !d.loaded {
		t.Fatalf("enter on prod-eu-1 opened %T", m.top())
	}
	do(m, "J")
	if m.screen != screenJobs || m.jobs.tab != tabAll || m.jobs.Filter() != "cluster:prod-eu-1" {
		t.Errorf("J: screen %d tab %d filter %q", m.screen, m.jobs.tab, m.jobs.Filter())
	}
	do(m, "2", "E")
	if m.screen != screenEvents || m.events.fl.cluster != fx.euID {
		t.Errorf("E: screen %d filter %+v", m.screen, m.events.fl)
	}

	// Audit: a filter by action, and enter shows the whole entry.
	do(m, "5", "/")
	for _, r := range "action:cluster.disable" {
		_, cmd := m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		pump(m, cmd)
	}
	do(m, "enter")
	if len(m.audit.rows) != 1 || m.audit.rows[0].Reason != "decommissioning" {
		t.Fatalf("action:cluster.disable shows %d entries", len(m.audit.rows))
	}
	do(m, "enter")
	d, ok := m.modal.(*docModal)
	if !ok || !strings.Contains(d.body, "decommissioning") || !strings.Contains(d.body, "admin:alice") {
		t.Errorf("enter on an audit entry: %T", m.modal)
	}
}

// TestJobDetailNamesItsRetries: a retried job's detail says what it was
// retried as (on-call should not retry it twice), at once when a retry
// arrives on the feed, and keeps saying it across the feed's copies of the
// job, which carry no retries; the retry says what it retries; retrying it
// again asks with the retry named.
func TestJobDetailNamesItsRetries(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	first := must(e.reg.RetryJob(e.admin, fx.exhaustedJob, "registry was down"))
	d := newJobDetail(m.ctx, fx.exhaustedJob, nil)
	m.screen = screenJobs
	pump(m, m.push(d))
	if view := ansi.Strip(d.View()); !strings.Contains(view, "retried as") || !strings.Contains(view, first.ID) {
		t.Fatalf("the detail does not name the retry %s:\n%s", first.ID, view)
	}

	must(e.reg.CancelJob(e.admin, first.ID, ""))
	second := must(e.reg.RetryJob(e.admin, fx.exhaustedJob, ""))
	d.Update(feedMsg{batch: feedBatch{Jobs: []*registry.Job{second}}})
	// One a line, the first selected (enter opens it).
	want := "retried as        ▸ " + first.ID + " "
	if view := ansi.Strip(d.View()); !strings.Contains(view, want) || !strings.Contains(view, "\n"+strings.Repeat(" ", 22)+second.ID) {
		t.Fatalf("after a retry on the feed the detail lacks %q and then %s:\n%s", want, second.ID, view)
	}
	fromFeed := *d.job
	fromFeed.RetriedBy = nil
	fromFeed.UpdatedAt = fromFeed.UpdatedAt.Add(time.Second)
	d.Update(feedMsg{batch: feedBatch{Jobs: []*registry.Job{&fromFeed}}})
	if view := ansi.Strip(d.View()); !strings.Contains(view, want) {
		t.Fatalf("the feed's copy of the job dropped its retries:\n%s", view)
	}
	press(m, "F")
	c, ok := m.modal.(*confirm)
	if !ok || !strings.Contains(c.body, "retried already, as "+first.ID+", "+second.ID) {
		t.Fatalf("retrying a retried job asks %T %+v, want the retries named", m.modal, m.modal)
	}
	press(m, "esc")

	r := newJobDetail(m.ctx, second.ID, nil)
	pump(m, m.push(r))
	if view := ansi.Strip(r.View()); !strings.Contains(view, "retry of          ▸ "+fx.exhaustedJob) || strings.Contains(view, "retried as") {
		t.Fatalf("the retry's detail does not say what it retries:\n%s", view)
	}
}

// What a dialog says is wrong with what was typed (a name that is not the
// cluster's, a lease extension that is no duration) stays on screen until
// the next key: the clock's tick every second, or a change in the feed, used
// to wipe it before anyone could read it.
func TestDialogRefusalOutlivesTheTick(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	press(m, "2", "j", "j", "D")
	if !isModal[*typedConfirm](m) {
		t.Fatalf("D opened %T", m.modal)
	}
	for _, r := range "prod" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	press(m, "enter")
	m.Update(tickMsg{now: e.clock.Now()})
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "that is not ") {
		t.Errorf("after a tick the typed confirmation no longer says the name is wrong:\n%s", view)
	}
	press(m, "esc")

	do(m, ":")
	for _, r := range "job " + fx.leasedJob {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	do(m, "enter", "L")
	if !isModal[*prompt](m) {
		t.Fatalf("L opened %T", m.modal)
	}
	for _, r := range "soon" {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	press(m, "enter")
	m.Update(tickMsg{now: e.clock.Now()})
	p, ok := m.modal.(*prompt)
	if !ok {
		t.Fatalf("the tick closed the prompt: %T", m.modal)
	}
	if view := ansi.Strip(m.modal.View()); p.err == "" || !strings.Contains(view, strings.Fields(p.err)[0]) {
		t.Errorf("after a tick the prompt no longer says what is wrong (%q):\n%s", p.err, view)
	}
}

// y copies the selected cluster's whole id, in the list (whose ID column
// may show only a prefix of it) and in its detail, as it does a job's; the
// help lists it.
func TestClustersCopyID(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "2")
	c := m.clusters.selected()
	if c == nil {
		t.Fatal("no cluster selected")
	}
	if help := ansi.Strip(m.helpModal().View()); !strings.Contains(help, "copy id") {
		t.Errorf("the clusters' help lacks y:\n%s", help)
	}
	for _, keys := range [][]string{{"y"}, {"enter", "y"}} {
		m.status = ""
		do(m, keys...)
		if want := "copied " + c.ID + " to the clipboard"; !strings.Contains(m.status, want) {
			t.Errorf("after %v the status is %q, want %q", keys, m.status, want)
		}
	}
	if help := ansi.Strip(m.helpModal().View()); !strings.Contains(help, "copy id") {
		t.Errorf("the cluster's help lacks y:\n%s", help)
	}
}

// A failed job's error is why it failed: its detail shows it whole, wrapped
// under its label, not cut at the screen's edge (at 80 columns it lost the
// cause of a Helm error); one too long for a dozen lines is cut and says so.
func TestJobDetailShowsTheWholeError(t *testing.T) {
	e := newEnv(t)
	c, tok := e.cluster(t, registry.ClusterSpec{Name: "prod", Organization: "acme", AllowedNamespaces: []string{"apps"}})
	a := e.agent(t, tok)
	ctx := context.Background()
	fail := func(msg string) string {
		j := e.submit(t, c.ID, "apps", "web")
		must(e.reg.AckJob(ctx, a, j.ID))
		if _, err := e.reg.ReportResult(ctx, a, j.ID, "", registry.ResultReport{Outcome: registry.OutcomeFailed, Error: msg}); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	helm := "HelmReleaseFailed: chart repository unreachable: dial tcp 10.0.0.1:443: i/o timeout (the cause at the end)"
	short := fail(helm)
	long := fail(strings.Repeat("x", 5000) + " the end")

	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	load(t, m, e)
	open := func(id string) string {
		do(m, ":")
		for _, r := range "job " + id {
			m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
		do(m, "enter")
		m.View()
		var doc []string // the whole detail, scrolled through
		for range 6 {
			doc = append(doc, ansi.Strip(m.View().Content))
			do(m, "pgdown")
		}
		return strings.Join(doc, "\n")
	}
	view := open(short)
	if !strings.Contains(view, "i/o timeout (the cause at the end)") {
		t.Errorf("the job's error is cut at 80 columns:\n%s", view)
	}
	view = open(long)
	if !strings.Contains(view, "(cut: tether job get shows it whole)") || strings.Contains(view, "the end") {
		t.Errorf("a 5,000-character error is not cut, or not said to be:\n%s", view)
	}
}
