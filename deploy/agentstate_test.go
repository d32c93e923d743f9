package deploy

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAgentChartKeepsItsState: the chart's agent keeps its state directory
// in memory and copies it to and from a Secret (save-state, restore-state).
// Every file a real `tether agent register` leaves there must make the round
// trip: a pod that comes back with its credential but a new encryption key
// can no longer open its cluster's encrypted payloads, and one without its
// client certificate cannot use mTLS. The two scripts are run for real,
// with kubectl and sleep stood in for.
func TestAgentChartKeepsItsState(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the chart's scripts with")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tether")
	if out, err := run(t, 5*time.Minute, "go", "build", "-o", bin, "../cmd/tether"); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "tether.db")
	tether := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"--db", db}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tether %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	token := tether("cluster", "create", "--name", "prod", "--jq", ".registrationToken.token")
	tether("ca", "init") // the agent then gets a client certificate too

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "--db", db, "serve", "--listen", "127.0.0.1:0")
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	var addr string
	for sc := bufio.NewScanner(stderr); addr == "" && sc.Scan(); {
		if m := regexp.MustCompile(`addr=([0-9.]+:[0-9]+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("tether serve logged no address")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	// What a registered agent keeps.
	state := filepath.Join(dir, "state")
	tether("agent", "register", "--server", "http://"+addr, "--token", token, "--state-dir", state)
	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	for _, want := range []string{"credential.json", "encryption-key.json", "client.crt", "client.key"} {
		if !slices.Contains(files, want) {
			t.Fatalf("agent register left %v, without %s: the test no longer matches the agent", files, want)
		}
	}

	tmpl, err := os.ReadFile(filepath.Join("helm", "tether", "templates", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	script := func(container string) string {
		t.Helper()
		m := regexp.MustCompile(`(?s)- name: ` + container + `\n.*?- \|\n(.*?)\n {10}\S`).FindStringSubmatch(string(tmpl))
		if m == nil {
			t.Fatalf("no script in the %s container", container)
		}
		s := m[1]
		s = strings.ReplaceAll(s, "{{ $state }}", "t-agent-state")
		return s
	}

	// save-state: kubectl gets every file of the state directory.
	stub := filepath.Join(dir, "stub")
	if err := os.Mkdir(stub, 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "kubectl-args")
	for name, body := range map[string]string{
		"kubectl": "#!/bin/sh\nif [ \"$1\" = create ]; then echo \"$@\" >> " + record + "; else cat > /dev/null; fi\n",
		"sleep":   "#!/bin/sh\nkill $PPID\n", // one round of the loop
	} {
		if err := os.WriteFile(filepath.Join(stub, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	save := strings.ReplaceAll(script("save-state"), "/state", state)
	cmd := exec.Command("sh", "-c", save)
	cmd.Env = append(os.Environ(), "PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"))
	_ = cmd.Run() // ended by the stand-in sleep
	args, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("save-state did not run kubectl create: %v", err)
	}
	for _, f := range files {
		if !strings.Contains(string(args), "--from-file="+f+"="+filepath.Join(state, f)) {
			t.Errorf("save-state does not store %s in the Secret: kubectl %s", f, args)
		}
	}

	// restore-state: a new pod gets every file back, mode 0600.
	stored, fresh := filepath.Join(dir, "stored"), filepath.Join(dir, "fresh")
	for _, d := range []string{stored, fresh} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(state, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stored, f), b, 0o440); err != nil {
			t.Fatal(err)
		}
	}
	restore := strings.NewReplacer("/stored", stored, "/state", fresh).Replace(script("restore-state"))
	if out, err := exec.Command("sh", "-c", restore).CombinedOutput(); err != nil {
		t.Fatalf("restore-state: %v\n%s", err, out)
	}
	for _, f := range files {
		info, err := os.Stat(filepath.Join(fresh, f))
		if err != nil {
			t.Errorf("restore-state does not bring %s back: %v", f, err)
			continue
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("restored %s has mode %v, want 0600", f, info.Mode().Perm())
		}
	}
}
