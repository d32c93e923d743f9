package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		b.Skip(dsnEnv + " is not set: skipping the PostgreSQL scenarios")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatalf("connect to %s: %v", dsnEnv, err)
	}
	buf := make([]byte, 6)
	rand.Read(buf)
	schema := "tether_bench_" + hex.EncodeToString(buf)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
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
