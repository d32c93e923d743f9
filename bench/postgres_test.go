package main

import (
	"context"
	"os"
	"testing"

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

// BenchmarkReplicasPostgres: 64 agents against one tether server on
// PostgreSQL, then split between two replicas sharing a database (each its
// own store, as two processes would have), in the same run.
func BenchmarkReplicasPostgres(b *testing.B) {
	const agents = 64
	one, _, _ := runTether(b, []registry.Store{openPostgres(b, postgresDSN(b))}, agents, b.N)
	dsn := postgresDSN(b)
	two, _, _ := runTether(b, []registry.Store{openPostgres(b, dsn), openPostgres(b, dsn)}, agents, b.N)
	b.ReportMetric(one, "one-replica-lifecycles/s")
	b.ReportMetric(two, "lifecycles/s")
	b.ReportMetric(two/one, "ratio")
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
