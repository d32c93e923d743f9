package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/storetest"
)

const benchPayload = `{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance",
	"metadata":{"name":"nextcloud-myteam","namespace":"org-myteam","labels":{"app.vworkspace.io/managed-by":"control-plane"}},
	"spec":{"appRef":{"catalogId":"nextcloud"},"values":{"replicas":2}}}`

func benchRegistry(b *testing.B) (*registry.Registry, *registry.Cluster, *registry.Agent) {
	b.Helper()
	st := openAt(b, freshSchema(b))
	reg := registry.New(st, registry.Config{})
	b.Cleanup(reg.Close)
	c, tok, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "bench", AllowedNamespaces: []string{"org-myteam"},
		AllowedCatalogEntries: []string{"nextcloud"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	cred, err := reg.Register(adminCtx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"lease"}})
	if err != nil {
		b.Fatal(err)
	}
	a, err := reg.Authenticate(adminCtx, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		b.Fatal(err)
	}
	return reg, c, a
}

// BenchmarkSubmit measures job submissions through the registry on
// PostgreSQL, allowlist checks included, from concurrent producers. Each is
// one statement (job, history, audit). Reports submits/s.
func BenchmarkSubmit(b *testing.B) {
	reg, c, _ := benchRegistry(b)
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := reg.SubmitJob(adminCtx, sub); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "submits/s")
}

// BenchmarkClaim measures acks (the atomic claim, with a lease) of queued
// jobs by concurrent agents. Reports claims/s.
func BenchmarkClaim(b *testing.B) {
	reg, c, a := benchRegistry(b)
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	ids := make([]string, b.N)
	for i := range ids {
		j, _, err := reg.SubmitJob(adminCtx, sub)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = j.ID
	}
	elapsed := storetest.RoundRobin(b, len(ids), func(i int) error { // each job once
		_, err := reg.AckJob(adminCtx, a, ids[i])
		return err
	})
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "claims/s")
}

// lookRegistry is benchRegistry with the visibility window on, as serve
// runs it: a look is a write that hides what it hands out.
func lookRegistry(b *testing.B) (*registry.Registry, *registry.Cluster, *registry.Agent) {
	b.Helper()
	st := openAt(b, freshSchema(b))
	reg := registry.New(st, registry.Config{VisibilityWindow: 30 * time.Second})
	b.Cleanup(reg.Close)
	c, tok, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "look", AllowedNamespaces: []string{"org-myteam"},
		AllowedCatalogEntries: []string{"nextcloud"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	cred, err := reg.Register(adminCtx, registry.RegisterParams{Token: tok.Secret.Reveal()})
	if err != nil {
		b.Fatal(err)
	}
	a, err := reg.Authenticate(adminCtx, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		b.Fatal(err)
	}
	return reg, c, a
}

// BenchmarkIdleLook measures polls' looks at an empty queue from
// concurrent agents (an idle fleet's held polls look when they start and on
// every wake-up). Reports looks/s.
func BenchmarkIdleLook(b *testing.B) {
	reg, c, a := lookRegistry(b)
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if jobs, err := reg.PollJobs(adminCtx, a, c.ID, 10); err != nil || len(jobs) != 0 {
				b.Errorf("look: %d jobs, %v", len(jobs), err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "looks/s")
}

// BenchmarkBusyLook measures looks that each hand out one queued job, from
// concurrent agents. Reports looks/s.
func BenchmarkBusyLook(b *testing.B) {
	reg, c, a := lookRegistry(b)
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	for range b.N {
		if _, _, err := reg.SubmitJob(adminCtx, sub); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := reg.PollJobs(adminCtx, a, c.ID, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "looks/s")
}

// benchLeasedWrites runs write on the jobs of ids, round robin, from
// concurrent agents, and reports writes/s under unit and the WAL the
// database wrote per write (the whole server's: run it on a quiet one).
func benchLeasedWrites(b *testing.B, ids []string, unit string, write func(i int) error) {
	conn := admin(b, serverDSN(b))
	var walStart string
	if err := conn.QueryRow(adminCtx, "SELECT pg_current_wal_lsn()::TEXT").Scan(&walStart); err != nil {
		b.Fatal(err)
	}
	elapsed := storetest.RoundRobin(b, len(ids), write)
	var wal float64
	if err := conn.QueryRow(adminCtx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::TEXT::pg_lsn)", walStart).Scan(&wal); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit+"/s")
	b.ReportMetric(wal/float64(b.N), "WAL-B/"+unit)
}

// BenchmarkHeartbeat measures lease heartbeats from concurrent agents, over
// a thousand leased jobs: a fleet's most frequent write (every leased job,
// every interval). Reports heartbeats/s and WAL bytes per heartbeat.
func BenchmarkHeartbeat(b *testing.B) {
	reg, _, a := benchRegistry(b)
	ids, claims := storetest.LeasedJobs(b, adminCtx, reg, a, json.RawMessage(benchPayload), 1000)
	benchLeasedWrites(b, ids, "heartbeat", func(i int) error {
		_, err := reg.HeartbeatJob(adminCtx, a, ids[i], claims[i])
		return err
	})
}

// BenchmarkStatusReport measures status reports (which renew the lease)
// from concurrent agents, over a thousand leased jobs. Reports reports/s
// and WAL bytes per report.
func BenchmarkStatusReport(b *testing.B) {
	reg, _, a := benchRegistry(b)
	ids, claims := storetest.LeasedJobs(b, adminCtx, reg, a, json.RawMessage(benchPayload), 1000)
	benchLeasedWrites(b, ids, "report", func(i int) error {
		return reg.ReportStatus(adminCtx, a, ids[i], claims[i], registry.StatusReport{Phase: "Applying", Message: "applying"})
	})
}
