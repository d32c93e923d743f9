package sqlite_test

import (
	"testing"

	"github.com/tetherhq/tether/internal/testing/benchseed"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/sqlite"
)

// BenchmarkQueueHealthMillion reads queue health over a million jobs (50
// clusters, benchseed's shape): the whole fleet, as the overview does, and
// one cluster, as its detail does.
func BenchmarkQueueHealthMillion(b *testing.B) {
	path := benchseed.Cached(b, benchseed.Config{Clusters: 50, Jobs: 1_000_000})
	st, err := sqlite.Open(admin, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	clock := clocktest.New()
	clock.Set(benchseed.DefaultNow)
	reg := registry.New(st, registry.Config{Clock: clock})
	defer reg.Close()
	b.Run("fleet", func(b *testing.B) {
		for b.Loop() {
			if _, err := reg.FleetQueueHealth(admin); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
	b.Run("cluster", func(b *testing.B) {
		for b.Loop() {
			if _, err := reg.QueueHealth(admin, benchseed.ClusterID(0)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
}
