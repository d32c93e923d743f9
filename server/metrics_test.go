package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tetherhq/tether/registry"
)

// scrape fetches /metrics and parses it with Prometheus' own text parser.
func scrape(t *testing.T, e *env) map[string]*dto.MetricFamily {
	t.Helper()
	r := e.getMetrics(withHeader("Accept", "text/plain"))
	r.want(t, http.StatusOK)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, r.body)
	}
	// What `promtool check metrics` checks.
	problems, err := promlint.New(bytes.NewReader(r.body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promtool check metrics: %s: %s", p.Metric, p.Text)
	}
	return families
}

// value returns the sample of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Errorf("no %s in /metrics", name)
		return 0, false
	}
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func TestMetricsOperatorsAlertOn(t *testing.T) {
	e := newEnv(t)
	busy := e.newAgent("busy")
	e.newAgent("idle")
	e.cluster("waiting") // pending: never registered
	first := e.submit(busy.clusterID)
	e.clock.Advance(90 * time.Second)
	e.submit(busy.clusterID)
	e.submit(busy.clusterID)
	busy.events(heartbeatBody(busy.clusterID)).wantNoContent(t)

	// One claimed and finished, one claimed and still running.
	busy.ack(first).wantNoContent(t)
	busy.result(first, `{"outcome":"succeeded"}`).wantNoContent(t)
	ids := busy.poll(0).jobIDs(t)
	if len(ids) == 0 {
		t.Fatal("no job to claim")
	}
	busy.ack(ids[0]).wantNoContent(t)

	e.clock.Advance(30 * time.Second)
	fams := scrape(t, e)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tether_queue_depth", map[string]string{"cluster": "busy"}, 1},
		{"tether_queue_depth", map[string]string{"cluster": "idle"}, 0},
		{"tether_queue_oldest_job_age_seconds", map[string]string{"cluster": "idle"}, 0},
		{"tether_queue_not_draining", map[string]string{"cluster": "busy"}, 0},
		{"tether_queue_not_draining", map[string]string{"cluster": "idle"}, 0},
		{"tether_jobs_in_flight", map[string]string{"cluster": "busy"}, 1},
		{"tether_jobs_finished_total", map[string]string{"outcome": "succeeded", "kind": "apply"}, 1},
		{"tether_jobs_finished_total", map[string]string{"outcome": "failed", "kind": "apply"}, 0},
		{"tether_clusters", map[string]string{"state": "active"}, 2},
		{"tether_clusters", map[string]string{"state": "pending"}, 1},
		{"tether_cluster_heartbeat_age_seconds", map[string]string{"cluster": "busy"}, 30},
		{"tether_build_info", nil, 1},
		{"tether_agent_longpolls_held", nil, 0},
		{"tether_metrics_scrape_errors", nil, 0},
	} {
		if got, ok := value(t, fams, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	// The oldest queued job was submitted 120 s ago (the second of three;
	// the first was claimed).
	if got, _ := value(t, fams, "tether_queue_oldest_job_age_seconds", map[string]string{"cluster": "busy"}); got != 30 && got != 120 {
		t.Errorf("oldest queued job age %v s, want 30 (third job) or 120 (second job), whichever the poll left", got)
	}
	if bi := fams["tether_build_info"]; bi != nil {
		labels := map[string]bool{}
		for _, l := range bi.Metric[0].Label {
			labels[l.GetName()] = l.GetValue() != ""
		}
		if !labels["version"] || !labels["commit"] || !labels["goversion"] {
			t.Errorf("tether_build_info labels %v, want version, commit and goversion", bi.Metric[0].Label)
		}
	}
	// The idle agent never sent a heartbeat: no age rather than a huge one.
	if _, ok := value(t, fams, "tether_cluster_heartbeat_age_seconds", map[string]string{"cluster": "idle"}); ok {
		t.Error("a heartbeat age for a cluster that never sent one")
	}
	// Bounded cardinality: no series is labelled by anything unbounded.
	for name, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				v, n := l.GetValue(), l.GetName()
				if strings.HasPrefix(v, "j-") || strings.HasPrefix(v, "rq-") || strings.HasPrefix(v, "rt-") || strings.HasPrefix(v, "tether_") ||
					n == "job" || n == "job_id" || n == "request_id" || n == "credential" || n == "token" {
					t.Errorf("%s has a per-job, per-request or secret label %s=%q", name, n, v)
				}
			}
		}
	}
}

