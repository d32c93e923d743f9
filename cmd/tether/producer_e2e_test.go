package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/webhook"
)

// What a producer meets end to end: the real binary serving, a real agent
// doing the work, a real receiver taking the outcomes.

// TestBlockingSubmitAnsweredByARealAgent: a producer's submission with
// ?wait= is answered with the finished job once a real `tether agent run`
// has claimed it, run its command and reported success.
func TestBlockingSubmitAnsweredByARealAgent(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve, addr, _ := startServe(t, db, "--webhook-allow-cidr", "127.0.0.0/8")
	defer serve.stop(t)
	base := "http://" + addr
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	state := filepath.Join(t.TempDir(), "agent")
	if res := cliIn(t, db, c.RegistrationToken+"\n", "agent", "register", "--server", base, "--token", "-", "--state-dir", state); res.code != exitOK {
		t.Fatalf("register: %s", res)
	}
	agent := start(t, db, "agent", "run", "--state-dir", state, "--drain", "10s", "--exec", `echo "::status Applying"`)
	defer func() {
		_ = agent.cmd.Process.Signal(syscall.SIGTERM)
		agent.wait(t)
	}()
	issued := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "producer", "--role", "operator")
	producer, err := adminclient.New(base, issued.Token)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	job, err := producer.SubmitJob(ctx, adminclient.Submission{Cluster: "prod", Kind: "apply",
		Payload: json.RawMessage(configMap("apps", "blocking"))}, time.Minute)
	if err != nil {
		t.Fatalf("blocking submit: %v\nagent's output:\n%s", err, agent.result())
	}
	if job.State != "succeeded" || !job.Terminal() {
		t.Fatalf("blocking submit answered with the job %s, want it succeeded\nagent's output:\n%s", job.State, agent.result())
	}
	// The answer is the job as the agent left it, not a provisional copy.
	again, err := producer.GetJob(ctx, job.ID, 0)
	if err != nil || again.State != "succeeded" || again.Attempt != job.Attempt {
		t.Fatalf("the job read back: %+v, %v", again, err)
	}
}

// outcomeReceiver is a webhook receiver that can be down (answering 503)
// and records every attempt it answered.
type outcomeReceiver struct {
	srv    *httptest.Server
	secret string
	up     atomic.Bool
	mu     sync.Mutex
	tried  map[string]string // delivery id -> job id, for every attempt
	taken  map[string]int    // job id -> attempts answered 2xx
	failed int
}

func newOutcomeReceiver(t *testing.T) *outcomeReceiver {
	r := &outcomeReceiver{tried: map[string]string{}, taken: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var b webhook.Body
		var job struct{ ID string }
		if json.Unmarshal(body, &b) != nil || json.Unmarshal(b.Data, &job) != nil || job.ID == "" {
			t.Errorf("a delivery's body is not a job.finished event: %s", body)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(r.secret, req.Header.Get(webhook.HeaderSignature), body, time.Now(), time.Minute); err != nil {
			t.Errorf("delivery %s: %v", b.ID, err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if prev, seen := r.tried[b.ID]; seen && prev != job.ID {
			t.Errorf("delivery id %s came for the job %s and then for %s", b.ID, prev, job.ID)
		}
		r.tried[b.ID] = job.ID
		if req.Header.Get(webhook.HeaderDelivery) != b.ID {
			t.Errorf("delivery header %q, body id %q", req.Header.Get(webhook.HeaderDelivery), b.ID)
		}
		if !r.up.Load() {
			r.failed++
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.taken[job.ID]++
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// counts says how many distinct deliveries were tried, how many jobs'
// outcomes were taken (answered 2xx), and how many attempts were refused
// while the receiver was down.
func (r *outcomeReceiver) counts() (attempted, taken, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tried), len(r.taken), r.failed
}

// TestWebhookOutcomesSurviveKill9: job outcomes committed while the
// receiver is down, some already tried and some not yet, are all delivered
// after `tether serve` is killed with SIGKILL and started again.
func TestWebhookOutcomesSurviveKill9(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rcv := newOutcomeReceiver(t)
	created := okJSON[struct {
		Secret string `json:"secret"`
	}](t, db, "webhook", "create", "--name", "outcomes", "--url", rcv.srv.URL, "--events", "job.finished", "--webhook-allow-cidr", "127.0.0.0/8")
	rcv.secret = created.Secret
	c := createCluster(t, db, "prod", "--namespaces", "apps")

	reg := openRegistry(t, db)
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	const tried, untried = 3, 3
	var jobs []string
	for range tried + untried {
		j, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: c.ClusterID, Kind: registry.KindApply,
			Payload: json.RawMessage(configMap("apps", "outcome"))})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j.ID)
	}

	serve, addr, _ := startServe(t, db, "--webhook-allow-cidr", "127.0.0.0/8")
	// The first outcomes are canceled by an admin and tried while the
	// receiver is down: each is now waiting for its retry.
	for _, id := range jobs[:tried] {
		if _, err := reg.CancelJob(admin, id, "webhook test"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "an attempt of each of the first outcomes", func() bool {
		attempted, _, _ := rcv.counts()
		return attempted == tried
	})
	// The others end through serve itself, an agent reporting success, and
	// serve is killed right after it answered, before its sender's next look.
	agentCtx := context.Background()
	cred, err := apiclient.Register(agentCtx, "http://"+addr, c.RegistrationToken, apiclient.RegisterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := apiclient.New(apiclient.Config{BaseURL: "http://" + addr, Credential: cred})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range jobs[tried:] {
		claim, err := agent.Ack(agentCtx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := agent.Result(agentCtx, id, claim.ClaimID, apiclient.Result{Outcome: "succeeded"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := serve.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-serve.exited
	if _, taken, failed := rcv.counts(); taken != 0 || failed < tried {
		t.Fatalf("while the receiver was down: %d outcomes taken (want 0), %d attempts refused (want at least %d)", taken, failed, tried)
	}

	rcv.up.Store(true)
	again, _, _ := startServe(t, db, "--webhook-allow-cidr", "127.0.0.0/8")
	defer again.stop(t)
	// The first outcomes' retries are due 2.5 to 7.5 s after their attempt.
	eventually(t, "every outcome delivered after the restart", func() bool {
		_, taken, _ := rcv.counts()
		return taken == len(jobs)
	})
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, id := range jobs {
		if rcv.taken[id] != 1 {
			t.Errorf("the outcome of %s was taken %d times, want once", id, rcv.taken[id])
		}
	}
	if len(rcv.tried) != len(jobs) {
		t.Errorf("%d delivery ids for %d outcomes: a retry must keep its delivery's id", len(rcv.tried), len(jobs))
	}
}
