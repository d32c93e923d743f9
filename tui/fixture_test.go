package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/sqlite"
)

// env is a registry over a fresh SQLite file with a fake clock.
type env struct {
	reg   *registry.Registry
	clock *clocktest.Clock
	st    *sqlite.Store
	path  string
	admin context.Context
	base  time.Time // where the fixture's timeline starts
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "tether.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	clock := clocktest.New()
	reg := registry.New(st, registry.Config{Clock: clock, Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
	tb.Cleanup(func() {
		reg.Close()
		st.Close()
	})
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "alice"})
	return &env{reg: reg, clock: clock, st: st, path: path, admin: admin, base: clock.Now()}
}

func (e *env) backend() *Local {
	return NewLocal(e.reg, registry.Actor{Kind: registry.ActorAdmin, Name: "alice"})
}

// must panics on an error: fixtures are set up before anything can fail
// for a reason worth a message.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// at moves the fake clock to base+d.
func (e *env) at(d time.Duration) { e.clock.Set(e.base.Add(d)) }

func (e *env) cluster(tb testing.TB, spec registry.ClusterSpec) (*registry.Cluster, *registry.IssuedToken) {
	tb.Helper()
	c, tok, err := e.reg.CreateCluster(e.admin, spec, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return c, tok
}

// agent registers a cluster's agent and returns it, authenticated.
func (e *env) agent(tb testing.TB, tok *registry.IssuedToken, caps ...string) *registry.Agent {
	tb.Helper()
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAgent, Name: "unregistered@10.0.0.7"})
	issued := must(e.reg.Register(ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: caps}))
	return must(e.reg.Authenticate(context.Background(), issued.Token.Reveal(), registry.AuthAny))
}

func (e *env) submit(tb testing.TB, clusterID, ns, name string) *registry.Job {
	tb.Helper()
	payload := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":2}}`, name, ns)
	j, _, err := e.reg.SubmitJob(e.admin, registry.JobSubmission{ClusterID: clusterID, Kind: registry.KindApply, Payload: json.RawMessage(payload)})
	if err != nil {
		tb.Fatal(err)
	}
	return j
}

func (e *env) heartbeat(tb testing.TB, a *registry.Agent, conds ...registry.Condition) {
	tb.Helper()
	ev := registry.Event{Kind: registry.EventClusterHeartbeat, Conditions: conds,
		ResourceRef: registry.ResourceRef{APIVersion: "ops.vworkspace.io/v1alpha1", Kind: "Cluster", Name: a.Cluster.ID}}
	must(e.reg.AppendEvents(context.Background(), a, "", []registry.Event{ev}))
}

// fleetFixture is a small fleet with something of everything: a healthy
// signed cluster with leased jobs, a silent cluster with stranded and
// lease-expired jobs and one out of attempts, a cluster whose agent does not
// use leases with a job silent for 27 minutes, a pending and a disabled
// cluster; heartbeats with a False condition, a buffer overflow, results.
// The clock ends at 10:30:00Z.
type fleetFixture struct {
	euID, usID, edgeID, stagingID, legacyID string
	leasedJob, exhaustedJob, expiredJob     string
	silentJob, strandedJob, disabledJob     string
	euAgent                                 *registry.Agent // holds leasedJob
}

