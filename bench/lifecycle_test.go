package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/internal/testing/benchseed"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

var admin = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "bench"})

// lifecycleAgents is N of the lifecycle scenario.
const lifecycleAgents = 32

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

func httpClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * conns, MaxIdleConnsPerHost: 2 * conns}}
}

// lifecycle is one agent's poll, ack, status and result with apiclient. It
// returns the acked job's id, or "" when the poll found nothing.
func lifecycle(ctx context.Context, c *apiclient.Client) (string, error) {
	jobs, err := c.Poll(ctx, 30*time.Second, 1)
	if err != nil || len(jobs) == 0 {
		return "", err
	}
	id := jobs[0].ID
	claim, err := c.Ack(ctx, id)
	if err != nil {
		return "", err
	}
	now := time.Now().UTC()
	if err := c.Status(ctx, id, claim.ClaimID, apiclient.Status{Phase: "Applying", Message: "applying",
		Conditions: []apiclient.Condition{{Type: "Ready", Status: "False", Reason: "Progressing", LastTransitionTime: &now}}}); err != nil {
		return "", err
	}
	return id, c.Result(ctx, id, claim.ClaimID, apiclient.Result{Outcome: apiclient.OutcomeSucceeded,
		AppliedRef: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","namespace":"default","name":"bench","generation":1}`)})
}

// runAgents runs agents until n lifecycles are done and returns the rate.
func runAgents(b *testing.B, clients []*apiclient.Client, n int, onAck func(i int, id string)) float64 {
	var done atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	var failed error
	var once sync.Once
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(n) {
				id, err := lifecycle(ctx, c)
				if err != nil {
					if ctx.Err() == nil {
						once.Do(func() { failed = err; cancel() })
					}
					return
				}
				if id != "" {
					onAck(i, id)
					if done.Add(1) >= int64(n) {
						cancel() // release agents held in a poll
					}
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	return float64(n) / time.Since(start).Seconds()
}

// openSQLite opens a store in a new SQLite file, closed when b ends.
func openSQLite(b *testing.B) registry.Store {
	st, err := sqlite.Open(admin, filepath.Join(b.TempDir(), "tether.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// tetherRuns counts runTether's runs.
var tetherRuns atomic.Int64

// runTether runs the scenario against one tether server per store (replicas
// when the stores share a database), agents spread over them in turn.
func runTether(b *testing.B, stores []registry.Store, agents, n int) (rate, p50, p99 float64) {
	keyFile := filepath.Join(b.TempDir(), "tether.key") // replicas share the key file
	regs := make([]*registry.Registry, len(stores))
	urls := make([]string, len(stores))
	for k, st := range stores {
		regs[k] = registry.New(st, registry.Config{Keyring: registry.NewKeyFile(keyFile)})
		defer regs[k].Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srvCtx, stopSrv := context.WithCancel(context.Background())
		srvDone := make(chan error, 1)
		go func() {
			srvDone <- server.New(regs[k], server.Config{Logger: slog.New(slog.DiscardHandler), RateLimit: -1}).Serve(srvCtx, ln)
		}()
		defer func() { stopSrv(); <-srvDone }()
		urls[k] = "http://" + ln.Addr().String()
	}
	hc := httpClient(agents)
	clients := make([]*apiclient.Client, agents)
	clusters := make([]string, agents)
	run := tetherRuns.Add(1) // a database may serve several runs (BenchmarkLifecycleMillion's)
	for i := range agents {
		reg, url := regs[i%len(regs)], urls[i%len(urls)]
		c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: fmt.Sprintf("bench-%d-%d", run, i), AllowedNamespaces: []string{"default"}}, 0)
		if err != nil {
			b.Fatal(err)
		}
		cred, err := apiclient.Register(admin, url, tok.Secret.Reveal(), apiclient.RegisterOptions{HTTPClient: hc})
		if err != nil {
			b.Fatal(err)
		}
		clients[i], _ = apiclient.New(apiclient.Config{BaseURL: url, Credential: cred, HTTPClient: hc})
		clusters[i] = c.ID
	}
	// Producers: two queued jobs per cluster; each ack makes room for one more.
	var enqueued sync.Map
	submit := func(i int) {
		j, _, err := regs[i%len(regs)].SubmitJob(admin, registry.JobSubmission{ClusterID: clusters[i], Kind: registry.KindApply,
			Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench","namespace":"default"},"data":{"k":"v"}}`)})
		if err != nil {
			b.Error(err)
			return
		}
		enqueued.Store(j.ID, time.Now())
	}
	room := make([]chan struct{}, agents)
	var producers sync.WaitGroup
	prodCtx, stopProducers := context.WithCancel(context.Background())
	for i := range agents {
		room[i] = make(chan struct{}, 2)
		room[i] <- struct{}{}
		room[i] <- struct{}{}
		producers.Add(1)
		go func() {
			defer producers.Done()
			for {
				select {
				case <-prodCtx.Done():
					return
				case <-room[i]:
					submit(i)
				}
			}
		}()
	}
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	rate = runAgents(b, clients, n, func(i int, id string) {
		if t0, ok := enqueued.LoadAndDelete(id); ok {
			mu.Lock()
			lat = append(lat, time.Since(t0.(time.Time)))
			mu.Unlock()
		}
		select {
		case room[i] <- struct{}{}:
		default:
		}
	})
	b.StopTimer()
	stopProducers()
	producers.Wait()
	slices.Sort(lat)
	if len(lat) == 0 {
		return rate, 0, 0
	}
	return rate, ms(lat[len(lat)/2]), ms(lat[min(len(lat)-1, len(lat)*99/100)])
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runBaseline: the same client and requests against a handler that does
// nothing but answer them as the protocol says.
func runBaseline(b *testing.B, agents, n int) float64 {
	job := []byte(`{"jobs":[{"id":"j-baseline","kind":"apply","payload":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench","namespace":"default"}},"createdAt":"2026-05-28T10:00:00Z"}]}`)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/agent/jobs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", apiclient.MediaType)
		w.Write(job)
	})
	mux.HandleFunc("POST /api/agent/jobs/{id}/{action}", func(w http.ResponseWriter, r *http.Request) {
		var body json.RawMessage
		if r.ContentLength > 0 {
			json.NewDecoder(r.Body).Decode(&body)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String()
	hc := httpClient(agents)
	clients := make([]*apiclient.Client, agents)
	for i := range clients {
		clients[i], _ = apiclient.New(apiclient.Config{BaseURL: url, HTTPClient: hc,
			Credential: apiclient.Credential{ClusterID: "cl-baseline", Token: "tether_cred_baseline"}})
	}
	return runAgents(b, clients, n, func(int, string) {})
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
	b.Cleanup(func() { st.Close() })
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
