package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func TestConsoleNeedsATerminal(t *testing.T) {
	db := newDB(t)
	res := cli(t, db, "console") // stdout is a pipe
	if res.code != exitUsage {
		t.Fatalf("got exit %d, want %d\n%s", res.code, exitUsage, res)
	}
	for _, want := range []string{"tether: the console needs an interactive terminal (standard output is not a terminal)",
		"tether cluster list", "tether job list", "tether events --follow", "tether audit"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr should contain %q\n%s", want, res)
		}
	}
	if res.stdout != "" {
		t.Errorf("nothing belongs on stdout: %q", res.stdout)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the console opened the database before checking the terminal")
	}
}

func TestTerminalProblem(t *testing.T) {
	t.Setenv("TERM", "dumb")
	if got := terminalProblem(os.Stdout); got != "TERM is dumb" {
		t.Errorf("TERM=dumb: %q", got)
	}
	t.Setenv("TERM", "xterm-256color")
	if got := terminalProblem(&bytes.Buffer{}); got != "standard output is not a terminal" {
		t.Errorf("a buffer: %q", got)
	}
}

func TestConsoleUsageErrors(t *testing.T) {
	db := newDB(t)
	wantError(t, cli(t, db, "console", "--listen", "127.0.0.1:0"), exitUsage, "--listen needs --serve")
}

// tmuxSessions numbers the tmux servers a test process starts.
var tmuxSessions atomic.Int64

// tmuxSession runs the real binary in a detached tmux session of its own
// (its own server socket) and reads the screen with capture-pane.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func startTmux(t *testing.T, width, height int, command string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the end-to-end console test needs it (apt-get install tmux)")
	}
	// A socket of its own per session: reusing one right after the previous
	// test's kill-server can reach that server while it exits, and the new
	// session fails (seen under load).
	s := &tmuxSession{t: t, socket: fmt.Sprintf("tether-e2e-%d-%d", os.Getpid(), tmuxSessions.Add(1)), name: "console"}
	s.run("new-session", "-d", "-s", s.name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height),
		"-e", "TERM=xterm-256color", "-e", "TETHER_THEME=dark", command)
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-L", s.socket, "kill-server").Run()
	})
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// describe is the screen for a failure message, or why there is none.
func (s *tmuxSession) describe(screen string) string {
	if strings.TrimSpace(screen) != "" {
		return screen
	}
	if exec.Command("tmux", "-L", s.socket, "has-session", "-t", s.name).Run() != nil {
		return "(nothing: the session ended, so the console exited)"
	}
	return "(an empty screen)"
}

func (s *tmuxSession) screen() string {
	s.t.Helper()
	out, err := exec.Command("tmux", "-L", s.socket, "capture-pane", "-p", "-t", s.name).CombinedOutput()
	if err != nil {
		return "(no screen: " + err.Error() + ")"
	}
	return string(out)
}

