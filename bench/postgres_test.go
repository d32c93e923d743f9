package main

import (
	"context"
	"os"
	"testing"

	"github.com/tetherhq/tether/internal/testing/benchlife"
	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// BenchmarkLifecyclePostgres is BenchmarkLifecycle with the PostgreSQL
// store: the same agents, requests and producers, in a schema of its own.
func BenchmarkLifecyclePostgres(b *testing.B) {
	dsn := postgresDSN(b)
	baseline := runBaseline(b, lifecycleAgents, b.N)
	rate, p50, p99 := runTether(b, []registry.Store{openPostgres(b, dsn)}, lifecycleAgents, b.N)
	b.ReportMetric(rate, "lifecycles/s")
	b.ReportMetric(baseline, "baseline-lifecycles/s")
	b.ReportMetric(rate/baseline, "ratio")
	b.ReportMetric(p50, "enqueue-ack-p50-ms")
	b.ReportMetric(p99, "enqueue-ack-p99-ms")
}

// replicaAgents is N of the replica scenario.
const replicaAgents = 64

// BenchmarkReplicasPostgres: 64 agents against one tether server on
// PostgreSQL, then split between two replicas sharing a database (each its
// own store, as two processes would have), in the same run, each in a
// database of its own. Both replicas run in this process, on the same cores
// as PostgreSQL and the agents, so they cannot add CPU: the scenario also
// reports what each part spends per lifecycle, the inputs of make bench's
// capacity model:
//   - PostgreSQL: the CPU of the database's backends (/proc);
//   - the agents: this process's CPU per lifecycle against the trivial
//     handler (the agents' client work, and the handler's, which is small);
//   - serve: this process's CPU per lifecycle against tether, less the
//     agents' (the producers' submits count as serve's: in production they
//     are admin API calls that serve answers).
func BenchmarkReplicasPostgres(b *testing.B) {
	var agentCPU float64
	runBaselineWindow(b, replicaAgents, b.N, &agentCPU)

	dsn, meter := benchlife.Database(b, "tether_bench_one")
	var one1 benchlife.Usage
	one, _, _ := benchlife.RunTether(b, []registry.Store{openPostgres(b, dsn)}, replicaAgents, b.N, meterWindow(b, meter, &one1))
	dsn2, meter2 := benchlife.Database(b, "tether_bench_two")
	var two2 benchlife.Usage
	two, _, _ := benchlife.RunTether(b, []registry.Store{openPostgres(b, dsn2), openPostgres(b, dsn2)}, replicaAgents, b.N, meterWindow(b, meter2, &two2))
	n := float64(b.N)
	b.ReportMetric(one, "one-replica-lifecycles/s")
	b.ReportMetric(two, "lifecycles/s")
	b.ReportMetric(two/one, "ratio")
	b.ReportMetric(1000*agentCPU/n, "agent-cpu-ms/lifecycle")
	b.ReportMetric(1000*(one1.ProcessCPU-agentCPU)/n, "serve-cpu-ms/lifecycle")
	b.ReportMetric(1000*one1.BackendCPU/n, "pg-cpu-ms/lifecycle")
	b.ReportMetric(float64(one1.Commits)/n, "pg-commits/lifecycle")
	b.ReportMetric(1000*(two2.ProcessCPU-agentCPU)/n, "two-serve-cpu-ms/lifecycle")
	b.ReportMetric(1000*two2.BackendCPU/n, "two-pg-cpu-ms/lifecycle")
}

// meterWindow measures a run's window into u.
func meterWindow(b *testing.B, m *benchlife.Meter, u *benchlife.Usage) benchlife.Window {
	return func() func() {
		r := m.Start(b)
		return func() { *u = m.End(b, r) }
	}
}

// runBaselineWindow runs the trivial handler's lifecycles and puts this
// process's CPU seconds over them in cpu.
func runBaselineWindow(b *testing.B, agents, n int, cpu *float64) float64 {
	return benchlife.RunBaseline(b, agents, n, func() func() {
		t0 := benchlife.ProcessCPU()
		return func() { *cpu = benchlife.ProcessCPU() - t0 }
	})
}

// postgresDSN returns the DSN of an empty schema of its own, dropped when b
// ends; without TETHER_TEST_POSTGRES_DSN the benchmark is skipped.
func postgresDSN(b *testing.B) string {
	if os.Getenv(dsnEnv) == "" {
		b.Skip(dsnEnv + " is not set: skipping the PostgreSQL scenarios")
	}
	dsn, _ := pgtest.Schema(b, "tether_bench")
	return dsn
}

// openPostgres opens a store on dsn, closed when b ends (before the schema
// is dropped: cleanups run last-registered first).
func openPostgres(b *testing.B, dsn string) registry.Store {
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}
