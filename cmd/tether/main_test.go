package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// The tests run the real binary, built once, against a database file of their
// own, and check what it prints and how it exits. Agent-side transitions
// (register, ack, result, events) are made by the test through the registry on
// the same file, as another process would.

var binPath string

// Generous bounds: the tests share a slow 2-core machine with other work.
const (
	cmdTimeout  = 2 * time.Minute  // one CLI invocation
	waitTimeout = 60 * time.Second // for a background CLI to show something
)

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tether-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot create a temporary directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "tether")
	if runtime.GOOS == "windows" {
		binPath += ".exe"
	}
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot build tether:", err)
		return 1
	}
	return m.Run()
}

// result is what one run of the binary printed and its exit code.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("tether %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// newDB returns the path of a fresh database file in the test's temp dir.
func newDB(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "tether.db")
}

// command returns the binary set up to run args against db.
func command(ctx context.Context, db string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binPath, append([]string{"--db", db}, args...)...)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TETHER_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	return cmd
}

// cli runs the binary with empty standard input (a pipe, not a terminal).
func cli(t testing.TB, db string, args ...string) result {
	t.Helper()
	return cliIn(t, db, "", args...)
}

// cliIn runs the binary with stdin as its standard input.
func cliIn(t testing.TB, db, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, db, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("tether %s did not finish within %s", strings.Join(args, " "), cmdTimeout)
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("cannot run tether %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// ok runs the binary and fails the test unless it exits 0.
func ok(t testing.TB, db string, args ...string) result {
	t.Helper()
	res := cli(t, db, args...)
	if res.code != exitOK {
		t.Fatalf("got exit %d, want 0\n%s", res.code, res)
	}
	return res
}

// okJSON runs the binary with -o json, requires exit 0 and decodes stdout.
func okJSON[T any](t testing.TB, db string, args ...string) T {
	t.Helper()
	res := ok(t, db, append(args, "-o", "json")...)
	return decode[T](t, res)
}

func decode[T any](t testing.TB, res result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
		t.Fatalf("stdout is not the JSON expected: %v\n%s", err, res)
	}
	return v
}

// wantError checks a failed run: its exit code, that stdout is empty, and
// that stderr is one sentence ("tether: ... .") holding every fragment, plus
// the usage hint for usage errors.
func wantError(t testing.TB, res result, code int, fragments ...string) {
	t.Helper()
	if res.code != code {
		t.Fatalf("got exit %d, want %d\n%s", res.code, code, res)
	}
	if res.stdout != "" {
		t.Errorf("got stdout %q, want nothing on a failure\n%s", res.stdout, res)
	}
	lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
	wantLines := 1
	if code == exitUsage {
		wantLines = 2
	}
	if len(lines) != wantLines {
		t.Errorf("got %d lines on stderr, want %d\n%s", len(lines), wantLines, res)
	}
	// root.go's sentence() ends a message with a period, or leaves one that
	// ends with a closing parenthesis as it is.
	first := lines[0]
	if !strings.HasPrefix(first, "tether: ") || !(strings.HasSuffix(first, ".") || strings.HasSuffix(first, ")")) {
		t.Errorf("got stderr %q, want one sentence: \"tether: ...\" ending with a period", first)
	}
	for _, f := range fragments {
		if !strings.Contains(first, f) {
			t.Errorf("got stderr %q, want it to contain %q", first, f)
		}
	}
	if code == exitUsage && !strings.Contains(res.stderr, "--help") {
		t.Errorf("got stderr %q, want the hint to run --help", res.stderr)
	}
}

// openRegistry opens the test's database in this process, as the server or
// an agent-side process would.
func openRegistry(t testing.TB, db string) *registry.Registry {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", db, err)
	}
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(registry.KeyFilePath(db))})
	t.Cleanup(func() {
		reg.Close()
		st.Close()
	})
	return reg
}

// created is what a test needs of cluster create's -o json answer.
type created struct {
	ClusterID         string
	TokenID           string
	RegistrationToken string
	ExpiresAt         time.Time
	Cluster           registry.Cluster
}