// keys sends tmux key names (Enter, Tab, Escape, C-s) or, with literal,
// text typed as is.
func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.run(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

func (s *tmuxSession) typeText(text string) {
	s.t.Helper()
	s.run("send-keys", "-t", s.name, "-l", text)
}

// waitFor polls the screen until cond holds; the deadline is generous for a
// slow shared machine, and the polling is never an assertion by itself.
func (s *tmuxSession) waitFor(what string, cond func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		screen := s.screen()
		if cond(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waited %s for %s; the screen shows:\n%s", waitTimeout, what, s.describe(screen))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *tmuxSession) waitText(text string) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("%q", text), func(screen string) bool { return strings.Contains(screen, text) })
}

var (
	servingRe = regexp.MustCompile(`serving (127\.0\.0\.1:\d+)`)
	tokenRe   = regexp.MustCompile(`tether_reg_[0-9a-z]{26}_[a-z2-7]{32}`)
)

// agentPost sends one agent request as the public operator does: bearer
// token, the v1 media type, a JSON body.
func agentPost(t *testing.T, url, bearer string, body any) (int, []byte) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Accept", "application/vnd.vworkspace.agent.v1+json")
	req.Header.Set("Content-Type", "application/vnd.vworkspace.agent.v1+json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestConsoleEndToEnd runs the real binary in tmux over a seeded database:
// it creates a cluster through the form, reads the token off the screen,
// registers an agent with it over the agent API the console serves, posts a
// heartbeat, and sees the cluster turn active and the heartbeat arrive.
func TestConsoleEndToEnd(t *testing.T) {
	db := newDB(t)
	reg := openRegistry(t, db)
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "seed"})
	seed, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "seeded", Organization: "acme", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		payload := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"default"}}`, i)
		if _, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: seed.ID, Kind: registry.KindApply, Payload: json.RawMessage(payload)}); err != nil {
			t.Fatal(err)
		}
	}

	exitFile := filepath.Join(t.TempDir(), "exit")
	s := startTmux(t, 120, 40, fmt.Sprintf("%s --db %s console --serve --listen 127.0.0.1:0; echo $? > %s", binPath, db, exitFile))
	screen := s.waitFor("the console to serve the agent API", func(sc string) bool { return servingRe.MatchString(sc) })
	addr := servingRe.FindStringSubmatch(screen)[1]
	s.waitText("JOBS  3")

	// A cluster through the form: name, two tabs to the namespaces, add one, save.
	s.keys("2")
	s.waitText("seeded")
	s.keys("n")
	s.waitText("New cluster")
	s.typeText("e2e-cluster")
	s.keys("Tab", "Tab", "Tab")
	s.typeText("default")
	s.keys("Enter")
	s.waitText("• default")
	s.keys("C-s")
	screen = s.waitFor("the token, shown once", func(sc string) bool { return tokenRe.MatchString(sc) })
	token := tokenRe.FindString(screen)
	if !strings.Contains(screen, "tether agent register") || !strings.Contains(screen, "--server http://"+addr) {
		t.Errorf("the token modal should show the register command for this server:\n%s", screen)
	}

	// Register an agent with it, over the agent API, as the operator does.
	code, body := agentPost(t, "http://"+addr+"/api/agent/register", token, map[string]any{"registrationToken": token, "clusterId": "e2e-cluster"})
	if code != http.StatusOK {
		t.Fatalf("register: %d %s", code, body)
	}
	var cred struct {
		ClusterID string `json:"clusterId"`
		Token     string `json:"token"`
	}
	if err := json.Unmarshal(body, &cred); err != nil || cred.ClusterID == "" || cred.Token == "" {
		t.Fatalf("register answered %s (%v)", body, err)
	}
	heartbeat := map[string]any{"events": []map[string]any{{
		"kind": "ClusterHeartbeat",
		"resourceRef": map[string]string{
			"apiVersion": "ops.vworkspace.io/v1alpha1", "kind": "Cluster", "namespace": "", "name": cred.ClusterID,
		},
	}}}
	if code, body := agentPost(t, "http://"+addr+"/api/agent/events", cred.Token, heartbeat); code != http.StatusNoContent {
		t.Fatalf("heartbeat: %d %s", code, body)
	}

	// Close the modal (twice: the token was not copied), then watch the row.
	s.keys("Escape")
	s.waitText("Close without copying?")
	s.keys("Escape")
	// Each key waits for the previous one's effect: an escape followed at
	// once by another key reads as alt+key.
	s.waitFor("the token modal to close", func(sc string) bool { return !strings.Contains(sc, "Registration token for") })
	rowOf := func(sc string) string {
		for _, line := range strings.Split(sc, "\n") {
			if strings.HasPrefix(line, "e2e-cluster") {
				return line
			}
		}
		return ""
	}
	s.waitFor("e2e-cluster to turn active with a heartbeat", func(sc string) bool {
		row := rowOf(sc)
		return strings.Contains(row, "active") && !strings.Contains(row, "never") && strings.Contains(row, "unsigned")
	})

	// The heartbeat is in the live event tail.
	s.keys("4")
	s.waitFor("the heartbeat in the events view", func(sc string) bool {
		for _, line := range strings.Split(sc, "\n") {
			if strings.Contains(line, "e2e-cluster") && strings.Contains(line, "ClusterHeartbeat") {
				return true
			}
		}
		return false
	})

	// q leaves the console after asking (it serves the agent API) and the
	// process exits.
	s.keys("q")
	s.waitText("Quit the console?")
	s.keys("y")
	s.waitFor("the console to exit", func(sc string) bool {
		return exec.Command("tmux", "-L", s.socket, "has-session", "-t", s.name).Run() != nil
	})
	if code, err := os.ReadFile(exitFile); err != nil || strings.TrimSpace(string(code)) != "0" {
		t.Errorf("the console exited with %q (%v), want 0", code, err)
	}
	c, err := reg.GetCluster(admin, "e2e-cluster")
	if err != nil || c.State != registry.ClusterActive || c.Status.LastHeartbeatAt.IsZero() {
		t.Errorf("in the registry: %+v, %v", c, err)
	}
	if log, err := os.ReadFile(db + ".serve.log"); err != nil || !strings.Contains(string(log), "listening") {
		t.Errorf("the agent API's log should be next to the database: %v", err)
	}
}

// TestConsoleInATerminal checks, in a real terminal, what only a terminal
// shows: TERM=dumb and a bad theme are refused with exit code 2, and
// NO_COLOR (any value) draws without a single colour.
func TestConsoleInATerminal(t *testing.T) {
	db := newDB(t)
	ok(t, db, "cluster", "create", "--name", "alpha", "--namespaces", "default")
	s := startTmux(t, 100, 30, "sh")
	run := func(line string) {
		s.typeText(line)
		s.keys("Enter")
	}
	// Each command echoes its own marker: after a clear, the previous
	// command's marker can still be on the screen for a moment.
	run(fmt.Sprintf("TERM=dumb %s --db %s console; echo dumb-exit=$?", binPath, db))
	s.waitText("dumb-exit=2")
	if sc := s.screen(); !strings.Contains(sc, "TERM is dumb") || !strings.Contains(sc, "tether cluster list") {
		t.Errorf("TERM=dumb:\n%s", sc)
	}
	run("clear")
	run(fmt.Sprintf("%s --db %s console --theme neon; echo theme-exit=$?", binPath, db))
	s.waitText("theme-exit=2")
	if sc := s.screen(); !strings.Contains(sc, `theme "neon" is not built in`) {
		t.Errorf("a bad theme:\n%s", sc)
	}
	run("clear")
	run(fmt.Sprintf("NO_COLOR=yes %s --db %s console --view clusters; echo done=$?", binPath, db))
	s.waitText("alpha")
	styled := s.run("capture-pane", "-p", "-e", "-t", s.name)
	// Any foreground or background colour (39 and 49, "the default
	// colour", are resets, not colours).
	if regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?(3[0-8]|4[0-8]|9[0-7]|10[0-7])[;m]`).MatchString(styled) {
		t.Errorf("NO_COLOR: the console drew in colour:\n%q", styled)
	}
	if !strings.Contains(styled, "\x1b[") {
		t.Error("NO_COLOR: no attributes at all; the selection and the tabs must still stand out")
	}
	s.keys("q")
	s.waitText("done=0")
}

