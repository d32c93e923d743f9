package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/apiclient"
)

// otlpCollector counts the OTLP/HTTP trace exports it receives.
type otlpCollector struct {
	mu      sync.Mutex
	exports int
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/traces" {
		c.mu.Lock()
		c.exports++
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *otlpCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exports
}

// serve traces to the collector of $OTEL_EXPORTER_OTLP_ENDPOINT (sending
// what is batched on SIGTERM), and $TETHER_METRICS_PER_CLUSTER=false drops the
// cluster label of the latency histograms.
func TestServeTracesAndLatencyMetrics(t *testing.T) {
	t.Parallel()
	col := &otlpCollector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	db := newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	scraper := scraperToken(t, db)
	p, addr, start := startServeEnv(t, db, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "TETHER_METRICS_PER_CLUSTER=false"}, "--listen", "127.0.0.1:0")
	if !strings.Contains(start, "tracing=true") {
		t.Fatalf("start line %q does not say tracing is on", start)
	}
	ctx := context.Background()
	cred, err := apiclient.Register(ctx, "http://"+addr, c.RegistrationToken, apiclient.RegisterOptions{Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://" + addr, Credential: cred, Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	j := submit(t, db, "prod", "apply", configMap("apps", "one"))
	if _, err := client.Poll(ctx, 0, 10); err != nil {
		t.Fatal(err)
	}
	claim, err := client.Ack(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Result(ctx, j.ID, claim.ClaimID, apiclient.Result{Outcome: apiclient.OutcomeSucceeded}); err != nil {
		t.Fatal(err)
	}
	_, metrics := httpGet(t, "http://"+addr+"/metrics", "Authorization", "Bearer "+scraper)
	for _, want := range []string{"\ntether_job_wait_seconds_count 1\n", "\ntether_job_run_seconds_count 1\n"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", strings.TrimSpace(want))
		}
	}
	if code, log := p.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, log)
	}
	if col.count() == 0 {
		t.Fatalf("the collector received no trace export; log:\n%s", p.log())
	}
}

func TestServeOTLPEndpointUsage(t *testing.T) {
	t.Parallel()
	wantError(t, cli(t, newDB(t), "serve", "--otlp-endpoint", "collector:4318"), exitUsage, "--otlp-endpoint")
}