// createCluster creates a cluster with the CLI and returns its id and first
// registration token. The answer has the admin API's shape:
// {"cluster": ..., "registrationToken": {"id","clusterId","token","expiresAt"}}.
func createCluster(t testing.TB, db, name string, flags ...string) created {
	t.Helper()
	out := okJSON[struct {
		Cluster           registry.Cluster              `json:"cluster"`
		RegistrationToken adminclient.RegistrationToken `json:"registrationToken"`
	}](t, db, append([]string{"cluster", "create", "--name", name}, flags...)...)
	c := created{
		ClusterID: out.RegistrationToken.ClusterID, TokenID: out.RegistrationToken.ID,
		RegistrationToken: out.RegistrationToken.Token, ExpiresAt: out.RegistrationToken.ExpiresAt, Cluster: out.Cluster,
	}
	if c.ClusterID == "" || c.RegistrationToken == "" || c.Cluster.ID != c.ClusterID {
		t.Fatalf("cluster create -o json: got cluster %q, registrationToken.clusterId %q and registrationToken.token %q, want all set and the ids equal", c.Cluster.ID, c.ClusterID, c.RegistrationToken)
	}
	return c
}

// registerAgent redeems token as an agent would and returns the
// authenticated agent and its bearer credential.
func registerAgent(t testing.TB, reg *registry.Registry, token string, caps ...string) (*registry.Agent, string) {
	t.Helper()
	ctx := context.Background()
	issued, err := reg.Register(ctx, registry.RegisterParams{Token: token, Capabilities: caps})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	bearer := issued.Token.Reveal()
	a, err := reg.Authenticate(ctx, bearer, registry.AuthAny)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return a, bearer
}

// Payloads.
func configMap(ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"k":"v"}}`, name, ns)
}

func appInstance(ns, name, catalogID string) string {
	return fmt.Sprintf(`{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"ApplicationInstance","metadata":{"name":%q,"namespace":%q},"spec":{"appRef":{"catalogId":%q}}}`, name, ns, catalogID)
}

func operation(ns, opType, engine string) string {
	return fmt.Sprintf(`{"intent":"request-operation","operation":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Operation","metadata":{"name":"op-1","namespace":%q},"spec":{"type":%q,"engine":%q,"targetRef":{"name":"db"}}}}`, ns, opType, engine)
}

// submit submits a job with the CLI and returns it.
func submit(t testing.TB, db, cluster, kind, payload string, flags ...string) submittedJob {
	t.Helper()
	return okJSON[submittedJob](t, db, append([]string{"job", "submit", "--cluster", cluster, "--kind", kind, "--payload", payload}, flags...)...)
}

// syncBuffer collects a background process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is the binary running in the background (--wait, --follow).
type proc struct {
	args           []string
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
	err            error
}

func start(t testing.TB, db string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	p := &proc{args: args, done: make(chan struct{})}
	p.cmd = command(ctx, db, args...)
	p.cmd.Stdin = strings.NewReader("")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("cannot start tether %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		// A failed test shows what the process said: it is usually why.
		if t.Failed() {
			t.Logf("tether %s (stopped) said:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// waitOutput waits until the process's stdout holds want.
func (p *proc) waitOutput(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(p.stdout.String(), want) {
		select {
		case <-p.done:
			if strings.Contains(p.stdout.String(), want) {
				return
			}
			t.Fatalf("tether %s exited before printing %q\n%s", strings.Join(p.args, " "), want, p.result())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("tether %s did not print %q within %s\n%s", strings.Join(p.args, " "), want, waitTimeout, p.result())
		}
	}
}

// wait waits for the process to exit and returns its result.
func (p *proc) wait(t testing.TB) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		t.Fatalf("tether %s did not exit within %s\nstdout so far:\n%s", strings.Join(p.args, " "), waitTimeout, p.stdout.String())
	}
	return p.result()
}

// result is valid once done is closed (or as a snapshot for messages).
func (p *proc) result() result {
	res := result{args: p.args, stdout: p.stdout.String(), stderr: p.stderr.String()}
	select {
	case <-p.done:
		var exitErr *exec.ExitError
		if errors.As(p.err, &exitErr) {
			res.code = exitErr.ExitCode()
		} else if p.err != nil {
			res.code = -1
		}
	default:
		res.code = -1 // still running
	}
	return res
}

// eventually polls cond until it holds, failing the test after waitTimeout.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, waitTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
