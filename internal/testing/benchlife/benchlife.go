// Package benchlife is the lifecycle scenario of make bench, shared by
// tether's own benchmarks (bench/) and the peer's (bench/river, a module of
// its own that runs tether and River side by side in one process): N apiclient
// agents over loopback HTTP do poll -> ack -> status -> result while producers
// keep two jobs queued per agent's cluster.
//
// The peer's module imports this package, never the other way round: River
// is not a dependency of tether's module.
package benchlife

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// Admin is the context the scenarios submit and create clusters with.
var Admin = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "bench"})

// Agents is N of the lifecycle scenario.
const Agents = 32

// Payload is the job every producer submits.
var Payload = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench","namespace":"default"},"data":{"k":"v"}}`)

// Window is called when the timed part of a run starts; the function it
// returns when it ends (nil: nothing to do). Benchmarks use it to read CPU
// and database counters over exactly the lifecycles they divide by.
type Window func() (end func())

// HTTPClient is the agents' shared client, with an idle connection each.
func HTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * conns, MaxIdleConnsPerHost: 2 * conns}}
}

// Lifecycle is one agent's poll, ack, status and result with apiclient. It
// returns the acked job's id, or "" when the poll found nothing.
func Lifecycle(ctx context.Context, c *apiclient.Client) (string, error) {
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

// RunAgents runs agents until n lifecycles are done and returns the rate.
func RunAgents(b *testing.B, clients []*apiclient.Client, n int, onAck func(i int, id string)) float64 {
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
				id, err := Lifecycle(ctx, c)
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

// Drive runs the agents' n lifecycles while producers keep two jobs queued
// for each agent (submit(i) submits one for agent i and returns its id; each
// ack makes room for one more). It returns the rate and the enqueue-to-ack
// latency's p50 and p99 in milliseconds. window, if not nil, brackets the
// timed part, which starts before the producers' first submit (so that it
// holds about as many submits as lifecycles).
func Drive(b *testing.B, clients []*apiclient.Client, n int, submit func(i int) (string, error), window Window) (rate, p50, p99 float64) {
	agents := len(clients)
	b.ResetTimer()
	var end func()
	if window != nil {
		end = window()
	}
	var enqueued sync.Map
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
					id, err := submit(i)
					if err != nil {
						if prodCtx.Err() == nil {
							b.Error(err)
						}
						return
					}
					enqueued.Store(id, time.Now())
				}
			}
		}()
	}
	var mu sync.Mutex
	var lat []time.Duration
	rate = RunAgents(b, clients, n, func(i int, id string) {
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
	if end != nil {
		end()
	}
	b.StopTimer()
	stopProducers()
	producers.Wait()
	slices.Sort(lat)
	if len(lat) == 0 {
		return rate, 0, 0
	}
	return rate, MS(lat[len(lat)/2]), MS(lat[min(len(lat)-1, len(lat)*99/100)])
}

// OpenSQLite opens a store in a new SQLite file, closed when b ends.
func OpenSQLite(b *testing.B) registry.Store {
	st, err := sqlite.Open(Admin, filepath.Join(b.TempDir(), "tether.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// tetherRuns counts RunTether's runs.
var tetherRuns atomic.Int64

// RunTether runs the scenario against one tether server per store (replicas
// when the stores share a database), agents spread over them in turn.
func RunTether(b *testing.B, stores []registry.Store, agents, n int, window Window) (rate, p50, p99 float64) {
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
	hc := HTTPClient(agents)
	clients := make([]*apiclient.Client, agents)
	clusters := make([]string, agents)
	run := tetherRuns.Add(1) // a database may serve several runs (BenchmarkLifecycleMillion's)
	for i := range agents {
		reg, url := regs[i%len(regs)], urls[i%len(urls)]
		c, tok, err := reg.CreateCluster(Admin, registry.ClusterSpec{Name: fmt.Sprintf("bench-%d-%d", run, i), AllowedNamespaces: []string{"default"}}, 0)
		if err != nil {
			b.Fatal(err)
		}
		cred, err := apiclient.Register(Admin, url, tok.Secret.Reveal(), apiclient.RegisterOptions{HTTPClient: hc})
		if err != nil {
			b.Fatal(err)
		}
		clients[i], _ = apiclient.New(apiclient.Config{BaseURL: url, Credential: cred, HTTPClient: hc})
		clusters[i] = c.ID
	}
	return Drive(b, clients, n, func(i int) (string, error) {
		j, _, err := regs[i%len(regs)].SubmitJob(Admin, registry.JobSubmission{ClusterID: clusters[i], Kind: registry.KindApply, Payload: Payload})
		return j.ID, err
	}, window)
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// RunBaseline: the same client and requests against a handler that does
// nothing but answer them as the protocol says.
func RunBaseline(b *testing.B, agents, n int, window Window) float64 {
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
	hc := HTTPClient(agents)
	clients := make([]*apiclient.Client, agents)
	for i := range clients {
		clients[i], _ = apiclient.New(apiclient.Config{BaseURL: url, HTTPClient: hc,
			Credential: apiclient.Credential{ClusterID: "cl-baseline", Token: "tether_cred_baseline"}})
	}
	var end func()
	if window != nil {
		end = window()
	}
	rate := RunAgents(b, clients, n, func(int, string) {})
	if end != nil {
		end()
	}
	return rate
}
