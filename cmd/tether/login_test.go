package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// cliWithEnv runs the binary with extra environment variables and without
// --db when db is empty.
func cliWithEnv(t *testing.T, db string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, db, args...)
	if db == "" {
		cmd.Args = append(cmd.Args[:1], args...)
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		res.code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("cannot run tether %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// tether login checks the token against a real server and saves the context
// readable by its owner only; tether console then runs over that server's
// admin API, in a real terminal, with the token's identity in its header.
func TestLoginAndRemoteConsole(t *testing.T) {
	db := newDB(t)
	reg := openRegistry(t, db)
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "seed"})
	seed, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "far-away", Organization: "acme", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	payload := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"remote-cm","namespace":"default"}}`
	if _, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: seed.ID, Kind: registry.KindApply, Payload: json.RawMessage(payload)}); err != nil {
		t.Fatal(err)
	}
	issued := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "oncall", "--role", "viewer")
	_, addr, _ := startServe(t, db)
	server := "http://" + addr

	home := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(issued.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("tether_adm_notarealtoken\n"), 0o600)
	if res := cliWithEnv(t, "", env, "login", server, "--token-file", bad); res.code == exitOK || !strings.Contains(res.stderr, server) {
		t.Fatalf("login with a bad token must fail naming the server:\n%s", res)
	}
	if _, err := os.Stat(filepath.Join(home, "tether", "config.yaml")); err == nil {
		t.Fatal("a refused login saved a context")
	}
	if res := cliWithEnv(t, "", env, "login", server); res.code != exitUsage || !strings.Contains(res.stderr, "--token-file") {
		t.Fatalf("login without a token:\n%s", res)
	}

	res := cliWithEnv(t, "", env, "login", server, "--token-file", tokenFile, "--name", "prod")
	if res.code != exitOK || !strings.Contains(res.stdout, "admin-token:oncall") || !strings.Contains(res.stdout, "role viewer") {
		t.Fatalf("login:\n%s", res)
	}
	path := filepath.Join(home, "tether", "config.yaml")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %o, want 600: it holds a token", path, info.Mode().Perm())
	}
	saved, _ := os.ReadFile(path)
	if !strings.Contains(string(saved), "current-context: prod") || !strings.Contains(string(saved), server) {
		t.Errorf("saved contexts:\n%s", saved)
	}
	if strings.Contains(res.stdout+res.stderr, issued.Token) {
		t.Error("login printed the token")
	}

	if res := cliWithEnv(t, "", env, "console", "--server", "http://127.0.0.1:1"); res.code != exitUsage || !strings.Contains(res.stderr, "admin token is required") {
		t.Errorf("console --server without a token for it:\n%s", res)
	}
	if res := cliWithEnv(t, "", env, "console"); res.code != exitUsage || !strings.Contains(res.stderr, "interactive terminal") {
		t.Errorf("console over the saved context, without a terminal:\n%s", res)
	}

	// In a terminal: the saved context's server, no database.
	cwd := t.TempDir()
	s := startTmux(t, 120, 40, fmt.Sprintf("cd %s && env -u TETHER_DB XDG_CONFIG_HOME=%s %s console --view clusters", cwd, home, binPath))
	screen := s.waitText("far-away")
	// The header names the role the token holds, which offers no write.
	if !strings.Contains(screen, "VIEWER") {
		t.Errorf("a viewer's console must say it holds the viewer role:\n%s", s.describe(screen))
	}
	s.keys("3")
	s.waitText("ConfigMap/default/remo")
	if _, err := os.Stat(filepath.Join(cwd, "tether.db")); err == nil {
		t.Error("the remote console created a local database")
	}
}

// The admin commands run over the admin API with --server, acting as the
// token (TestCLIRemoteMatchesLocal compares their output with the local
// one); the commands that work on the database itself refuse --server.
func TestCLIOverServer(t *testing.T) {
	db := newDB(t)
	reg := openRegistry(t, db)
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "seed"})
	if _, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "far-away", Organization: "acme", AllowedNamespaces: []string{"default"}}, 0); err != nil {
		t.Fatal(err)
	}
	issued := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "ops", "--role", "operator")
	_, addr, _ := startServe(t, db)
	home := t.TempDir()
	tokenFile := filepath.Join(home, "token")
	os.WriteFile(tokenFile, []byte(issued.Token), 0o600)
	env := []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}
	remote := func(args ...string) result {
		return cliWithEnv(t, "", env, append(args, "--server", "http://"+addr, "--token-file", tokenFile)...)
	}

	res := remote("job", "submit", "--cluster", "far-away", "--kind", "apply", "-o", "json",
		"--payload", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"over-http","namespace":"default"}}`)
	var sub struct {
		ID      string `json:"id"`
		State   string `json:"state"`
		Created bool   `json:"created"`
	}
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &sub) != nil || sub.ID == "" || sub.State != "queued" {
		t.Fatalf("job submit over --server:\n%s", res)
	}
	if res := remote("job", "submit", "--cluster", "far-away", "--kind", "apply",
		"--payload", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}`); res.code != exitError || !strings.Contains(res.stderr, "kube-system") {
		t.Errorf("a submission the allowlist refuses:\n%s", res)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "list"}, "ConfigMap/default/over-http"},
		{[]string{"job", "get", sub.ID}, "over-http"},
		{[]string{"cluster", "list"}, "far-away"},
		{[]string{"cluster", "get", "far-away"}, "far-away"},
		{[]string{"job", "cancel", sub.ID, "--reason", "not needed"}, "Canceled job"},
		{[]string{"audit", "--action", "job."}, "admin-token:ops"},
	} {
		res := remote(tc.args...)
		if res.code != exitOK || !strings.Contains(res.stdout, tc.want) {
			t.Errorf("tether %s over --server: want %q in the output\n%s", strings.Join(tc.args, " "), tc.want, res)
		}
	}
	if j, err := reg.GetJob(admin, sub.ID); err != nil || j.State != registry.JobCanceled {
		t.Errorf("the job in the database after job cancel over --server: %+v %v", j, err)
	}
	if res := remote("job", "delete", sub.ID, "--reason", "tidy"); res.code != exitOK || !strings.Contains(res.stdout, "Deleted canceled job "+sub.ID) {
		t.Errorf("job delete over --server:\n%s", res)
	}
	if _, err := reg.GetJob(admin, sub.ID); registry.ErrorCode(err) != registry.CodeNotFound {
		t.Errorf("the job after job delete over --server: %v", err)
	}
	if res := remote("job", "get", "j-nosuchjob"); res.code != exitError || !strings.Contains(res.stderr, "j-nosuchjob") {
		t.Errorf("job get of a missing job:\n%s", res)
	}
	if res := remote("backup", "--to", filepath.Join(home, "copy.db")); res.code != exitUsage || !strings.Contains(res.stderr, "does not run over --server: it copies the database file") {
		t.Errorf("a command that needs the database, with --server:\n%s", res)
	}
	// Completion offers the names the server has (no database here).
	if res := cliWithEnv(t, "", env, "__complete", "--server", "http://"+addr, "--token-file", tokenFile, "cluster", "get", "far"); res.code != exitOK || !strings.Contains(res.stdout, "far-away\n") {
		t.Errorf("completing a cluster name over --server:\n%s", res)
	}
	if res := cliWithEnv(t, "", append(env, "TETHER_SERVER=http://"+addr, "TETHER_TOKEN_FILE="+tokenFile), "__complete", "job", "submit", "--cluster", ""); res.code != exitOK || !strings.Contains(res.stdout, "far-away\n") {
		t.Errorf("completing a cluster name over $TETHER_SERVER:\n%s", res)
	}
	if res := cliWithEnv(t, "", env, "job", "list", "--server", "http://"+addr); res.code != exitUsage || !strings.Contains(res.stderr, "admin token is required") {
		t.Errorf("--server without a token:\n%s", res)
	}
}

// TestSavedContextErrorsSayWhereTheyWent: after tether login, an admin
// command run without --db goes to the saved context's server, even from a
// directory holding a tether.db. When that server cannot be reached, or
// refuses the token, the error says the command ran over the context and how
// to reach a database instead; login itself says every admin command now
// uses it, and refuses a wrong token saying what to do.
func TestSavedContextErrorsSayWhereTheyWent(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	issued := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "alice", "--role", "operator")
	_, addr, _ := startServe(t, db)
	home := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(issued.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A token that is not one says what to do about it.
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("tether_adm_01m8m46q80eg2sq7yhbns06jde_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantError(t, cliWithEnv(t, "", env, "login", "http://"+addr, "--token-file", bad), exitError,
		"http://"+addr, "admin token unknown, expired or revoked", "tether admin-token create")
	res := cliWithEnv(t, "", env, "login", "http://"+addr, "--token-file", tokenFile, "--name", "lab")
	if res.code != exitOK || !strings.Contains(res.stdout, "every admin command now run over it, unless --db (or $TETHER_DB) names a database") {
		t.Fatalf("login must say that every admin command now runs over the context:\n%s", res)
	}
	const hint = `this ran over the context "lab" that tether login saved, as every admin command does unless --db or $TETHER_DB names a database`
	// Forbidden: an operator may not create a cluster.
	wantError(t, cliWithEnv(t, "", env, "cluster", "create", "--name", "x"), exitError, "operator role", hint)
	// With --db the same command works on the database, and says nothing of the context.
	if res := cliWithEnv(t, db, env, "cluster", "create", "--name", "x"); res.code != exitOK || strings.Contains(res.stdout+res.stderr, "context") {
		t.Errorf("cluster create --db with a saved context:\n%s", res)
	}
	// A refusal that has nothing to do with where the command went carries no hint.
	if res := cliWithEnv(t, "", env, "job", "get", "j-nope"); res.code != exitError || strings.Contains(res.stderr, "context") {
		t.Errorf("job get of an unknown job over the context: got\n%s\nwant exit 1 without the hint", res)
	}

	// Unreachable: the saved server is gone.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	config := fmt.Sprintf("current-context: lab\ncontexts:\n    - name: lab\n      server: http://%s\n      token: %s\n", gone, issued.Token)
	if err := os.WriteFile(filepath.Join(home, "tether", "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	wantError(t, cliWithEnv(t, "", env, "cluster", "list"), exitError, "http://"+gone, "cannot reach", "connection refused",
		"check the server's address, and that tether serve is running there", hint)
	// Over --server, the same, without the context's hint.
	res = cliWithEnv(t, "", env, "cluster", "list", "--server", "http://"+gone, "--token-file", tokenFile)
	wantError(t, res, exitError, "check the server's address, and that tether serve is running there")
	if strings.Contains(res.stderr, "context") || strings.Contains(res.stderr, "Get \"") {
		t.Errorf("got %q over --server, want the network's words without the request or the context", res.stderr)
	}
}