func seedFleet(tb testing.TB, e *env) fleetFixture {
	tb.Helper()
	ctx := context.Background()
	var f fleetFixture
	e.at(0)
	eu, euTok := e.cluster(tb, registry.ClusterSpec{Name: "prod-eu-1", Organization: "acme",
		AllowedNamespaces: []string{"default", "web", "payments"}, AllowedCatalogEntries: []string{"*"},
		AllowedOperationTemplates: []string{"backup.velero"},
		Policy:                    registry.Policy{LeaseSeconds: 600, MaxAttempts: 5}})
	us, usTok := e.cluster(tb, registry.ClusterSpec{Name: "prod-us-1", Organization: "acme",
		AllowedNamespaces: []string{"*"}, Policy: registry.Policy{LeaseSeconds: 60, MaxAttempts: 2}})
	edge, edgeTok := e.cluster(tb, registry.ClusterSpec{Name: "edge-lab", Organization: "research", Mode: registry.ModePull,
		AllowedNamespaces: []string{"lab"}, Policy: registry.Policy{LeaseSeconds: 0, MaxAttempts: 3}})
	staging, _ := e.cluster(tb, registry.ClusterSpec{Name: "staging", Organization: "acme", AllowedNamespaces: []string{"default"}})
	legacy, legacyTok := e.cluster(tb, registry.ClusterSpec{Name: "legacy-dc", Organization: "ops", Mode: registry.ModeGitOps,
		AllowedNamespaces: []string{"default"}})
	f.euID, f.usID, f.edgeID, f.stagingID, f.legacyID = eu.ID, us.ID, edge.ID, staging.ID, legacy.ID

	euA := e.agent(tb, euTok, registry.CapabilityLease, registry.CapabilityHMAC)
	usA := e.agent(tb, usTok, registry.CapabilityLease)
	edgeA := e.agent(tb, edgeTok)
	legacyA := e.agent(tb, legacyTok, registry.CapabilityLease)
	for _, a := range []*registry.Agent{euA, usA, edgeA, legacyA} {
		e.heartbeat(tb, a)
	}

	reaper := registry.NewReaper(e.reg, registry.ReaperConfig{})
	// legacy-dc: a job queued, then (at 10:05) the cluster disabled.
	f.disabledJob = e.submit(tb, legacy.ID, "default", "old-portal").ID

	// edge-lab: claimed without a lease at 10:01, last status at 10:03.
	e.at(time.Minute)
	f.silentJob = e.submit(tb, edge.ID, "lab", "notebook").ID
	must(e.reg.AckJob(ctx, edgeA, f.silentJob))

	// prod-us-1: a job whose lease expires twice runs out of attempts.
	e.at(2 * time.Minute)
	f.exhaustedJob = e.submit(tb, us.ID, "batch", "report-nightly").ID
	must(e.reg.AckJob(ctx, usA, f.exhaustedJob))
	e.at(3 * time.Minute)
	if err := e.reg.ReportStatus(ctx, edgeA, f.silentJob, "", registry.StatusReport{Phase: "Running", Message: "pulling images"}); err != nil {
		tb.Fatal(err)
	}
	e.at(4 * time.Minute)
	must(reaper.RunOnce(ctx))
	must(e.reg.AckJob(ctx, usA, f.exhaustedJob))
	e.at(5 * time.Minute)
	must(e.reg.SetClusterEnabled(e.admin, legacy.ID, false, "decommissioning"))
	e.at(6 * time.Minute)
	must(reaper.RunOnce(ctx))
	e.heartbeat(tb, usA) // its last heartbeat: silent from 10:09
	// Two jobs wait on it; one more was claimed and its lease ran out.
	f.strandedJob = e.submit(tb, us.ID, "batch", "export").ID
	e.at(6*time.Minute + time.Second)
	e.submit(tb, us.ID, "batch", "cleanup")
	e.at(10 * time.Minute)
	f.expiredJob = e.submit(tb, us.ID, "web", "frontend").ID
	must(e.reg.AckJob(ctx, usA, f.expiredJob))

	e.at(15 * time.Minute)
	must(e.reg.AppendEvents(ctx, edgeA, "", []registry.Event{{
		Kind: registry.EventBufferOverflow, Message: "event buffer full: dropped 120 events",
	}}))

	// prod-eu-1: results over the last quarter hour, a False condition,
	// three jobs queued, one claimed with a lease.
	for i, d := range []time.Duration{16, 19, 22, 24, 27} {
		e.at(d * time.Minute)
		j := e.submit(tb, eu.ID, "web", fmt.Sprintf("api-%d", i))
		must(e.reg.AckJob(ctx, euA, j.ID))
		e.at(d*time.Minute + 40*time.Second)
		res := registry.ResultReport{Outcome: registry.OutcomeSucceeded, Body: json.RawMessage(`{"outcome":"succeeded","message":"applied"}`)}
		if i == 3 {
			res = registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "ImagePullBackOff: registry.acme.io/api:v2 not found",
				Body: json.RawMessage(`{"outcome":"failed","error":"ImagePullBackOff"}`)}
		}
		if _, err := e.reg.ReportResult(ctx, euA, j.ID, "", res); err != nil {
			tb.Fatal(err)
		}
		switch i {
		case 1:
			e.at(20 * time.Minute)
			must(e.reg.AppendEvents(ctx, euA, "", []registry.Event{{
				Kind: registry.EventConditionTransition, EventKey: "disk-1",
				ResourceRef: registry.ResourceRef{Kind: "Node", Name: "node-3"},
				Conditions:  []registry.Condition{{Type: "DiskPressure", Status: "False", Reason: "DiskFull", Message: "93% used"}},
				Message:     "node-3 disk pressure",
			}}))
		case 3:
			for i, ns := range []string{"web", "payments", "default"} {
				e.at(25*time.Minute + time.Duration(i)*time.Second)
				e.submit(tb, eu.ID, ns, "queued-"+ns)
			}
		}
	}
	e.at(29 * time.Minute)
	j := e.submit(tb, eu.ID, "payments", "ledger")
	must(e.reg.AckJob(ctx, euA, j.ID))
	f.leasedJob, f.euAgent = j.ID, euA
	if err := e.reg.ReportStatus(ctx, euA, j.ID, "", registry.StatusReport{Phase: "Applying", Message: "2/3 replicas ready",
		Conditions: []registry.Condition{{Type: "Available", Status: "False", Reason: "MinimumReplicasUnavailable"}}}); err != nil {
		tb.Fatal(err)
	}
	e.at(29*time.Minute + 50*time.Second)
	e.heartbeat(tb, euA,
		registry.Condition{Type: "Ready", Status: "True", Reason: "AgentReady"},
		registry.Condition{Type: "DiskPressure", Status: "False", Reason: "DiskFull", Message: "93% used"})
	e.heartbeat(tb, edgeA, registry.Condition{Type: "Ready", Status: "True", Reason: "AgentReady"})
	e.at(30 * time.Minute)
	return f
}
