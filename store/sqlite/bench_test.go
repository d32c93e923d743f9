package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	dir := b.TempDir()
	st := openAt(b, filepath.Join(dir, "tether.db"))
	reg := registry.New(st, registry.Config{})
	b.Cleanup(reg.Close)
	c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "bench", AllowedNamespaces: []string{"org-myteam"},
		AllowedCatalogEntries: []string{"nextcloud"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	cred, err := reg.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"lease"}})
	if err != nil {
		b.Fatal(err)
	}
	a, err := reg.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		b.Fatal(err)
	}
	return reg, c, a
}

// BenchmarkSubmit measures job submissions through the registry on SQLite,
// allowlist checks included, from concurrent producers (group commit batches
// them). Reports submits/s.
func BenchmarkSubmit(b *testing.B) {
	reg, c, _ := benchRegistry(b)
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := reg.SubmitJob(admin, sub); err != nil {
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
	// Queue b.N jobs first, from concurrent producers (one at a time, each
	// would be a commit of its own: minutes of setup for a long run).
	ids := make([]string, b.N)
	var next0 atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next0.Add(1) - 1; i < int64(b.N); i = next0.Add(1) - 1 {
				j, _, err := reg.SubmitJob(admin, sub)
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = j.ID
			}
		}()
	}
	wg.Wait()
	elapsed := storetest.RoundRobin(b, len(ids), func(i int) error { // each job once
		_, err := reg.AckJob(admin, a, ids[i])
		return err
	})
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "claims/s")
}

// BenchmarkReap measures the reaper over 100,000 in_progress jobs whose
// leases expired: each iteration seeds them (not timed) and times one
// Reaper.RunOnce, which requeues them batch by batch with history and audit
// entries. Reports seconds per 100k.
func BenchmarkReap(b *testing.B) {
	const n = 100_000
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		path := filepath.Join(dir, "tether.db")
		st := openAt(b, path)
		reg := registry.New(st, registry.Config{})
		c, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "bench", AllowedNamespaces: []string{"*"}}, 0)
		if err != nil {
			b.Fatal(err)
		}
		seedExpiredLeases(b, path, c.ID, n, reg.Now())
		b.StartTimer()
		start := time.Now()
		rep, err := registry.NewReaper(reg, registry.ReaperConfig{}).RunOnce(admin)
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil || rep.Requeued != n {
			b.Fatalf("reaper: %+v, %v; want %d requeued", rep, err, n)
		}
		b.ReportMetric(elapsed.Seconds(), "s/100k")
		reg.Close()
		st.Close()
	}
}

