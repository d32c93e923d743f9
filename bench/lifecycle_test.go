package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/tetherhq/tether/internal/testing/benchlife"
	"github.com/tetherhq/tether/internal/testing/benchseed"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// The scenario lives in internal/testing/benchlife, which bench/river (tether beside
// River, in one process) shares.
var (
	admin      = benchlife.Admin
	httpClient = benchlife.HTTPClient
	openSQLite = benchlife.OpenSQLite
	ms         = benchlife.MS
)

const lifecycleAgents = benchlife.Agents

func runTether(b *testing.B, stores []registry.Store, agents, n int) (rate, p50, p99 float64) {
	return benchlife.RunTether(b, stores, agents, n, nil)
}

func runBaseline(b *testing.B, agents, n int) float64 {
	return benchlife.RunBaseline(b, agents, n, nil)
}

// BenchmarkLifecycle: N apiclient agents (one cluster each) over loopback
// HTTP do poll -> ack -> status -> result, while producers submit their jobs
// concurrently (keeping two queued per cluster, so that polls find work as
// they do against the trivial handler). Side by side, in the same run, the
// same client does the same four requests against a trivial handler: the
// ratio is what the protocol and the store cost.
func BenchmarkLifecycle(b *testing.B) {
	baseline := runBaseline(b, lifecycleAgents, b.N)
	rate, p50, p99 := runTether(b, []registry.Store{openSQLite(b)}, lifecycleAgents, b.N)
	b.ReportMetric(rate, "lifecycles/s")
	b.ReportMetric(baseline, "baseline-lifecycles/s")
	b.ReportMetric(rate/baseline, "ratio")
	b.ReportMetric(p50, "enqueue-ack-p50-ms")
	b.ReportMetric(p99, "enqueue-ack-p99-ms")
}

// BenchmarkLifecycleMillion is the lifecycle on SQLite with a million jobs
// of 50 other clusters already in the tables (97.5% of them finished, as
// internal/testing/benchseed shapes a month of work), against an empty database in
// the same run: what a store that has been in service for a while costs.
func BenchmarkLifecycleMillion(b *testing.B) {
	empty, _, _ := runTether(b, []registry.Store{openSQLite(b)}, lifecycleAgents, b.N)
	path := benchseed.Cached(b, benchseed.Config{Clusters: 50, Jobs: 1_000_000})
	st, err := sqlite.Open(admin, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	// As tether serve does, the search index is merged in the background
	// (registry.SearchMerger): at once, then every 10 s. With -count the
	// next run finds the index as the merger left it after this one.
	ctx, cancel := context.WithCancel(context.Background())
	merged := make(chan struct{})
	go func() {
		defer close(merged)
		registry.NewSearchMerger(registry.New(st, registry.Config{}), registry.SearchMergerConfig{}).Run(ctx, nil)
	}()
	b.Cleanup(func() {
		cancel()
		<-merged
		st.Close()
	})
	full, _, _ := runTether(b, []registry.Store{st}, lifecycleAgents, b.N)
	b.ReportMetric(full, "lifecycles/s")
	b.ReportMetric(empty, "empty-lifecycles/s")
	b.ReportMetric(full/empty, "ratio")
}

// BenchmarkLifecycleAgents is the lifecycle on SQLite with 8, 32 and 128
// agents: how throughput grows with concurrency.
func BenchmarkLifecycleAgents(b *testing.B) {
	for _, n := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) {
			rate, _, _ := runTether(b, []registry.Store{openSQLite(b)}, n, b.N)
			b.ReportMetric(rate, "lifecycles/s")
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	benchseed.Cleanup()
	os.Exit(code)
}
