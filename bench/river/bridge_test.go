package river

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/internal/testing/benchlife"
)

// The bridge is the peer a user would build instead of tether for pull-mode
// agents: River behind a small HTTP server that speaks tether's agent
// protocol, so that the same apiclient agents make the same requests.
//
//   - submit inserts one River job (the producers, in this process, as
//     tether's scenario submits through its registry in-process);
//   - a poll is answered by a River worker that hands its job to a poll
//     waiting for the job's cluster (one worker per job, as River runs them);
//   - ack and status are recorded in memory, the claim checked;
//   - the result completes the worker: Work returns, and River marks the job
//     completed (its completer batches those writes, as River does by
//     default).
//
// Credentials are bearer tokens looked up in memory; requests are not
// signed, which is less work than tether's agents do (they sign each POST).

// bridgeArgs is a job of the bridge: the agent's cluster and the payload.
type bridgeArgs struct {
	Cluster int             `json:"cluster"`
	Payload json.RawMessage `json:"payload"`
}

func (bridgeArgs) Kind() string { return "tether_bridge" }

// handoff is a job a worker holds until its agent reports the result.
type handoff struct {
	id      string
	payload json.RawMessage
	created time.Time
	cluster int
	claim   string
	status  json.RawMessage
	done    chan struct{}
}

type bridge struct {
	clusters []chan *handoff // by cluster: jobs waiting for a poll
	tokens   map[string]int  // bearer token -> cluster
	mu       sync.Mutex
	inflight map[string]*handoff // handed to a poll, not yet finished
	claims   atomic.Int64
}

func newBridge(clusters int) *bridge {
	br := &bridge{tokens: map[string]int{}, inflight: map[string]*handoff{}}
	for i := range clusters {
		br.clusters = append(br.clusters, make(chan *handoff))
		br.tokens[bridgeToken(i)] = i
	}
	return br
}

func bridgeToken(i int) string { return "bridge-token-" + strconv.Itoa(i) }

// worker runs each River job: it waits for a poll of the job's cluster to
// take it, then for the agent's result.
type worker struct {
	river.WorkerDefaults[bridgeArgs]
	br *bridge
}

func (w *worker) Work(ctx context.Context, job *river.Job[bridgeArgs]) error {
	a := job.Args
	if a.Cluster < 0 || a.Cluster >= len(w.br.clusters) {
		return river.JobCancel(errors.New("no such cluster"))
	}
	h := &handoff{id: strconv.FormatInt(job.ID, 10), payload: a.Payload, created: job.CreatedAt, cluster: a.Cluster, done: make(chan struct{})}
	select {
	case w.br.clusters[a.Cluster] <- h:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Timeout: the job is held while its agent works (River's default, a
// minute, is the bridge's lease).
func (w *worker) Timeout(*river.Job[bridgeArgs]) time.Duration { return time.Minute }

func (br *bridge) cluster(r *http.Request) (int, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return 0, false
	}
	c, ok := br.tokens[tok]
	return c, ok
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "message": msg})
}

func (br *bridge) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/agent/jobs", func(w http.ResponseWriter, r *http.Request) {
		c, ok := br.cluster(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthorized", "unknown credential")
			return
		}
		wait, _ := strconv.Atoi(r.URL.Query().Get("wait"))
		t := time.NewTimer(time.Duration(wait) * time.Second)
		defer t.Stop()
		type job struct {
			ID        string          `json:"id"`
			Kind      string          `json:"kind"`
			Payload   json.RawMessage `json:"payload"`
			CreatedAt time.Time       `json:"createdAt"`
		}
		out := struct {
			Jobs []job `json:"jobs"`
		}{Jobs: []job{}}
		select {
		case h := <-br.clusters[c]:
			br.mu.Lock()
			br.inflight[h.id] = h
			br.mu.Unlock()
			out.Jobs = append(out.Jobs, job{ID: h.id, Kind: "apply", Payload: h.payload, CreatedAt: h.created})
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", apiclient.MediaType)
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /api/agent/jobs/{id}/{action}", func(w http.ResponseWriter, r *http.Request) {
		c, ok := br.cluster(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthorized", "unknown credential")
			return
		}
		var body json.RawMessage
		if r.ContentLength != 0 {
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", err.Error())
				return
			}
		}
		br.mu.Lock()
		h := br.inflight[r.PathValue("id")]
		if h == nil || h.cluster != c {
			br.mu.Unlock()
			writeError(w, http.StatusNotFound, "job_not_found", "no such job in flight")
			return
		}
		action := r.PathValue("action")
		if action == "ack" {
			if h.claim != "" {
				br.mu.Unlock()
				writeError(w, http.StatusConflict, "already_claimed", "the job is claimed")
				return
			}
			h.claim = "claim-" + strconv.FormatInt(br.claims.Add(1), 10)
			w.Header().Set("X-Claim-Id", h.claim)
			w.Header().Set("X-Lease-Expires-At", time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
			br.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if h.claim == "" || r.Header.Get("X-Claim-Id") != h.claim {
			br.mu.Unlock()
			writeError(w, http.StatusConflict, "stale_claim", "not the job's claim")
			return
		}
		switch action {
		case "status":
			h.status = body
		case "result":
			delete(br.inflight, h.id)
			close(h.done) // the worker returns: River completes the job
		default:
			br.mu.Unlock()
			writeError(w, http.StatusNotFound, "not_found", "no such action")
			return
		}
		br.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// runBridge starts River on driver (schema "" for the default) and the
// bridge in front of it, drives agents through n lifecycles and returns
// the rate.
func runBridge[TTx any](b *testing.B, driver riverdriver.Driver[TTx], agents, n int, window benchlife.Window) float64 {
	ctx := context.Background()
	br := newBridge(agents)
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{br: br})
	client, err := river.NewClient(driver, &river.Config{
		Logger:        slog.New(slog.DiscardHandler), // the run's end cancels the workers still waiting for a poll
		FetchCooldown: 5 * time.Millisecond,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
		Workers:       workers,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		client.StopAndCancel(stop)
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: br.handler()}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String()
	hc := benchlife.HTTPClient(agents)
	clients := make([]*apiclient.Client, agents)
	for i := range clients {
		clients[i], _ = apiclient.New(apiclient.Config{BaseURL: url, HTTPClient: hc,
			Credential: apiclient.Credential{ClusterID: "cl-" + strconv.Itoa(i), Token: bridgeToken(i)}})
	}
	rate, _, _ := benchlife.Drive(b, clients, n, func(i int) (string, error) {
		res, err := client.Insert(ctx, bridgeArgs{Cluster: i, Payload: benchlife.Payload}, nil)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(res.Job.ID, 10), nil
	}, window)
	return rate
}
