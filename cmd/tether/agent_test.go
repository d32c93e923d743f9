package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// TestAgentRegisterAndRun drives the real binary: serve, register an agent
// with a token on stdin, run it, and stop it with SIGTERM while a job runs.
func TestAgentRegisterAndRun(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve, addr, _ := startServe(t, db)
	defer serve.stop(t)
	c := createCluster(t, db, "prod", "--namespaces", "team-a")
	state := filepath.Join(t.TempDir(), "agent")

	bad := cliIn(t, db, "tether_reg_01m7yb88dgj37z87j21jv895nr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		"agent", "register", "--server", "http://"+addr, "--token", "-", "--state-dir", state)
	wantError(t, bad, exitError, "registration token is invalid")

	res := cliIn(t, db, c.RegistrationToken+"\n", "agent", "register", "--server", "http://"+addr, "--token", "-", "--state-dir", state, "--capabilities", "lease")
	if res.code != exitOK || !strings.Contains(res.stdout, c.ClusterID) {
		t.Fatalf("register: %s", res)
	}
	if strings.Contains(res.stdout+res.stderr, "tether_cred_") || strings.Contains(res.stdout+res.stderr, c.RegistrationToken) {
		t.Fatalf("register printed a secret:\n%s", res)
	}
	for path, want := range map[string]os.FileMode{state: 0o700, filepath.Join(state, "credential.json"): 0o600} {
		info, err := os.Stat(path)
		if err != nil || info.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, err %v; want %o", path, info.Mode().Perm(), err, want)
		}
	}

	// A start script that registers every time keeps the credential it has
	// (the Helm chart's init container), even with a spent token.
	again := cliIn(t, db, c.RegistrationToken+"\n", "agent", "register", "--server", "http://"+addr, "--token", "-", "--state-dir", state, "--keep-existing")
	if again.code != exitOK || !strings.Contains(again.stdout, "Already registered as cluster "+c.ClusterID) {
		t.Fatalf("register --keep-existing with a credential: %s", again)
	}

	marker := filepath.Join(t.TempDir(), "finished")
	agent := start(t, db, "agent", "run", "--state-dir", state, "--drain", "30s",
		"--exec", `echo "::status Applying"; sleep 1; touch `+marker)
	job := submit(t, db, c.ClusterID, "apply", configMap("team-a", "app"))
	reg := openRegistry(t, db)
	eventually(t, "the agent to claim the job", func() bool {
		j, err := reg.GetJob(t.Context(), job.ID)
		return err == nil && j.State == registry.JobInProgress
	})
	// SIGTERM while the job runs: the agent lets it finish, reports it, exits 0.
	if err := agent.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out := agent.wait(t)
	if out.code != exitOK {
		t.Fatalf("agent after SIGTERM: %s", out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the running job did not finish before the agent exited")
	}
	j, err := reg.GetJob(t.Context(), job.ID)
	if err != nil || j.State != registry.JobSucceeded {
		t.Fatalf("job after the agent drained: %+v, %v", j, err)
	}
	if strings.Contains(out.stderr, "tether_cred_") {
		t.Fatalf("the agent logged its credential:\n%s", out.stderr)
	}
}

// TestAgentRegisterUnreachable: a wrong --server says which address failed
// and what to check, after a few quick tries.
func TestAgentRegisterUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	res := cliIn(t, newDB(t), "tether_reg_01m7yb88dgj37z87j21jv895nr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		"agent", "register", "--server", "http://"+addr, "--token", "-", "--state-dir", filepath.Join(t.TempDir(), "agent"))
	wantError(t, res, exitError, "cannot reach tether at http://"+addr, "check --server")
}

// TestAgentRegisterTokenVariable: without --token, the token comes from
// $TETHER_REGISTRATION_TOKEN, as documented; $TETHER_TOKEN (what the generic
// TETHER_<FLAG> rule would read) is not a source and cannot override it.
func TestAgentRegisterTokenVariable(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve, addr, _ := startServe(t, db)
	defer serve.stop(t)
	c := createCluster(t, db, "prod")
	state := filepath.Join(t.TempDir(), "agent")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, db, "agent", "register", "--server", "http://"+addr, "--state-dir", state)
	cmd.Env = append(cmd.Env, "TETHER_TOKEN=tether_reg_01m7yb88dgj37z87j21jv895nr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"TETHER_REGISTRATION_TOKEN="+c.RegistrationToken)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), c.ClusterID) {
		t.Fatalf("agent register with $TETHER_REGISTRATION_TOKEN (and an unrelated $TETHER_TOKEN): %v\n%s", err, out)
	}
}

// TestAgentRegisterDefaultCapabilities: the reference agent negotiates hmac
// and lease unless told otherwise (without lease, the job of an agent that
// died is never reclaimed); --capabilities none negotiates neither.
func TestAgentRegisterDefaultCapabilities(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	serve, addr, _ := startServe(t, db)
	defer serve.stop(t)
	reg := openRegistry(t, db)
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"default", nil, "hmac,lease"},
		{"none", []string{"--capabilities", "none"}, ""},
		{"lease", []string{"--capabilities", "lease"}, "lease"},
	} {
		c := createCluster(t, db, "caps-"+tc.name)
		args := append([]string{"agent", "register", "--server", "http://" + addr, "--token", "-", "--state-dir", filepath.Join(t.TempDir(), tc.name)}, tc.flags...)
		if res := cliIn(t, db, c.RegistrationToken+"\n", args...); res.code != exitOK {
			t.Fatalf("%s: register: %s", tc.name, res)
		}
		creds, err := reg.ListCredentials(t.Context(), c.ClusterID)
		if err != nil || len(creds) != 1 {
			t.Fatalf("%s: credentials %+v, %v", tc.name, creds, err)
		}
		if got := strings.Join(creds[0].Capabilities, ","); got != tc.want {
			t.Errorf("%s: the credential negotiated %q, want %q", tc.name, got, tc.want)
		}
	}
	res := cliIn(t, db, "x\n", "agent", "register", "--server", "http://"+addr, "--token", "-", "--state-dir", t.TempDir(), "--capabilities", "none,lease")
	wantError(t, res, exitUsage, "none stands alone")
}

// TestAgentCommandsSayWhatIsMissing: a newcomer who leaves out one of the
// agent's required flags learns which one and what it takes, and one who
// runs the agent before registering it is told how to register, with the
// token on standard input as the README does.
func TestAgentCommandsSayWhatIsMissing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	state := t.TempDir()
	res := cli(t, db, "agent", "run", "--exec", "./apply.sh")
	wantError(t, res, exitUsage, "--state-dir (the directory tether agent register wrote the credential to) is required")
	if strings.Contains(res.stderr, "--exec (") {
		t.Errorf("got %q, want only the missing --state-dir named", res.stderr)
	}
	wantError(t, cli(t, db, "agent", "run", "--state-dir", state), exitUsage, "--exec (the command to run for each job")
	wantError(t, cli(t, db, "agent", "run"), exitUsage, "--state-dir (", "and --exec (", "are required")
	wantError(t, cli(t, db, "agent", "register", "--token", "-", "--state-dir", state), exitUsage, "--server (tether's URL")
	wantError(t, cli(t, db, "agent", "run", "--state-dir", state, "--exec", "true"), exitError,
		"no credential in "+state, "tether agent register --server URL --token - --state-dir "+state)
}