// TestConsoleQuitsWhenItsTerminalCloses: a console serving the agent API
// quits when its terminal goes away (SIGHUP), with the API it serves,
// rather than serve on with nobody at the keyboard. (serve itself takes
// SIGHUP as "reload", like a daemon.) It quits as after q: the port is
// free and the database closed, not killed by the signal halfway.
func TestConsoleQuitsWhenItsTerminalCloses(t *testing.T) {
	db := newDB(t)
	s := startTmux(t, 100, 30, fmt.Sprintf("%s --db %s console --serve --listen 127.0.0.1:0", binPath, db))
	screen := s.waitFor("the console to serve the agent API", func(sc string) bool { return servingRe.MatchString(sc) })
	addr := servingRe.FindStringSubmatch(screen)[1]
	pid, err := strconv.Atoi(strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{pane_pid}")))
	if err != nil {
		t.Fatalf("the console's pid: %v", err)
	}
	s.run("kill-session", "-t", s.name) // the terminal closes: SIGHUP
	waitQuitAfterHangup(t, pid, addr, db)
}

// TestConsoleQuitsWhenItsTerminalClosesUnderMake: started by `make run`,
// the console is not the terminal's session leader, make is; the kernel
// sends SIGHUP to make alone, and make catches it and waits for its child.
// The console must notice by itself that its terminal is gone, or it
// serves on for ever and the next `make run` cannot listen. A shell that
// traps SIGHUP stands for make here (the trap is a handler, as make's is:
// the child does not inherit it, unlike an ignored signal).
func TestConsoleQuitsWhenItsTerminalClosesUnderMake(t *testing.T) {
	db := newDB(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := startTmux(t, 100, 30, fmt.Sprintf(
		"trap : HUP; sh -c 'echo $$ > %s && exec %s --db %s console --serve --listen 127.0.0.1:0'", pidFile, binPath, db))
	screen := s.waitFor("the console to serve the agent API", func(sc string) bool { return servingRe.MatchString(sc) })
	addr := servingRe.FindStringSubmatch(screen)[1]
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("the console's pid: %v", err)
	}
	leader, err := strconv.Atoi(strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{pane_pid}")))
	if err != nil || leader == pid {
		t.Fatalf("the shell should lead the session, not the console: pane %d (%v), console %d", leader, err, pid)
	}
	t.Cleanup(func() {
		// Left running by a failure: it would hold its port for ever.
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "tether" {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// The terminal closes: SIGHUP to the shell only.
	s.run("kill-session", "-t", s.name)
	waitQuitAfterHangup(t, pid, addr, db)
}

// waitQuitAfterHangup waits for the console (pid) to exit after its
// terminal closed, and checks that it left as after q: the address it
// served is free to listen on again, and the database was closed (SQLite
// removes its write-ahead log when the last connection closes; a process
// killed halfway leaves it).
func waitQuitAfterHangup(t *testing.T, pid int, addr, db string) {
	t.Helper()
	eventually(t, "the console to quit after its terminal closed", func() bool { return exited(pid) })
	eventually(t, "the agent API's address "+addr+" to be free", func() bool {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		ln.Close()
		return true
	})
	if _, err := os.Stat(db + "-wal"); err == nil {
		t.Errorf("the console left %s-wal: it did not close the database", db)
	}
	if log, err := os.ReadFile(db + ".serve.log"); err != nil || !strings.Contains(string(log), "shut down") {
		t.Errorf("the agent API did not shut down (%v):\n%s", err, log)
	}
}

// exited: no process pid, or only its exit status left for a parent that
// does not collect it (a zombie).
func exited(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// TestConsoleQuitsOnSIGTERM: `kill PID` ends the console at once, every
// time. The console's context ends on SIGTERM and Bubble Tea also caught
// it: when the program saw its context end first, Bubble Tea's signal
// handler was left sending its quit message to nobody, and the program
// waited for it, holding the terminal, until SIGKILL (8 launches of 10).
func TestConsoleQuitsOnSIGTERM(t *testing.T) {
	db := newDB(t)
	ok(t, db, "cluster", "create", "--name", "alpha", "--namespaces", "default")
	for i := range 5 {
		s := startTmux(t, 100, 30, fmt.Sprintf("%s --db %s console --view clusters", binPath, db))
		s.waitText("alpha")
		pid, err := strconv.Atoi(strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{pane_pid}")))
		if err != nil {
			t.Fatalf("the console's pid: %v", err)
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) != syscall.ESRCH {
			if time.Now().After(deadline) {
				t.Fatalf("launch %d: the console was still running 5s after SIGTERM", i+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
