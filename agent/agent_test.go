package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

var admin = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})

var fast = apiclient.RetryPolicy{MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}

// env is a real tether server on loopback over a SQLite file.
type env struct {
	t       *testing.T
	reg     *registry.Registry
	url     string
	addr    string
	stopSrv context.CancelFunc
	srvDone chan error
	dir     string
	tracing trace.TracerProvider // the server's, when set before start
	scraper string               // waitNoHeldPolls's admin token, once issued
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(admin, filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvOn(t, dir, st)
}

// newEnvOn is newEnv over the caller's store.
func newEnvOn(t *testing.T, dir string, st registry.Store, tp ...trace.TracerProvider) *env {
	t.Helper()
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "tether.db.key"))})
	t.Cleanup(func() { reg.Close(); st.Close() })
	e := &env{t: t, reg: reg, dir: dir}
	if len(tp) > 0 {
		e.tracing = tp[0]
	}
	e.start("127.0.0.1:0")
	return e
}

func (e *env) start(addr string) {
	e.t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the old listener's port is being released
	}
	if err != nil {
		e.t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	e.url = "http://" + e.addr
	srv := server.New(e.reg, server.Config{Logger: slog.New(slog.DiscardHandler), ShutdownTimeout: 2 * time.Second, TracerProvider: e.tracing})
	ctx, cancel := context.WithCancel(context.Background())
	e.stopSrv, e.srvDone = cancel, make(chan error, 1)
	go func() { e.srvDone <- srv.Serve(ctx, ln) }()
	e.t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.stopSrv != nil {
		e.stopSrv()
		<-e.srvDone
		e.stopSrv = nil
	}
}

// cluster creates a cluster with a short lease and registers an agent state
// dir for it.
func (e *env) cluster(name string, caps ...string) (*registry.Cluster, string) {
	e.t.Helper()
	c, tok, err := e.reg.CreateCluster(admin, registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"team-a"},
		Policy: registry.Policy{LeaseSeconds: 6, MaxAttempts: 5}}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	dir := filepath.Join(e.dir, name)
	id, err := agent.Register(context.Background(), e.url, tok.Secret.Reveal(), dir, caps, fast)
	if err != nil || id != c.ID {
		e.t.Fatalf("Register = %q, %v", id, err)
	}
	return c, dir
}

func (e *env) submit(clusterID string, mod func(*registry.JobSubmission)) *registry.Job {
	e.t.Helper()
	s := registry.JobSubmission{ClusterID: clusterID, Kind: registry.KindDelete,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)}
	if mod != nil {
		mod(&s)
	}
	j, _, err := e.reg.SubmitJob(admin, s)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// run starts an agent; the returned stop cancels it and returns Run's error.