// --diag-listen's handler: the same metrics, and pprof.
func TestDiagHandler(t *testing.T) {
	e := newEnv(t)
	h := e.srv.DiagHandler()
	for path, want := range map[string]string{"/metrics": "tether_build_info", "/debug/pprof/": "goroutine", "/healthz": "ok"} {
		rec := httptestRecorder()
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		h.ServeHTTP(rec, req)
		if rec.code != http.StatusOK || !strings.Contains(rec.body.String(), want) {
			t.Errorf("GET %s on the diagnostics port: %d, want 200 with %q", path, rec.code, want)
		}
	}
}

type recorder struct {
	code   int
	header http.Header
	body   bytes.Buffer
}

func httptestRecorder() *recorder { return &recorder{code: http.StatusOK, header: http.Header{}} }

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

// Expired leases are counted by cluster, by name.
func TestMetricsLeaseExpirationsByCluster(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("leasy", "lease")
	job := e.submit(a.clusterID)
	a.ack(job).wantNoContent(t)
	e.clock.Advance(registry.DefaultLeaseSeconds*time.Second + time.Second)
	rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(context.Background())
	if err != nil || rep.Requeued != 1 {
		t.Fatalf("reaper: %+v, %v", rep, err)
	}
	e.srv.RecordReap(rep, nil)
	fams := scrape(t, e)
	if got, ok := value(t, fams, "tether_cluster_lease_expirations_total", map[string]string{"cluster": "leasy", "action": "requeued"}); !ok || got != 1 {
		t.Errorf("tether_cluster_lease_expirations_total{cluster=leasy,action=requeued} = %v (found %v), want 1", got, ok)
	}
}

// Webhook deliveries are counted by event and result, with bounded labels.
func TestMetricsWebhookDeliveries(t *testing.T) {
	e := newEnv(t)
	e.srv.RecordWebhookDelivery("job.finished", 200, nil)
	e.srv.RecordWebhookDelivery("job.finished", 503, nil)
	e.srv.RecordWebhookDelivery("rollout.halted", 0, context.DeadlineExceeded)
	e.srv.RecordWebhookDelivery("made.up", 200, nil)
	fams := scrape(t, e)
	for _, tc := range []struct {
		event, result string
		want          float64
	}{
		{"job.finished", "delivered", 1},
		{"job.finished", "rejected", 1},
		{"rollout.halted", "unreachable", 1},
		{"other", "delivered", 1},
		{"credential.revoked", "delivered", 0},
	} {
		if got, ok := value(t, fams, "tether_webhook_deliveries_total", map[string]string{"event": tc.event, "result": tc.result}); !ok || got != tc.want {
			t.Errorf("tether_webhook_deliveries_total{%s,%s} = %v (found %v), want %v", tc.event, tc.result, got, ok, tc.want)
		}
	}
}

func TestMetricsRetention(t *testing.T) {
	e := newEnv(t)
	e.srv.RecordRetention(registry.RetentionReport{Jobs: 1200, Audit: 7, WebhookDeliveries: 40, IdempotencyKeys: 12})
	e.srv.RecordRetention(registry.RetentionReport{Jobs: 3})
	fams := scrape(t, e)
	for kind, want := range map[string]float64{"jobs": 1203, "audit": 7, "webhook_deliveries": 40, "idempotency_keys": 12} {
		if got, ok := value(t, fams, "tether_pruned_total", map[string]string{"kind": kind}); !ok || got != want {
			t.Errorf("tether_pruned_total{kind=%s} = %v (found %v), want %v", kind, got, ok, want)
		}
	}
}
