package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// sshClient is the real OpenSSH client pointed at serve --ssh-listen: only
// the key given, the host key pinned, never a prompt.
type sshClient struct {
	port       int
	knownHosts string
}

func (c sshClient) args(key string, extra ...string) []string {
	args := []string{"-F", "/dev/null", "-p", fmt.Sprint(c.port), "-i", key,
		"-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none", "-o", "BatchMode=yes",
		"-o", "UserKnownHostsFile=" + c.knownHosts, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
		"-o", "ConnectTimeout=20"}
	return append(args, extra...)
}

func (c sshClient) command(key string, extra ...string) string {
	return "ssh " + strings.Join(c.args(key, extra...), " ")
}

func sshKeygen(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name+"@e2e", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConsoleOverSSH drives the real ssh client, in tmux, against the real
// binary's serve --ssh-listen: the console renders and its keys work, an
// operator's requeue is done and audited as ssh:NAME, a viewer is offered
// no change, unknown keys, passwords, commands are refused, and revoking
// the identity ends its open session.
func TestConsoleOverSSH(t *testing.T) {
	for _, tool := range []string{"ssh", "ssh-keygen", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the console-over-SSH end-to-end test needs the OpenSSH client and tmux", tool)
		}
	}
	db := newDB(t)
	dir := t.TempDir()
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	job := submit(t, db, "prod", "apply", configMap("apps", "web"))
	reg := openRegistry(t, db)
	agent, _ := registerAgent(t, reg, c.RegistrationToken, registry.CapabilityLease)
	if got, err := reg.PollJobs(context.Background(), agent, c.ClusterID, 1); err != nil || len(got) != 1 {
		t.Fatalf("the agent took %d jobs (%v), want the one submitted", len(got), err)
	}
	if _, err := reg.AckJob(context.Background(), agent, job.ID); err != nil {
		t.Fatal(err)
	}

	opKey := sshKeygen(t, dir, "alice")
	viewerKey := sshKeygen(t, dir, "vic")
	stranger := sshKeygen(t, dir, "mallory")
	ok(t, db, "admin-token", "create", "--name", "alice", "--role", "operator", "--ssh-key-file", opKey+".pub")
	ok(t, db, "admin-token", "create", "--name", "vic", "--role", "viewer", "--ssh-key-file", viewerKey+".pub")
	scraper := scraperToken(t, db)

	port := freePort(t)
	srv, addr, _ := startServe(t, db, "--ssh-listen", fmt.Sprintf("127.0.0.1:%d", port))
	if !strings.Contains(srv.log(), "console listening over SSH") {
		t.Fatalf("serve did not say it listens over SSH:\n%s", srv.log())
	}
	host := okJSON[struct {
		Fingerprint string `json:"fingerprint"`
		PublicKey   string `json:"publicKey"`
	}](t, db, "ssh", "host-key")
	if !strings.Contains(srv.log(), host.Fingerprint) {
		t.Fatalf("serve presents another host key than tether ssh host-key's %s:\n%s", host.Fingerprint, srv.log())
	}
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, fmt.Appendf(nil, "[127.0.0.1]:%d %s\n", port, host.PublicKey), 0o600); err != nil {
		t.Fatal(err)
	}
	cl := sshClient{port: port, knownHosts: knownHosts}

	// Refused, before any console: an unknown key, a password, a command.
	run := func(key string, extra ...string) (string, string, int) {
		cmd := exec.Command("ssh", cl.args(key, extra...)...)
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return stdout.String(), stderr.String(), code
	}
	if _, stderr, code := run(stranger, "mallory@127.0.0.1"); code == 0 || !strings.Contains(stderr, "Permission denied (publickey)") {
		t.Errorf("an unknown key: exit %d, %q; want Permission denied (publickey)", code, stderr)
	}
	if _, stderr, code := run(opKey, "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password,keyboard-interactive", "alice@127.0.0.1"); code == 0 || !strings.Contains(stderr, "Permission denied (publickey)") {
		t.Errorf("a password: exit %d, %q; want public keys as the one method offered", code, stderr)
	}
	if stdout, stderr, code := run(opKey, "alice@127.0.0.1", "ls", "/"); code == 0 || stdout != "" {
		t.Errorf("ssh host ls: exit %d, stdout %q, stderr %q; want it refused, running nothing", code, stdout, stderr)
	}

	// The refused authentications are counted on /metrics.
	_, metrics := httpGet(t, "http://"+addr+"/metrics", "Authorization", "Bearer "+scraper)
	if m := regexp.MustCompile(`(?m)^tether_ssh_auth_failures_total (\d+)`).FindSubmatch(metrics); m == nil || string(m[1]) == "0" {
		t.Errorf("/metrics does not count the refused SSH authentications: %q", m)
	}

	// The operator's console: render, move, requeue.
	op := startTmux(t, 120, 40, cl.command(opKey, "-t", "alice@127.0.0.1")+"; echo ssh-exited; sleep 600")
	op.waitText("ssh:alice")
	op.keys("3")
	op.waitText("in progress 1")
	op.keys("l") // the in-progress tab
	op.waitText(job.ID)
	op.keys("R")
	op.waitText("Requeue job " + job.ID + "?")
	op.keys("y")
	op.waitFor("the requeue to be done", func(sc string) bool { return strings.Contains(sc, "requeued") })
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	entries, err := reg.ListAudit(admin, registry.AuditListParams{Action: "job.requeue", Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].Actor != "ssh:alice" || entries[0].TargetID != job.ID {
		t.Fatalf("the requeue's audit entries: %+v (%v); want one by ssh:alice", entries, err)
	}

	// The viewer's console offers no change, and R changes nothing.
	viewer := startTmux(t, 120, 40, cl.command(viewerKey, "-t", "vic@127.0.0.1")+"; echo ssh-exited; sleep 600")
	viewer.waitText("ssh:vic")
	viewer.waitText("VIEWER")
	viewer.keys("3")
	screen := viewer.waitText("Jobs")
	if lines := strings.Split(strings.TrimRight(screen, "\n "), "\n"); strings.Contains(lines[len(lines)-1], "requeue") {
		t.Errorf("a viewer's console offers requeue (its help line):\n%s", screen)
	}
	viewer.keys("R")
	viewer.waitText("needs the operator role")
	viewer.keys("q")
	viewer.waitText("ssh-exited")

	// Revoking alice ends her open session, saying why.
	ok(t, db, "admin-token", "revoke", "alice", "--reason", "laptop lost")
	op.waitText("no longer opens the console")
	op.waitText("ssh-exited")
	all, err := reg.ListAudit(admin, registry.AuditListParams{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Actor == "ssh:vic" {
			t.Errorf("the viewer changed something: %+v", e)
		}
	}
	code, log := srv.stop(t)
	if code != 0 {
		t.Errorf("serve exited %d:\n%s", code, log)
	}
}
