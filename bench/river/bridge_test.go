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
// So the bridge answers an ack, a status and a result before anything of
// them is on disk: only a submit is durable when answered. tether answers
// each of the five requests once its write committed. The durable bridge is
// the same bridge keeping tether's promise, as a user who needs it would
// build it with River's API: an ack and a status are each written to the
// job's output (Client.JobUpdate) before the answer, and the worker
// completes the job in a transaction of its own (JobCompleteTx), committed
// before the result is answered.
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
	// finish, on the durable bridge: the result's answer waits for the
	// worker to complete the job and commit (nil: the commit's error).
	finish chan chan error
}

type bridge struct {
	clusters []chan *handoff // by cluster: jobs waiting for a poll
	tokens   map[string]int  // bearer token -> cluster
	mu       sync.Mutex
	inflight map[string]*handoff // handed to a poll, not yet finished
	claims   atomic.Int64
	// record, on the durable bridge, writes an ack's or a status's output to
	// the job's row before it is answered; nil on the bridge that keeps
	// them in memory.
	record func(ctx context.Context, id int64, output any) error
}

// bridgeOutput is what the durable bridge records of an ack and a status.
type bridgeOutput struct {
	Claim  string          `json:"claim"`
	Status json.RawMessage `json:"status,omitempty"`
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
	// complete, on the durable bridge, completes the job in a transaction
	// of its own and commits it; nil: Work returns and River's completer
	// marks the job completed later.
	complete func(ctx context.Context, job *river.Job[bridgeArgs]) error
}

func (w *worker) Work(ctx context.Context, job *river.Job[bridgeArgs]) error {
	a := job.Args
	if a.Cluster < 0 || a.Cluster >= len(w.br.clusters) {
		return river.JobCancel(errors.New("no such cluster"))
	}
	h := &handoff{id: strconv.FormatInt(job.ID, 10), payload: a.Payload, created: job.CreatedAt, cluster: a.Cluster, done: make(chan struct{})}
	if w.complete != nil {
		h.finish = make(chan chan error, 1)
	}
	select {
	case w.br.clusters[a.Cluster] <- h:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-h.done:
		return nil
	case reply := <-h.finish:
		err := w.complete(ctx, job)
		reply <- err
		return err
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
			claim := "claim-" + strconv.FormatInt(br.claims.Add(1), 10)
			h.claim = claim
			br.mu.Unlock()
			if err := br.persist(r.Context(), h, bridgeOutput{Claim: claim}); err != nil {
				br.mu.Lock()
				h.claim = ""
				br.mu.Unlock()
				writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
				return
			}
			w.Header().Set("X-Claim-Id", claim)
			w.Header().Set("X-Lease-Expires-At", time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if h.claim == "" || r.Header.Get("X-Claim-Id") != h.claim {
			br.mu.Unlock()
			writeError(w, http.StatusConflict, "stale_claim", "not the job's claim")
			return
		}
		var err error
		switch action {
		case "status":
			h.status = body
			out := bridgeOutput{Claim: h.claim, Status: body}
			br.mu.Unlock()
			err = br.persist(r.Context(), h, out)
		case "result":
			delete(br.inflight, h.id)
			br.mu.Unlock()
			if h.finish == nil {
				close(h.done) // the worker returns: River completes the job
				break
			}
			reply := make(chan error, 1)
			h.finish <- reply // buffered: the worker may have given up (its timeout)
			select {
			case err = <-reply:
			case <-r.Context().Done():
				err = r.Context().Err()
			}
		default:
			br.mu.Unlock()
			writeError(w, http.StatusNotFound, "not_found", "no such action")
			return
		}
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// persist writes out to h's job on the durable bridge; on the other it
// keeps nothing more than the handler already did.
func (br *bridge) persist(ctx context.Context, h *handoff, out bridgeOutput) error {
	if br.record == nil {
		return nil
	}
	id, err := strconv.ParseInt(h.id, 10, 64)
	if err != nil {
		return err
	}
	return br.record(ctx, id, out)
}

// runBridge starts River on driver (schema "" for the default) and the
// bridge in front of it (the durable bridge if durable), drives agents
// through n lifecycles and returns the rate.
func runBridge[D riverdriver.Driver[TTx], TTx any](b *testing.B, driver D, durable bool, agents, n int, window benchlife.Window) float64 {
	ctx := context.Background()
	br := newBridge(agents)
	wk := &worker{br: br}
	if durable {
		wk.complete = func(ctx context.Context, job *river.Job[bridgeArgs]) error {
			tx, err := driver.GetExecutor().Begin(ctx)
			if err != nil {
				return err
			}
			if _, err := river.JobCompleteTx[D](ctx, driver.UnwrapTx(tx), job); err != nil {
				tx.Rollback(ctx)
				return err
			}
			return tx.Commit(ctx)
		}
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, wk)
	client, err := river.NewClient(driver, &river.Config{
		Logger:        slog.New(slog.DiscardHandler), // the run's end cancels the workers still waiting for a poll
		FetchCooldown: 5 * time.Millisecond,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
		Workers:       workers,
	})
	if err != nil {
		b.Fatal(err)
	}
	if durable {
		br.record = func(ctx context.Context, id int64, output any) error {
			_, err := client.JobUpdate(ctx, id, &river.JobUpdateParams{Output: output})
			return err
		}
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
