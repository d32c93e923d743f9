package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// BenchmarkAgentLifecycle measures tether end to end over loopback HTTP: N
// agents (one per cluster) each long-poll, ack, report status and post the
// result of jobs that producers submit concurrently (one outstanding job per
// cluster, so enqueue-to-ack is the wake-up path, not a backlog). One op is
// one job lifecycle.
//
// Beside it, the same client makes the same four requests against a trivial
// handler on the same machine: the baseline. x-baseline is how many times
// slower tether's lifecycle is than the baseline's, which is what the
// protocol, the registry and SQLite (with fsync on every group commit) cost.
func BenchmarkAgentLifecycle(b *testing.B) {
	for _, n := range []int{8, 32} {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) { benchLifecycle(b, n) })
	}
}

// benchClient is an agent's HTTP client: plain net/http, as a third-party
// agent would write it.
type benchClient struct {
	http  *http.Client
	base  string
	token string
}

func (c *benchClient) do(ctx context.Context, method, path, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", mediaV1)
	if body != "" {
		req.Header.Set("Content-Type", mediaV1)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// lifecycle runs poll -> ack -> status -> result for one job, or returns
// ok=false when the poll came back empty. onAck runs when the ack answered.
func (c *benchClient) lifecycle(ctx context.Context, clusterID string, onAck func(jobID string)) (bool, error) {
	code, body, err := c.do(ctx, http.MethodGet, "/api/agent/jobs?cluster="+clusterID+"&wait=10&limit=1", "")
	if err != nil {
		return false, err
	}
	if code != http.StatusOK {
		return false, fmt.Errorf("poll: %d %s", code, body)
	}
	var jobs struct {
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(body, &jobs); err != nil {
		return false, err
	}
	if len(jobs.Jobs) == 0 {
		return false, nil
	}
	id := jobs.Jobs[0].ID
	steps := []struct{ path, body string }{
		{"/api/agent/jobs/" + id + "/ack", ""},
		{"/api/agent/jobs/" + id + "/status", `{"phase":"Applying","conditions":[{"type":"Ready","status":"False","reason":"Progressing","lastTransitionTime":null}],"message":"applying"}`},
		{"/api/agent/jobs/" + id + "/result", `{"outcome":"succeeded","appliedRef":{"apiVersion":"v1","kind":"ConfigMap","namespace":"default","name":"bench","generation":1}}`},
	}
	for i, s := range steps {
		code, body, err := c.do(ctx, http.MethodPost, s.path, s.body)
		if err != nil {
			return false, err
		}
		if code != http.StatusNoContent {
			return false, fmt.Errorf("POST %s: %d %s", s.path, code, body)
		}
		if i == 0 {
			onAck(id)
		}
	}
	return true, nil
}

func newBenchHTTPClient(agents int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * agents, MaxIdleConnsPerHost: 4 * agents}}
}

func benchLifecycle(b *testing.B, agents int) {
	baseline := benchBaseline(b, agents, b.N)

	// tether: a real server over a SQLite file, wall clock, no rate limit.
	dbPath := filepath.Join(b.TempDir(), "bench.db")
	st, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, registry.Config{})
	defer reg.Close()
	srv := server.New(reg, server.Config{Logger: slog.New(slog.DiscardHandler), RateLimit: -1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	defer func() { stopServe(); <-served }()
	base := "http://" + ln.Addr().String()
	hc := newBenchHTTPClient(agents)
	defer hc.CloseIdleConnections()

	clusters := make([]string, agents)
	clients := make([]*benchClient, agents)
	for i := range agents {
		c, tok, err := reg.CreateCluster(adminCtx(), registry.ClusterSpec{Name: fmt.Sprintf("bench-%d", i), AllowedNamespaces: []string{"*"}}, 0)
		if err != nil {
			b.Fatal(err)
		}
		reg := &benchClient{http: hc, base: base, token: tok.Secret.Reveal()}
		code, body, err := reg.do(context.Background(), http.MethodPost, "/api/agent/register", `{"registrationToken":"`+tok.Secret.Reveal()+`"}`)
		if err != nil || code != http.StatusOK {
			b.Fatalf("register: %d %s %v", code, body, err)
		}
		var ans credentialAnswer
		if err := json.Unmarshal(body, &ans); err != nil {
			b.Fatal(err)
		}
		clusters[i], clients[i] = c.ID, &benchClient{http: hc, base: base, token: ans.Token}
	}

	var (
		budget    atomic.Int64 // jobs left to submit
		enqueued  sync.Map     // job id -> time.Time its submission committed
		latMu     sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
		failed    atomic.Pointer[error]
	)
	budget.Store(int64(b.N))
	fail := func(err error) { failed.CompareAndSwap(nil, &err) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	b.ResetTimer()
	start := time.Now()
	var producers, agentsWG sync.WaitGroup
	for i := range agents {
		done := make(chan struct{}, 1) // the agent finished this cluster's job
		producers.Add(1)
		go func() { // producer: one outstanding job per cluster
			defer producers.Done()
			payload := json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-%d","namespace":"default"},"data":{"k":"v"}}`, i))
			for budget.Add(-1) >= 0 {
				j, _, err := reg.SubmitJob(adminCtx(), registry.JobSubmission{ClusterID: clusters[i], Kind: registry.KindApply, Payload: payload})
				if err != nil {
					fail(err)
					return
				}
				enqueued.Store(j.ID, time.Now())
				select {
				case <-done:
				case <-ctx.Done():
					return
				}
			}
		}()
		agentsWG.Add(1)
		go func() { // agent
			defer agentsWG.Done()
			onAck := func(id string) {
				if t0, ok := enqueued.Load(id); ok {
					d := time.Since(t0.(time.Time))
					latMu.Lock()
					latencies = append(latencies, d)
					latMu.Unlock()
				}
			}
			for ctx.Err() == nil {
				got, err := clients[i].lifecycle(ctx, clusters[i], onAck)
				if err != nil {
					if ctx.Err() == nil {
						fail(err)
						cancel()
					}
					return
				}
				if got {
					done <- struct{}{}
				}
			}
		}()
	}
	producers.Wait()
	// Every producer returned after its last job's result (or a failure).
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	agentsWG.Wait()
	if p := failed.Load(); p != nil && !errors.Is(*p, context.Canceled) {
		b.Fatal(*p)
	}

	slices.Sort(latencies)
	perSec := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(perSec, "lifecycles/s")
	b.ReportMetric(baseline, "baseline-lifecycles/s")
	b.ReportMetric(baseline/perSec, "x-baseline")
	if len(latencies) > 0 {
		b.ReportMetric(ms(latencies[len(latencies)*50/100]), "ack-p50-ms")
		b.ReportMetric(ms(latencies[min(len(latencies)-1, len(latencies)*99/100)]), "ack-p99-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// benchBaseline runs n lifecycles of the same four requests from the same
// client against a handler that does nothing, with the same agent count, and
// returns lifecycles per second.
func benchBaseline(b *testing.B, agents, n int) float64 {
	b.Helper()
	job := `{"jobs":[{"id":"j-bench","kind":"apply","payload":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench","namespace":"default"},"data":{"k":"v"}},"createdAt":"2026-05-28T10:00:00Z","attempt":1}]}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", mediaV1)
			_, _ = io.WriteString(w, job)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ts.Close()
	hc := newBenchHTTPClient(agents)
	defer hc.CloseIdleConnections()
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	start := time.Now()
	for range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &benchClient{http: hc, base: ts.URL, token: "baseline"}
			for left.Add(-1) >= 0 {
				if _, err := c.lifecycle(context.Background(), "cl-bench", func(string) {}); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
	return float64(n) / time.Since(start).Seconds()
}
