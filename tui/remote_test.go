package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

// remoteEnv serves e's registry on loopback and returns a Remote backend
// over its admin API with a token of the role.
func remoteEnv(t *testing.T, e *env, role registry.Role, org string) *admin.Remote {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(e.reg, server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	tok, err := e.reg.CreateAdminToken(e.admin, "oncall-"+string(role)+org, role, org, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := adminclient.New("http://"+ln.Addr().String(), tok.Secret.Reveal())
	if err != nil {
		t.Fatal(err)
	}
	r, err := admin.NewRemote(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// same fails unless local and remote encode to the same JSON: the console
// must see the same records whichever backend serves it.
func same(t *testing.T, what string, local, remote any, lerr, rerr error) {
	t.Helper()
	if lerr != nil || rerr != nil {
		if registry.ErrorCode(lerr) != registry.ErrorCode(rerr) {
			t.Errorf("%s: local error %v, remote error %v", what, lerr, rerr)
		}
		return
	}
	l, _ := json.Marshal(local)
	r, _ := json.Marshal(remote)
	if string(l) != string(r) {
		t.Errorf("%s differs:\nlocal  %s\nremote %s", what, l, r)
	}
}

// The remote backend answers every read as the local one does, over a real
// server on loopback and a seeded fleet: clusters, tokens, credentials, job
// lists with every filter the console uses (tabs, offsets, oldest first,
// stuck queries), counts, a job and its timeline, events, audit, rollouts.
func TestRemoteBackendAgreesWithLocal(t *testing.T) {
	e := newEnv(t)
	f := seedFleet(t, e)
	local := e.backend()
	remote := remoteEnv(t, e, registry.RoleAdmin, "")
	ctx := context.Background()
	if remote.ReadOnly() || remote.Role != registry.RoleAdmin {
		t.Fatalf("admin token: role %q read-only %v", remote.Role, remote.ReadOnly())
	}

	lc, lerr := local.ListClusters(ctx, registry.ClusterListParams{})
	rc, rerr := remote.ListClusters(ctx, registry.ClusterListParams{})
	same(t, "clusters", lc, rc, lerr, rerr)
	for _, id := range []string{f.euID, "prod-us-1", "no-such-cluster"} {
		l, lerr := local.GetCluster(ctx, id)
		r, rerr := remote.GetCluster(ctx, id)
		same(t, "cluster "+id, l, r, lerr, rerr)
	}
	for _, id := range []string{"", f.euID, f.stagingID} {
		l, lerr := local.ListTokens(ctx, id)
		r, rerr := remote.ListTokens(ctx, id)
		same(t, "tokens of "+id, l, r, lerr, rerr)
	}
	for _, id := range []string{f.euID, f.usID} {
		l, lerr := local.ListCredentials(ctx, id)
		r, rerr := remote.ListCredentials(ctx, id)
		same(t, "credentials of "+id, l, r, lerr, rerr)
	}

	now := e.clock.Now()
	queries := map[string]registry.JobListParams{
		"all":                {},
		"queued, 2 from 1":   {States: []registry.JobState{registry.JobQueued}, Limit: 2, Offset: 1},
		"oldest first":       {OldestFirst: true, Limit: 3},
		"one cluster":        {ClusterIDs: []string{f.euID}, Kind: registry.KindApply},
		"search":             {Search: "queued-"},
		"exhausted":          {States: []registry.JobState{registry.JobFailed}, Error: registry.ErrorLeaseExpired},
		"lease expired":      {States: []registry.JobState{registry.JobInProgress}, LeaseExpiredBefore: now},
		"silent without one": {States: []registry.JobState{registry.JobInProgress}, NoLease: true, ActivityBefore: now.Add(-registry.NoLeaseStuckAfter)},
		"finished lately":    {FinishedAfter: e.base.Add(20 * time.Minute)},
	}
	for name, p := range queries {
		l, lerr := local.ListJobs(ctx, p)
		r, rerr := remote.ListJobs(ctx, p)
		same(t, "jobs: "+name, l, r, lerr, rerr)
		p.Limit, p.Offset = 0, 0
		ln, lerr := local.CountJobs(ctx, p)
		rn, rerr := remote.CountJobs(ctx, p)
		same(t, "count: "+name, ln, rn, lerr, rerr)
	}
	// A job's place, as the jobs view counts a moved selection's row.
	all, err := local.ListJobs(ctx, registry.JobListParams{})
	if err != nil || len(all) < 3 {
		t.Fatalf("jobs: %d %v", len(all), err)
	}
	pin := &registry.JobCursor{CreatedAt: all[2].CreatedAt, ID: all[2].ID}
	for _, oldest := range []bool{false, true} {
		p := registry.JobListParams{After: pin, OldestFirst: oldest}
		ln, lerr := local.CountJobs(ctx, p)
		rn, rerr := remote.CountJobs(ctx, p)
		same(t, fmt.Sprintf("count after a job, oldest first %v", oldest), ln, rn, lerr, rerr)
		if want := map[bool]int{false: len(all) - 3, true: 2}[oldest]; ln != want {
			t.Errorf("count after the third job, oldest first %v: %d, want %d", oldest, ln, want)
		}
	}
	lcounts, lerr := local.JobCounts(ctx)
	rcounts, rerr := remote.JobCounts(ctx)
	byKey := func(a, b registry.JobCount) int {
		return strings.Compare(a.ClusterID+string(a.State), b.ClusterID+string(b.State))
	}
	slices.SortFunc(lcounts, byKey)
	slices.SortFunc(rcounts, byKey)
	same(t, "job counts", lcounts, rcounts, lerr, rerr)
	if _, err := remote.GetJob(ctx, "j-nosuchjob"); registry.ErrorCode(err) != registry.CodeNotFound {
		t.Errorf("a job that does not exist: %v, want not found", err)
	}
	for _, id := range []string{f.leasedJob, f.exhaustedJob, f.silentJob} {
		l, lerr := local.GetJob(ctx, id)
		r, rerr := remote.GetJob(ctx, id)
		same(t, "job "+id, l, r, lerr, rerr)
		lh, lerr := local.JobHistory(ctx, id)
		rh, rerr := remote.JobHistory(ctx, id)
		same(t, "timeline of "+id, lh, rh, lerr, rerr)
	}

	events, err := local.ListEvents(ctx, registry.EventListParams{})
	if err != nil || len(events) < 2 {
		t.Fatalf("the fixture has %d events (%v)", len(events), err)
	}
	for name, p := range map[string]registry.EventListParams{
		"all": {}, "one cluster": {ClusterID: f.euID}, "false only": {FalseOnly: true},
		"before": {BeforeID: events[0].ID, Limit: 1}, "after": {AfterID: events[len(events)-1].ID},
		"kinds": {Kinds: []string{string(registry.EventBufferOverflow)}},
	} {
		l, lerr := local.ListEvents(ctx, p)
		r, rerr := remote.ListEvents(ctx, p)
		same(t, "events: "+name, l, r, lerr, rerr)
	}
	audit, err := local.ListAudit(ctx, registry.AuditListParams{})
	if err != nil || len(audit) < 2 {
		t.Fatalf("the fixture has %d audit entries (%v)", len(audit), err)
	}
	for name, p := range map[string]registry.AuditListParams{
		"all": {}, "jobs": {Action: "job."}, "one cluster": {ClusterID: f.legacyID},
		"before": {BeforeID: audit[0].ID, Limit: 2}, "after": {AfterID: audit[len(audit)-1].ID},
	} {
		l, lerr := local.ListAudit(ctx, p)
		r, rerr := remote.ListAudit(ctx, p)
		same(t, "audit: "+name, l, r, lerr, rerr)
	}
	lr, lerr := local.ListRollouts(ctx, consoleRollouts)
	rr, rerr := remote.ListRollouts(ctx, consoleRollouts)
	same(t, "rollouts", lr, rr, lerr, rerr)
	ls, lerr := local.LatestSeq(ctx)
	rs, rerr := remote.LatestSeq(ctx)
	same(t, "feed position", ls, rs, lerr, rerr)
	lq, lerr := local.FleetQueueHealth(ctx)
	rq, rerr := remote.FleetQueueHealth(ctx)
	same(t, "queue health", lq, rq, lerr, rerr)
}

// Changes made through the remote backend are the registry's, attributed to
// the admin token; an edit sends every field, so clearing one clears it; a
// stale version is a conflict; the watch streams what happens elsewhere.
func TestRemoteBackendActionsAndWatch(t *testing.T) {
	e := newEnv(t)
	f := seedFleet(t, e)
	remote := remoteEnv(t, e, registry.RoleAdmin, "")
	ctx := context.Background()

	c, tok, err := remote.CreateCluster(ctx, registry.ClusterSpec{Name: "remote-made", Organization: "acme",
		Labels: registry.Labels{"tier": "gold"}, AllowedNamespaces: []string{"web"}, Policy: registry.DefaultPolicy()}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Secret.Reveal() == "" || tok.Token.ClusterID != c.ID {
		t.Fatalf("the new cluster's token: %+v", tok.Token)
	}
	spec := c.ClusterSpec
	spec.Labels, spec.AllowedNamespaces = nil, []string{}
	updated, err := remote.UpdateCluster(ctx, c.ID, c.Version, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Labels) != 0 || len(updated.AllowedNamespaces) != 0 {
		t.Errorf("cleared labels and namespaces came back as %v and %v", updated.Labels, updated.AllowedNamespaces)
	}
	if _, err := remote.UpdateCluster(ctx, c.ID, c.Version, spec); registry.ErrorCode(err) != registry.CodeConflict {
		t.Errorf("an edit of a stale version: %v, want a conflict", err)
	}

	since, err := remote.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events, err := remote.Watch(wctx, registry.WatchParams{Since: since, Kinds: []registry.EntityKind{registry.EntityJob}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := remote.RequeueJob(ctx, f.leasedJob, "stuck on node-3")
	if err != nil {
		t.Fatal(err)
	}
	if j.State != registry.JobQueued {
		t.Errorf("requeued job is %s", j.State)
	}
	var ev registry.WatchEvent
	for ev.Type == "" || ev.Type == registry.WatchEndOfSnapshot {
		select {
		case ev = <-events:
		case <-time.After(30 * time.Second):
			t.Fatal("the watch never saw the requeue")
		}
	}
	if ev.Type != registry.WatchUpsert || ev.Job == nil || ev.Job.ID != f.leasedJob || ev.Job.State != registry.JobQueued {
		t.Errorf("watch event %+v, want the requeued job's upsert", ev)
	}
	entries, err := e.backend().ListAudit(ctx, registry.AuditListParams{Action: "job.requeue", Limit: 1})
	if err != nil || len(entries) != 1 || entries[0].Actor != "admin-token:oncall-admin" {
		t.Fatalf("the requeue's audit entry: %+v (%v), want actor admin-token:oncall-admin", entries, err)
	}
	if fr, err := remote.ForceRotation(ctx, f.euID, "drill"); err != nil || fr.Credentials != 1 {
		t.Errorf("forced rotation: %d credentials, %v", fr.Credentials, err)
	}
	if _, err := remote.SetClusterPaused(ctx, "staging", true, "maintenance"); err != nil {
		t.Error(err)
	}
	if cl, _ := e.reg.GetCluster(ctx, "staging"); cl.PausedAt.IsZero() {
		t.Error("staging is not paused")
	}
	// The job detail's retries come over the admin API (retriedBy).
	retry, err := remote.RetryJob(ctx, f.exhaustedJob, "drill")
	if err != nil || retry.RetryOf != f.exhaustedJob {
		t.Fatalf("remote retry = %+v (%v)", retry, err)
	}
	if orig, err := remote.GetJob(ctx, f.exhaustedJob); err != nil || !slices.Equal(orig.RetriedBy, []string{retry.ID}) {
		t.Errorf("remote GetJob of the retried job: RetriedBy %v (%v), want [%s]", orig.RetriedBy, err, retry.ID)
	}
}

// A viewer's token makes a read-only console, and the server refuses its
// changes anyway; an organization's token sees only its clusters.
func TestRemoteBackendRoleAndOrg(t *testing.T) {
	e := newEnv(t)
	f := seedFleet(t, e)
	ctx := context.Background()
	viewer := remoteEnv(t, e, registry.RoleViewer, "")
	if !viewer.ReadOnly() {
		t.Error("a viewer's console is not read-only")
	}
	if _, err := viewer.RequeueJob(ctx, f.leasedJob, ""); registry.ErrorCode(err) != registry.CodeForbidden {
		t.Errorf("a viewer's requeue: %v, want forbidden", err)
	}
	research := remoteEnv(t, e, registry.RoleOperator, "research")
	clusters, err := research.ListClusters(ctx, registry.ClusterListParams{})
	if err != nil || len(clusters) != 1 || clusters[0].Name != "edge-lab" {
		t.Errorf("research sees %d clusters (%v), want edge-lab only", len(clusters), err)
	}
	if _, err := research.GetJob(ctx, f.leasedJob); registry.ErrorCode(err) != registry.CodeNotFound {
		t.Errorf("another organization's job: %v, want not found", err)
	}

	unreachable, _ := adminclient.New("http://127.0.0.1:1", "tat_x")
	if _, err := admin.NewRemote(ctx, unreachable); registry.ErrorCode(err) != registry.CodeUnavailable || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("an unreachable server: %v, want unavailable, cannot reach", err)
	}
}

// The console itself runs over the remote backend: the fleet, the queues
// and an action, driven by keys.
func TestConsoleOverRemoteBackend(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	remote := remoteEnv(t, e, registry.RoleViewer, "")
	m := New(Options{Backend: remote, ReadOnly: remote.ReadOnly(), ServerURL: "http://127.0.0.1:7070"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	do(m, "2")
	view := m.View().Content
	for _, want := range []string{"prod-eu-1", "edge-lab", "legacy-dc"} {
		if !strings.Contains(view, want) {
			t.Errorf("the clusters view over the remote backend lacks %s:\n%s", want, view)
		}
	}
	do(m, "3")
	if view = m.View().Content; !strings.Contains(view, "Deployment/web/queued") || strings.Contains(view, "180d") {
		t.Errorf("the jobs view over the remote backend lacks Deployment/web/queued or measures ages by another clock:\n%s", view)
	}
}
