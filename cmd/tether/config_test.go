package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// testCommand is a command with a flag of each shape, as cobra has parsed
// args.
func testCommand(t *testing.T, args ...string) *cobra.Command {
	t.Helper()
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	f := cmd.Flags()
	f.String("listen", "127.0.0.1:7070", "")
	f.Int("burst", 10, "")
	f.Bool("verbose", false, "")
	f.StringSlice("trusted-proxies", nil, "")
	f.String("tls-client-ca", "", "")
	f.String(configFlag, "", "")
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"db": "TETHER_DB", "tls-client-ca": "TETHER_TLS_CLIENT_CA", "key-file": "TETHER_KEY_FILE"} {
		if got := envName(flag); got != want {
			t.Errorf("envName(%q) = %q, want %q", flag, got, want)
		}
	}
}

func TestApplyEnvironment(t *testing.T) {
	env := map[string]string{"TETHER_LISTEN": "0.0.0.0:1", "TETHER_BURST": "7", "TETHER_TRUSTED_PROXIES": "10.0.0.0/8,fd00::/8", "TETHER_TLS_CLIENT_CA": "", "TETHER_HELP": "true"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cmd := testCommand(t, "--burst", "3")
	if err := applyEnvironment(cmd, lookup); err != nil {
		t.Fatal(err)
	}
	f := cmd.Flags()
	if v, _ := f.GetString("listen"); v != "0.0.0.0:1" || !f.Changed("listen") {
		t.Errorf("listen = %q (changed %v), want the environment's, counted as given", v, f.Changed("listen"))
	}
	if v, _ := f.GetInt("burst"); v != 3 {
		t.Errorf("burst = %d, want the command line's 3 over the environment's 7", v)
	}
	if v, _ := f.GetStringSlice("trusted-proxies"); len(v) != 2 {
		t.Errorf("trusted-proxies = %q, want two from the comma-separated variable", v)
	}
	if f.Changed("tls-client-ca") {
		t.Error("an empty variable set the flag")
	}
	env = map[string]string{"TETHER_BURST": "lots"}
	err := applyEnvironment(testCommand(t), lookup)
	if err == nil || !strings.Contains(err.Error(), "$TETHER_BURST (for --burst)") {
		t.Errorf("got %v, want an error naming the variable and the flag", err)
	}
}

func TestApplyConfig(t *testing.T) {
	const good = `# tether serve settings
listen: 0.0.0.0:9000
burst: 20
verbose: true
trusted-proxies:
  - 10.0.0.0/8
  - 192.0.2.7
tls-client-ca: ~
`
	cmd := testCommand(t, "--burst", "5")
	if err := applyConfig(cmd.Flags(), "serve.yaml", []byte(good)); err != nil {
		t.Fatal(err)
	}
	f := cmd.Flags()
	listen, _ := f.GetString("listen")
	burst, _ := f.GetInt("burst")
	verbose, _ := f.GetBool("verbose")
	proxies, _ := f.GetStringSlice("trusted-proxies")
	if listen != "0.0.0.0:9000" || burst != 5 || !verbose || strings.Join(proxies, " ") != "10.0.0.0/8 192.0.2.7" {
		t.Errorf("got listen %q burst %d verbose %v proxies %q; want the file's, except burst from the command line", listen, burst, verbose, proxies)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "listen: x\nlisten-on: y\n", `serve.yaml line 2: key "listen-on" is not a setting`},
		{"bad value", "listen: x\n\nburst: lots\n", `serve.yaml line 3: key "burst": invalid argument "lots"`},
		{"list for a single value", "listen:\n  - a\n  - b\n", `serve.yaml line 2: key "listen" takes one value, not a list`},
		{"mapping", "listen: {host: a}\n", `serve.yaml line 1: key "listen" takes a value or a list, not a mapping`},
		{"twice", "burst: 1\nburst: 2\n", `line 2: key "burst" is set twice (first on line 1)`},
		{"not a mapping", "- listen\n", "serve.yaml line 1: want a mapping"},
		{"not YAML", "listen: [a\n", "serve.yaml: line"},
		{"the file itself", "config: other.yaml\n", `key "config" is not a setting`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := applyConfig(testCommand(t).Flags(), "serve.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q in it", err, tc.want)
			}
		})
	}
	if err := applyConfig(testCommand(t).Flags(), "empty.yaml", []byte("# nothing yet\n")); err != nil {
		t.Errorf("an empty file: %v", err)
	}
}

// The real binary: the command line beats the environment, which beats the
// --config file, which beats the default; a bad file is a usage error naming
// its line and key.
func TestServeConfigPrecedence(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nlog-format: json\nlog-level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file alone: JSON logs.
	p, _, line := startServeEnv(t, db, nil, "--config", cfg)
	if !strings.HasPrefix(line, "{") {
		t.Errorf("got start line %q, want JSON from the file's log-format", line)
	}
	p.stop(t)
	// The environment over the file: text.
	p, _, line = startServeEnv(t, db, []string{"TETHER_LOG_FORMAT=text", "TETHER_CONFIG=" + cfg})
	if strings.HasPrefix(line, "{") {
		t.Errorf("got start line %q, want text from $TETHER_LOG_FORMAT over the file", line)
	}
	p.stop(t)
	// The command line over the environment: JSON again.
	p, _, line = startServeEnv(t, db, []string{"TETHER_LOG_FORMAT=text"}, "--config", cfg, "--log-format", "json")
	if !strings.HasPrefix(line, "{") {
		t.Errorf("got start line %q, want JSON from --log-format over the environment", line)
	}
	p.stop(t)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("listen: 127.0.0.1:0\nrate: fast\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantError(t, cli(t, db, "serve", "--config", bad), exitUsage, "line 2", `key "rate"`)
	wantError(t, cli(t, db, "serve", "--config", filepath.Join(t.TempDir(), "missing.yaml")), exitUsage, "cannot read the config file")
	wantError(t, cli(t, db, "serve", "--trusted-proxies", "10.0.0.0/33"), exitUsage, "--trusted-proxies")

	res := ok(t, db, "serve", "--help")
	for _, want := range []string{"TETHER_<FLAG>", "the command line wins over the\nenvironment, the environment over the file", "--config", "--trusted-proxies", "--shutdown-delay"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("serve --help does not say %q", want)
		}
	}
}

