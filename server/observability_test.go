package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/webhook"
)

// scrape reads /metrics over HTTP.
func (e *env) scrape() string {
	e.t.Helper()
	r := e.getMetrics()
	r.want(e.t, http.StatusOK)
	return string(r.body)
}

func wantMetrics(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w+"\n") {
			t.Errorf("metrics lack %q", w)
		}
	}
}

// A job's wait (submission to ack) and run (ack to result) are observed from
// its timestamps, per cluster, when this replica records the ack and the
// result.
func TestJobLatencyMetrics(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("edge-1", "lease")
	job := e.submit(a.clusterID)
	e.clock.Advance(45 * time.Second)
	a.ack(job).wantNoContent(t)
	e.clock.Advance(10 * time.Minute)
	a.result(job, `{"outcome":"succeeded"}`).wantNoContent(t)
	// A noop for a job never acked did not run: no observation.
	skipped := e.submit(a.clusterID)
	a.result(skipped, `{"outcome":"noop"}`).wantNoContent(t)

	wantMetrics(t, e.scrape(),
		`tether_job_wait_seconds_bucket{cluster="edge-1",le="30"} 0`,
		`tether_job_wait_seconds_bucket{cluster="edge-1",le="60"} 1`,
		`tether_job_wait_seconds_sum{cluster="edge-1"} 45`,
		`tether_job_wait_seconds_count{cluster="edge-1"} 1`,
		`tether_job_run_seconds_bucket{cluster="edge-1",le="300"} 0`,
		`tether_job_run_seconds_bucket{cluster="edge-1",le="600"} 1`,
		`tether_job_run_seconds_sum{cluster="edge-1"} 600`,
		`tether_job_run_seconds_count{cluster="edge-1"} 1`,
	)
}

// serve --metrics-per-cluster=false: one histogram of each for the fleet.
func TestJobLatencyMetricsWithoutClusterLabel(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.NoClusterLatencyLabel = true })
	for _, name := range []string{"edge-1", "edge-2"} {
		a := e.newAgent(name)
		job := e.submit(a.clusterID)
		a.ack(job).wantNoContent(t)
		e.clock.Advance(3 * time.Second)
		a.result(job, `{"outcome":"succeeded"}`).wantNoContent(t)
	}
	text := e.scrape()
	wantMetrics(t, text, `tether_job_wait_seconds_count 2`, `tether_job_run_seconds_sum 6`, `tether_job_run_seconds_count 2`)
	if strings.Contains(text, `tether_job_run_seconds_count{cluster=`) {
		t.Error("the latency histograms have a cluster label with NoClusterLatencyLabel")
	}
}

// Deliveries to a receiver that is down stay pending, and the gauge says how
// many; deleting the subscription ends them.
func TestPendingWebhookDeliveriesMetric(t *testing.T) {
	e := newEnvWith(t, registry.Config{WebhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/hook"
	ln.Close() // nothing listens there now: connection refused
	wantMetrics(t, e.scrape(), `tether_webhook_deliveries_pending 0`)

	if _, _, err := e.reg.CreateWebhook(adminCtx(), "billing", down, []string{registry.WebhookJobFinished}, ""); err != nil {
		t.Fatal(err)
	}
	a := e.newAgent("edge-1")
	for range 3 {
		job := e.submit(a.clusterID)
		a.result(job, `{"outcome":"noop"}`).wantNoContent(t)
	}
	var (
		mu       sync.Mutex
		attempts []webhook.Attempt
	)
	// Report is called from the sender's goroutines, one per webhook.
	sender := webhook.New(e.reg, webhook.Config{Timeout: patience, Report: func(at webhook.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, at)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := sender.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 3 || attempts[0].Status != 0 || attempts[0].Err == nil {
		t.Fatalf("attempts = %+v, want three that found nobody listening", attempts)
	}
	wantMetrics(t, e.scrape(), `tether_webhook_deliveries_pending 3`)

	if _, err := e.reg.DeleteWebhook(adminCtx(), "billing"); err != nil {
		t.Fatal(err)
	}
	wantMetrics(t, e.scrape(), `tether_webhook_deliveries_pending 0`)
}

// With tracing off, a producer's traceparent still travels with its job to
// the agent, so that the agent's work joins the producer's trace.
func TestTraceparentWithoutTracing(t *testing.T) {
	e := newEnv(t)
	tok := e.adminToken("ci", registry.RoleOperator, "")
	a := e.newAgent("edge-1")
	const producer = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	e.api(http.MethodPost, "/jobs", tok, submitOf(a.clusterID), withHeader("traceparent", producer)).want(t, http.StatusAccepted)
	if got := polledTraceparents(t, a); len(got) != 1 || got[0] != producer {
		t.Fatalf("polled traceparents %q, want [%s]", got, producer)
	}
	// A malformed header is ignored, as the W3C recommendation says: the job
	// is submitted untraced.
	e.api(http.MethodPost, "/jobs", tok, submitOf(a.clusterID), withHeader("traceparent", "00-nonsense-01")).want(t, http.StatusAccepted)
	if got := polledTraceparents(t, a); len(got) != 1 || got[0] != "" {
		t.Fatalf("polled traceparents %q, want one empty (the first job is hidden once polled)", got)
	}
}

func submitOf(clusterID string) map[string]any {
	manifestMu.Lock()
	manifestN++
	n := manifestN
	manifestMu.Unlock()
	return map[string]any{"cluster": clusterID, "kind": "apply", "payload": json.RawMessage(fmt.Sprintf(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t-%d","namespace":"default"}}`, n))}
}

// polledTraceparents polls once and returns the jobs' traceparent fields.
func polledTraceparents(t *testing.T, a *agent) []string {
	t.Helper()
	r := a.poll(0)
	r.want(t, http.StatusOK)
	var ans struct {
		Jobs []struct {
			ID          string `json:"id"`
			Traceparent string `json:"traceparent"`
		} `json:"jobs"`
	}
	r.decode(t, &ans)
	var out []string
	for _, j := range ans.Jobs {
		out = append(out, j.Traceparent)
	}
	return out
}
