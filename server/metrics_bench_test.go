package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// BenchmarkMetricsScrape: one /metrics scrape over a fleet of 1,000
// clusters, 100 of them with queued jobs (the per-cluster oldest-job reads).
func BenchmarkMetricsScrape(b *testing.B) {
	e := newEnv(b)
	for i := range 1000 {
		c, _ := e.cluster(fmt.Sprintf("c%04d", i), func(s *registry.ClusterSpec) {})
		if i%10 == 0 {
			e.submit(c.ID)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if r := e.getMetrics(withHeader("Accept", "text/plain")); r.status != http.StatusOK {
			b.Fatalf("/metrics: %d", r.status)
		}
	}
}