// Any command's flags come from the environment: -o from TETHER_OUTPUT, --db
// from TETHER_DB.
func TestEveryFlagFromEnvironment(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "envy", "--namespaces", "apps")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, "/nonexistent/overridden.db", "cluster", "list")
	cmd.Args = []string{binPath, "cluster", "list"} // no --db: it comes from the environment
	cmd.Env = append(cmd.Env, "TETHER_DB="+db, "TETHER_OUTPUT=json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tether cluster list: %v", err)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(out)), "[") || !strings.Contains(string(out), `"envy"`) {
		t.Errorf("got %q, want the JSON list of the database in $TETHER_DB", out)
	}
	cmd = command(ctx, db, "cluster", "list")
	cmd.Env = append(cmd.Env, "TETHER_OUTPUT=xml")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(out), "xml") || !strings.Contains(string(out), "$TETHER_OUTPUT") {
		t.Errorf("TETHER_OUTPUT=xml: got exit %d %q, want a usage error naming the variable", cmd.ProcessState.ExitCode(), out)
	}
}

// A value the command refuses only once every flag is known (serve's
// --log-format, --retain-jobs-state, --tls-cert without --tls-key) is
// reported with where it came from when that was not the command line: the
// variable, or the config file and its line.
func TestRefusedValueNamesItsSource(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	run := func(env []string, args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := command(ctx, db, args...)
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	}
	wantError(t, run([]string{"TETHER_LOG_FORMAT=JSON"}, "serve"), exitUsage, `--log-format "JSON"`, "--log-format is from $TETHER_LOG_FORMAT")
	wantError(t, run([]string{"TETHER_TLS_CERT=cert.pem"}, "serve"), exitUsage, "--tls-cert and --tls-key go together", "--tls-cert is from $TETHER_TLS_CERT")
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nretain-jobs-state:\n  - failed=soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantError(t, run(nil, "serve", "--config", cfg), exitUsage, `"failed=soon"`, "--retain-jobs-state is from config file "+cfg+" line 3")
	// Typed on the command line: nothing to add.
	res := run(nil, "serve", "--log-format", "JSON")
	wantError(t, res, exitUsage, `--log-format "JSON"`)
	if strings.Contains(res.stderr, " is from ") {
		t.Errorf("a flag typed on the command line is said to come from elsewhere: %s", res.stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a refused setting created the database")
	}
}

func TestNamesFlag(t *testing.T) {
	for _, tc := range []struct {
		msg, flag string
		want      bool
	}{
		{"--tls-key needs --tls-cert", "tls-key", true},
		{"--tls-key-file is wrong", "tls-key", false},
		{"--tls-key-file and --tls-key", "tls-key", true},
		{"bad --rate.", "rate", true},
		{"--diag-listen: bad", "listen", false},
	} {
		if got := namesFlag(tc.msg, tc.flag); got != tc.want {
			t.Errorf("namesFlag(%q, %q) = %v, want %v", tc.msg, tc.flag, got, tc.want)
		}
	}
}

// A flag that only means something next to another is refused when typed
// alone, but the same value from the environment (TETHER_LISTEN exported
// for serve, TETHER_TIMEOUT for the --wait runs) is simply not used: a plain
// console or job submit on that host must still work.
func TestEnvironmentValueTheCommandDoesNotNeed(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "envy", "--namespaces", "apps")
	run := func(env []string, args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := command(ctx, db, args...)
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	}
	// Without a terminal the console stops at that, after its usage checks.
	for _, env := range []string{"TETHER_LISTEN=127.0.0.1:0", "TETHER_TOKEN_FILE=/nonexistent"} {
		res := run([]string{env}, "console")
		if !strings.Contains(res.stderr, "needs an interactive terminal") || strings.Contains(res.stderr, "needs --s") {
			t.Errorf("%s tether console: got %q, want it past the usage checks to the terminal check", env, res.stderr)
		}
	}
	res := run([]string{"TETHER_TIMEOUT=1m"}, "job", "submit", "--cluster", "envy", "--kind", "apply", "--payload", configMap("apps", "a"))
	if res.code != 0 {
		t.Errorf("TETHER_TIMEOUT=1m tether job submit (no --wait): got exit %d %q, want the job submitted", res.code, res.stderr)
	}
	// Typed on the command line, they are still usage errors.
	wantError(t, run(nil, "console", "--listen", "127.0.0.1:0"), exitUsage, "--listen needs --serve")
	wantError(t, run(nil, "console", "--token-file", "/nonexistent"), exitUsage, "--token-file needs --server")
	wantError(t, run([]string{"TETHER_TIMEOUT=1m"}, "job", "submit", "--cluster", "envy", "--kind", "apply", "--payload", "{}", "--timeout", "2m"), exitUsage, "--timeout applies only with --wait")
}