// seedExpiredLeases inserts n in_progress jobs whose leases ended a minute
// before now, and their claims, in two statements (the triggers keep counts
// and the feed).
func seedExpiredLeases(b *testing.B, path, clusterID string, n int, now time.Time) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	nowMs := now.UnixMilli()
	_, err = db.Exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)
		INSERT INTO jobs (id, cluster_id, kind, target_kind, target_namespace, target_name, payload, state, attempt,
			created_at, updated_at, claim_id, claimed_at, claimed_by, lease_seconds, last_activity_at)
		SELECT printf('j-reap%020d', i), ?, 'apply', 'ConfigMap', 'team-a', 'c' || i,
			'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"}}', 'in_progress', 1,
			? - 600000, ? - 120000, 'fc-' || i, ? - 120000, 'cr-bench', 60, ? - 120000 FROM c`,
		n, clusterID, nowMs, nowMs, nowMs, nowMs)
	if err != nil {
		b.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at)
		SELECT id, 60, ? - 60000 FROM jobs WHERE id LIKE 'j-reap%'`, nowMs)
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRetention deletes 100,000 jobs finished past retention (each with
// a history entry) in batches of 1,000 as the retention service does, and
// reports the total and the longest batch: how long the writer was held at
// most.
func BenchmarkRetention(b *testing.B) {
	const n = 100_000
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		path := filepath.Join(dir, "tether.db")
		st := openAt(b, path)
		reg := registry.New(st, registry.Config{})
		c, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "bench", AllowedNamespaces: []string{"*"}}, 0)
		if err != nil {
			b.Fatal(err)
		}
		now := reg.Now()
		seedFinished(b, path, c.ID, n, now.Add(-40*24*time.Hour))
		b.StartTimer()
		start := time.Now()
		var longest time.Duration
		total := 0
		for {
			t0 := time.Now()
			k, err := st.JobsPrune(admin, registry.JobsPruneParams{State: registry.JobCanceled,
				FinishedBefore: now.Add(-registry.DefaultJobRetention), Limit: registry.DefaultRetentionBatch})
			longest = max(longest, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			total += k
			if k < registry.DefaultRetentionBatch {
				break
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		if total != n {
			b.Fatalf("pruned %d, want %d", total, n)
		}
		b.ReportMetric(elapsed.Seconds(), "s/100k")
		b.ReportMetric(float64(longest.Microseconds())/1000, "ms/longest-batch")
		reg.Close()
		st.Close()
	}
}

// seedFinished inserts n canceled jobs that finished at finished, each with
// one history entry, in two statements.
func seedFinished(b *testing.B, path, clusterID string, n int, finished time.Time) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ms := finished.UnixMilli()
	if _, err = db.Exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)
		INSERT INTO jobs (id, cluster_id, kind, target_kind, target_namespace, target_name, payload, state, attempt,
			created_at, updated_at, finished_at)
		SELECT printf('j-ret%020d', i), ?, 'apply', 'ConfigMap', 'team-a', 'c' || i,
			'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"}}', 'canceled', 1,
			? - 60000, ?, ? FROM c`, n, clusterID, ms, ms, ms); err != nil {
		b.Fatal(err)
	}
	if _, err = db.Exec(`INSERT INTO job_history (job_id, at, type, actor, attempt, state, message)
		SELECT id, finished_at, 'canceled', 'admin', 1, 'canceled', 'bench' FROM jobs WHERE id LIKE 'j-ret%'`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIdleLook measures polls' looks at an empty queue (what an idle
// fleet's held polls do when they start and on every wake-up) from
// concurrent agents, with the visibility window on, as serve runs it.
// Reports looks/s.
func BenchmarkIdleLook(b *testing.B) {
	st := openAt(b, filepath.Join(b.TempDir(), "tether.db"))
	reg := registry.New(st, registry.Config{VisibilityWindow: 30 * time.Second})
	b.Cleanup(reg.Close)
	c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "idle", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	cred, err := reg.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal()})
	if err != nil {
		b.Fatal(err)
	}
	a, err := reg.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if jobs, err := reg.PollJobs(admin, a, c.ID, 10); err != nil || len(jobs) != 0 {
				b.Errorf("look: %d jobs, %v", len(jobs), err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "looks/s")
}

// BenchmarkBusyLook measures looks that each hand out one queued job, from
// concurrent agents, with the visibility window on. Reports looks/s.
func BenchmarkBusyLook(b *testing.B) {
	st := openAt(b, filepath.Join(b.TempDir(), "tether.db"))
	reg := registry.New(st, registry.Config{VisibilityWindow: 30 * time.Second})
	b.Cleanup(reg.Close)
	c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "busy", AllowedNamespaces: []string{"org-myteam"},
		AllowedCatalogEntries: []string{"nextcloud"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	cred, err := reg.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal()})
	if err != nil {
		b.Fatal(err)
	}
	a, err := reg.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		b.Fatal(err)
	}
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: json.RawMessage(benchPayload)}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, _, err := reg.SubmitJob(admin, sub); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := reg.PollJobs(admin, a, c.ID, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "looks/s")
}

// benchLeasedWrites runs write on the jobs of ids, round robin, from
// concurrent agents, and reports writes/s under unit.
func benchLeasedWrites(b *testing.B, ids []string, unit string, write func(i int) error) {
	elapsed := storetest.RoundRobin(b, len(ids), write)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit+"/s")
}

// BenchmarkHeartbeat measures lease heartbeats, a fleet's most frequent
// write (every leased job, every interval), over a thousand leased jobs.
func BenchmarkHeartbeat(b *testing.B) {
	reg, _, a := benchRegistry(b)
	ids, claims := storetest.LeasedJobs(b, admin, reg, a, json.RawMessage(benchPayload), 1000)
	benchLeasedWrites(b, ids, "heartbeats", func(i int) error {
		_, err := reg.HeartbeatJob(admin, a, ids[i], claims[i])
		return err
	})
}

// BenchmarkStatusReport measures status reports (which renew the lease)
// over a thousand leased jobs.
func BenchmarkStatusReport(b *testing.B) {
	reg, _, a := benchRegistry(b)
	ids, claims := storetest.LeasedJobs(b, admin, reg, a, json.RawMessage(benchPayload), 1000)
	benchLeasedWrites(b, ids, "reports", func(i int) error {
		return reg.ReportStatus(admin, a, ids[i], claims[i], registry.StatusReport{Phase: "Applying", Message: "applying"})
	})
}