func (e *env) run(dir, command string, mod func(*agent.Config)) func() error {
	e.t.Helper()
	cfg := agent.Config{StateDir: dir, Command: command, PollWait: 2 * time.Second, Retry: fast,
		EventFlush: 50 * time.Millisecond, KillGrace: 2 * time.Second, DrainTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(testWriter{e.t}, nil))}
	if mod != nil {
		mod(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	var result error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	e.t.Cleanup(func() { stop() })
	return stop
}

// waitJob waits until the job satisfies ok.
func (e *env) waitJob(id string, what string, ok func(*registry.Job) bool) *registry.Job {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := e.reg.GetJob(admin, id)
		if err == nil && ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s never became %s (now %+v, err %v)", id, what, j, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func terminal(j *registry.Job) bool { return j.State.Terminal() }

// waitNoHeldPolls waits until the server holds no long-poll, as its metrics
// say (read with a viewer's admin token, as /metrics on the agent listener
// takes).
func (e *env) waitNoHeldPolls() {
	e.t.Helper()
	if e.scraper == "" {
		issued, err := e.reg.CreateAdminToken(admin, "prometheus", registry.RoleViewer, "", 0)
		if err != nil {
			e.t.Fatal(err)
		}
		e.scraper = issued.Secret.Reveal()
	}
	req, err := http.NewRequest(http.MethodGet, e.url+"/metrics", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.scraper)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), "\ntether_agent_longpolls_held 0\n") {
				return
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the server still holds long-polls 30 s after their agent stopped (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestJobSucceedsWithStatusAndEvents(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod")
	e.run(dir, `read job; test "$TETHER_JOB_KIND" = delete || exit 9
echo "::status Applying halfway there"
echo '::event {"kind":"ConditionTransition","resourceRef":{"kind":"ConfigMap","namespace":"team-a","name":"c"},"conditions":[{"type":"Ready","status":"True"}]}'
echo "$job" | grep -q "\"id\":\"$TETHER_JOB_ID\"" || exit 8`, nil)
	j := e.submit(c.ID, nil)
	got := e.waitJob(j.ID, "finished", terminal)
	if got.State != registry.JobSucceeded {
		t.Fatalf("state %s error %q", got.State, got.Error)
	}
	h, _ := e.reg.JobHistory(admin, j.ID)
	var phases []string
	for _, entry := range h {
		phases = append(phases, entry.Phase)
	}
	if !strings.Contains(strings.Join(phases, ","), "Applying") {
		t.Fatalf("no Applying status in the timeline %v", phases)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, _ := e.reg.ListEvents(admin, registry.EventListParams{ClusterID: c.ID, Kinds: []string{"ConditionTransition"}})
		cl, _ := e.reg.GetCluster(admin, c.ID)
		if len(evs) == 1 && !cl.Status.LastHeartbeatAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %d, heartbeat %v", len(evs), cl.Status.LastHeartbeatAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFailureAndResultLine(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod")
	e.run(dir, `case "$TETHER_JOB_IDEMPOTENCY_KEY" in
conflict) echo '::result {"outcome":"conflict","error":"field manager helm-controller owns .spec.replicas"}';;
*) echo "chart repository unreachable" >&2; exit 3;;
esac`, nil)
	fail := e.submit(c.ID, nil)
	conflict := e.submit(c.ID, func(s *registry.JobSubmission) { s.IdempotencyKey = "conflict" })
	got := e.waitJob(fail.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "status 3") || !strings.Contains(got.Error, "chart repository unreachable") {
		t.Fatalf("failed job: %s %q", got.State, got.Error)
	}
	got = e.waitJob(conflict.ID, "finished", terminal)
	if got.State != registry.JobConflict || !strings.Contains(got.Error, "helm-controller") {
		t.Fatalf("conflict job: %s %q", got.State, got.Error)
	}
}

// pidCommand writes the command's pid to a file and runs until killed.
func pidCommand(dir string) (string, string) {
	pidfile := filepath.Join(dir, "pid-$TETHER_JOB_ID-$TETHER_JOB_ATTEMPT")
	return `echo $$ > "` + pidfile + `"; echo "::status Running"; while :; do sleep 0.1; done`, pidfile
}

func waitPID(t *testing.T, pattern string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(pattern); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid file %s", pattern)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) still runs after %s", pid, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCancelStopsTheCommand(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod", "lease")
	cmd, pidfile := pidCommand(e.dir)
	e.run(dir, cmd, nil)
	j := e.submit(c.ID, nil)
	pid := waitPID(t, strings.NewReplacer("$TETHER_JOB_ID", j.ID, "$TETHER_JOB_ATTEMPT", "1").Replace(pidfile))
	if _, err := e.reg.CancelJob(admin, j.ID, "wrong chart"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "its job was canceled")
	if got := e.waitJob(j.ID, "canceled", terminal); got.State != registry.JobCanceled {
		t.Fatalf("state %s", got.State)
	}
}

func TestRequeueFencesTheHolderAndTheJobRunsAgain(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod", "lease")
	marker := filepath.Join(e.dir, "second-attempt-ran")
	cmd, pidfile := pidCommand(e.dir)
	e.run(dir, `if [ "$TETHER_JOB_ATTEMPT" = 2 ]; then touch "`+marker+`"; exit 0; fi; `+cmd, nil)
	j := e.submit(c.ID, nil)
	pid := waitPID(t, strings.NewReplacer("$TETHER_JOB_ID", j.ID, "$TETHER_JOB_ATTEMPT", "1").Replace(pidfile))
	if _, err := e.reg.RequeueJob(admin, j.ID, "on-call test"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "its claim was fenced off")
	got := e.waitJob(j.ID, "succeeded on attempt 2", terminal)
	if got.State != registry.JobSucceeded || got.Attempt != 2 {
		t.Fatalf("state %s attempt %d", got.State, got.Attempt)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the second attempt did not run")
	}
}

func TestLeaseLossAndReclaim(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod", "lease")
	// The first agent's heartbeats are dropped by a proxy, so its lease runs
	// out: it must stop its command, and the reaper must requeue the job for
	// another agent.
	var block atomic.Bool
	proxy := injector(t, e.url, func(r *http.Request) int {
		if block.Load() && strings.HasSuffix(r.URL.Path, "/heartbeat") {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	cmd, pidfile := pidCommand(e.dir)
	st, _ := agent.LoadState(dir)
	st.Server = proxy
	if err := agent.SaveState(dir, st); err != nil {
		t.Fatal(err)
	}
	stopFirst := e.run(dir, cmd, nil)
	j := e.submit(c.ID, nil)
	pid := waitPID(t, strings.NewReplacer("$TETHER_JOB_ID", j.ID, "$TETHER_JOB_ATTEMPT", "1").Replace(pidfile))
	block.Store(true)
	waitGone(t, pid, "its lease ran out")
	stopFirst()
	// A poll the stopped agent left behind, woken by the requeue below,
	// would be handed the job and hide it from every other poll for the
	// visibility window: wait until the server holds none.
	e.waitNoHeldPolls()
	// The reaper (run by hand here; serve runs it on an interval) requeues it.
	// Past it by the registry's clock, which the reaper reads (at the
	// millisecond precision stores keep), not merely by the wall's.
	e.waitJob(j.ID, "past its lease", func(j *registry.Job) bool { return e.reg.Now().After(j.LeaseExpiresAt) })
	rep, err := registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(admin)
	if err != nil || rep.Requeued != 1 {
		t.Fatalf("reaper %+v, %v", rep, err)
	}
	st.Server = e.url
	if err := agent.SaveState(dir, st); err != nil {
		t.Fatal(err)
	}
	e.run(dir, "exit 0", nil)
	if got := e.waitJob(j.ID, "finished", terminal); got.State != registry.JobSucceeded || got.Attempt != 2 {
		t.Fatalf("state %s attempt %d", got.State, got.Attempt)
	}
}

// injector is a reverse proxy to target that answers with the status fail
// returns (with Retry-After: 1 on 429), or forwards when it returns 0.
func injector(t *testing.T, target string, fail func(*http.Request) int) string {
	t.Helper()
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := fail(r); code != 0 {
			if code == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			w.Header().Set("Content-Type", apiclient.MediaType)
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(map[string]string{"error": "injected", "message": "injected failure", "requestId": "rq-injected"})
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func TestSurvives429And5xx(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod")
	var n atomic.Int64
	proxy := injector(t, e.url, func(r *http.Request) int {
		switch n.Add(1) % 4 {
		case 1:
			return http.StatusTooManyRequests
		case 2:
			return http.StatusBadGateway
		}
		return 0
	})
	st, _ := agent.LoadState(dir)
	st.Server = proxy
	agent.SaveState(dir, st)
	e.run(dir, `echo "::status Working"; exit 0`, nil)
	j := e.submit(c.ID, nil)
	if got := e.waitJob(j.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("state %s %q", got.State, got.Error)
	}
	if n.Load() < 8 {
		t.Fatalf("only %d requests went through the failure injector", n.Load())
	}
}

func TestServerRestartMidPoll(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod")
	e.run(dir, "exit 0", nil)
	first := e.submit(c.ID, nil)
	e.waitJob(first.ID, "finished", terminal)
	e.stop() // answers the held poll; the agent's next polls are refused
	time.Sleep(300 * time.Millisecond)
	e.start(e.addr)
	j := e.submit(c.ID, nil)
	if got := e.waitJob(j.ID, "finished after the restart", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("state %s", got.State)
	}
}

// TestExpiredJobIsReportedNoop: an agent whose clock runs ahead sees a job as
// expired; it must not run it, and reports noop/expired without an ack.
func TestExpiredJobIsReportedNoop(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod")
	u, _ := url.Parse(e.url)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
			return nil
		}
		var body struct{ Jobs []map[string]any }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return err
		}
		for _, j := range body.Jobs {
			j["expiresAt"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339) // the agent's clock is ahead
		}
		b, _ := json.Marshal(body)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := &http.Server{Handler: rp}
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })
	st, _ := agent.LoadState(dir)
	st.Server = "http://" + ln.Addr().String()
	agent.SaveState(dir, st)

	ran := filepath.Join(e.dir, "ran")
	e.run(dir, `touch "`+ran+`"`, nil)
	j := e.submit(c.ID, func(s *registry.JobSubmission) { s.ExpiresIn = time.Hour })
	got := e.waitJob(j.ID, "finished", terminal)
	if got.State != registry.JobNoop || got.Error != "expired" || got.ClaimID != "" {
		t.Fatalf("job %s %q claim %q, want noop/expired, never claimed", got.State, got.Error, got.ClaimID)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command ran for an expired job")
	}
}

// TestIdempotencyLedger: a second job with a key the agent applied already
// is reported noop without running. tether answers a replayed key with its
// first job for a day, so the second job comes once the key has expired, or
// from a tether that keeps keys for open jobs only, as here.
func TestIdempotencyLedger(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(admin, filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, dir, st)
	openOnly := registry.New(st, registry.Config{IdempotencyRetention: -1})
	t.Cleanup(openOnly.Close)
	c, state := e.cluster("prod")
	count := filepath.Join(e.dir, "runs")
	e.run(state, `echo x >> "`+count+`"`, nil)
	key := func(s *registry.JobSubmission) { s.IdempotencyKey = "configmap/team-a/c@3" }
	first := e.submit(c.ID, key)
	e.waitJob(first.ID, "finished", terminal)
	second, created, err := openOnly.SubmitJob(admin, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindDelete,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`), IdempotencyKey: "configmap/team-a/c@3"})
	if err != nil || !created {
		t.Fatalf("second job with the key: created=%v, %v", created, err)
	}
	got := e.waitJob(second.ID, "finished", terminal)
	if got.State != registry.JobNoop || !strings.Contains(got.Error, "already applied") {
		t.Fatalf("re-delivered job: %s %q", got.State, got.Error)
	}
	b, _ := os.ReadFile(count)
	if runs := strings.Count(string(b), "x"); runs != 1 {
		t.Fatalf("command ran %d times for one idempotency key", runs)
	}
}

func TestRotationAtRotateAfterAndForced(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod", "hmac")
	// Make the stored credential due for rotation.
	st, _ := agent.LoadState(dir)
	oldToken := st.Credential.Token
	st.Credential.RotateAfter = time.Now().Add(-time.Minute)
	agent.SaveState(dir, st)
	e.run(dir, "exit 0", nil)
	waitToken := func(not string) agent.State {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			now, err := agent.LoadState(dir)
			if err == nil && now.Credential.Token != not {
				return now
			}
			if time.Now().After(deadline) {
				t.Fatal("the agent did not rotate its credential")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rotated := waitToken(oldToken)
	if rotated.Credential.HMACKey == "" || rotated.Credential.HMACKey == st.Credential.HMACKey {
		t.Fatal("rotation did not bring a new HMAC key")
	}
	info, _ := os.Stat(filepath.Join(dir, "credential.json"))
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %o", info.Mode().Perm())
	}
	// The old credential still works inside its grace.
	if _, err := e.reg.Authenticate(admin, oldToken, registry.AuthAny); err != nil {
		t.Fatalf("old credential refused inside the grace: %v", err)
	}
	// A forced rotation: the agent's next call gets 401, it rotates, carries on.
	if _, err := e.reg.ForceRotation(admin, c.ID, "test"); err != nil {
		t.Fatal(err)
	}
	e.submit(c.ID, nil) // wakes the poll, so the agent calls in
	forced := waitToken(rotated.Credential.Token)
	j := e.submit(c.ID, nil)
	if got := e.waitJob(j.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("after a forced rotation: %s", got.State)
	}
	_ = forced
}

func TestRevokedCredentialStopsTheAgent(t *testing.T) {
	e := newEnv(t)
	c, dir := e.cluster("prod")
	a, err := agent.New(agent.Config{StateDir: dir, Command: "exit 0", PollWait: time.Second, Retry: fast,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	if _, err := e.reg.RevokeCredentials(admin, c.ID, "compromised"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		// It tried one rotation, was refused, and stopped by itself.
		if !errors.Is(err, apiclient.ErrUnauthenticated) {
			t.Fatalf("Run returned %v, want ErrUnauthenticated", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent kept running with a revoked credential")
	}
}
