package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"

	_ "modernc.org/sqlite"
)

// heldJob is a job of cluster prod that its agent a claimed, for the agent
// to report on.
func heldJob(t *testing.T) (db string, reg *registry.Registry, a *registry.Agent, job submittedJob, claim *registry.Claim) {
	t.Helper()
	db = newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	job = submit(t, db, "prod", "apply", configMap("apps", "x"))
	reg = openRegistry(t, db)
	a, _ = registerAgent(t, reg, c.RegistrationToken, registry.CapabilityLease)
	claim, err := reg.AckJob(context.Background(), a, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	return db, reg, a, job, claim
}

// TestAgentTextIsEscaped: what an agent wrote reaches the admin's terminal
// as visible text, never as control codes or bidi overrides, in job list,
// job get and events.
func TestAgentTextIsEscaped(t *testing.T) {
	t.Parallel()
	db, reg, a, job, claim := heldJob(t)
	ctx := context.Background()
	hostile := "red\x1b[31mALERT\x1b[0m \u202eevil\u202c\r\nnext"
	if err := reg.ReportStatus(ctx, a, job.ID, claim.ClaimID, registry.StatusReport{Phase: "Applying", Message: hostile}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.ReportResult(ctx, a, job.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: hostile,
		Body: []byte(`{"outcome":"failed","error":"\u202eevil"}`)}); err != nil {
		t.Fatal(err)
	}
	appendEvent(t, reg, a, registry.Event{Kind: "Audit", Message: hostile})

	for _, args := range [][]string{{"job", "list", "--state", "failed"}, {"job", "get", job.ID}, {"events"}} {
		out := ok(t, db, args...).stdout
		for _, bad := range []string{"\x1b", "\u202e", "\r"} {
			if strings.Contains(out, bad) {
				t.Fatalf("tether %s prints %q raw:\n%s", strings.Join(args, " "), bad, out)
			}
		}
		if !strings.Contains(out, `\x1b[31mALERT`) && !strings.Contains(out, `\u202e`) {
			t.Fatalf("tether %s hides the text instead of showing it escaped:\n%s", strings.Join(args, " "), out)
		}
	}
}

func TestJobListStuck(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "apps", "--lease-seconds", "0")
	quiet := submit(t, db, "prod", "apply", configMap("apps", "quiet"))
	submit(t, db, "prod", "apply", configMap("apps", "waiting"))
	reg := openRegistry(t, db)
	a, _ := registerAgent(t, reg, c.RegistrationToken)
	if _, err := reg.AckJob(context.Background(), a, quiet.ID); err != nil {
		t.Fatal(err)
	}
	// Not stuck yet: claimed a moment ago.
	if got := okJSON[[]registry.Job](t, db, "job", "list", "--stuck"); len(got) != 0 {
		t.Fatalf("stuck right after its claim: %+v", got)
	}
	// Stuck once silent for longer than registry.NoLeaseStuckAfter: make the
	// claim old by moving the job's last activity back.
	exec := func(q string) {
		st := openRawSQLite(t, db)
		if _, err := st.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	exec("UPDATE jobs SET last_activity_at = last_activity_at - 3600000, claimed_at = claimed_at - 3600000 WHERE id = '" + quiet.ID + "'")
	got := okJSON[[]registry.Job](t, db, "job", "list", "--stuck")
	if len(got) != 1 || got[0].ID != quiet.ID {
		t.Fatalf("job list --stuck = %+v, want the silent job only", got)
	}

	// The rest of the console's stuck tab: a job whose lease ran out on its
	// last attempt (failed lease_expired, waiting for a requeue) and a job
	// queued on a disabled cluster. The CLI, over the database and over the
	// admin API, lists the same jobs as the console.
	spent := submit(t, db, "prod", "apply", configMap("apps", "spent"))
	exec("UPDATE jobs SET state = 'failed', error = 'lease_expired', finished_at = updated_at WHERE id = '" + spent.ID + "'")
	createCluster(t, db, "dark", "--namespaces", "apps")
	stranded := submit(t, db, "dark", "apply", configMap("apps", "stranded"))
	ok(t, db, "cluster", "disable", "dark")
	ids := func(jobs []registry.Job) []string {
		out := []string{}
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		slices.Sort(out)
		return out
	}
	want := []string{quiet.ID, spent.ID, stranded.ID}
	slices.Sort(want)
	if got := ids(okJSON[[]registry.Job](t, db, "job", "list", "--stuck")); !slices.Equal(got, want) {
		t.Fatalf("job list --stuck = %v, want %v (silent, attempts exhausted, queued on a disabled cluster)", got, want)
	}
	if got := ids(okJSON[[]registry.Job](t, db, "job", "list", "--stuck", "--state", "queued")); !slices.Equal(got, []string{stranded.ID}) {
		t.Fatalf("job list --stuck --state queued = %v, want only %s", got, stranded.ID)
	}
	// A search word may be in the reason, as in the console's WHY column.
	if got := ids(okJSON[[]registry.Job](t, db, "job", "list", "--stuck", "--search", "silent")); !slices.Equal(got, []string{quiet.ID}) {
		t.Fatalf("job list --stuck --search silent = %v, want only %s (no lease, silent)", got, quiet.ID)
	}
	// The table says why each is stuck, as the console's WHY column: a
	// job queued on a disabled cluster had a NOTE of "-".
	table := ok(t, db, "job", "list", "--stuck").stdout
	for id, why := range map[string]string{quiet.ID: "stuck: no lease, silent", spent.ID: "stuck: attempts exhausted", stranded.ID: "stuck: cluster disabled"} {
		var row string
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, id) {
				row = l
			}
		}
		if !strings.Contains(row, why) {
			t.Errorf("job list --stuck: %s's row does not say %q:\n%s", id, why, table)
		}
	}

	root := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "root", "--role", "viewer").Token
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(root), 0o600); err != nil {
		t.Fatal(err)
	}
	_, addr, _ := startServe(t, db)
	remote := func(args ...string) []string {
		res := cli(t, "", append(args, "-o", "json", "--server", "http://"+addr, "--token-file", tokenFile)...)
		if res.code != exitOK {
			t.Fatalf("tether %s over --server: %s", strings.Join(args, " "), res)
		}
		var jobs []registry.Job
		if err := json.Unmarshal([]byte(res.stdout), &jobs); err != nil {
			t.Fatalf("tether %s over --server printed no job list: %v\n%s", strings.Join(args, " "), err, res)
		}
		return ids(jobs)
	}
	if got := remote("job", "list", "--stuck"); !slices.Equal(got, want) {
		t.Fatalf("job list --stuck over --server = %v, want %v", got, want)
	}
	if got := remote("job", "list", "--stuck", "--search", "disabled"); !slices.Equal(got, []string{stranded.ID}) {
		t.Fatalf("job list --stuck --search disabled over --server = %v, want only %s", got, stranded.ID)
	}
	if got := remote("job", "list", "--stuck", "--state", "queued"); !slices.Equal(got, []string{stranded.ID}) {
		t.Fatalf("job list --stuck --state queued over --server = %v, want only %s", got, stranded.ID)
	}
}

// openRawSQLite opens the database file with the SQL driver itself, for a
// test to put it in a state no command makes (an old claim).
func openRawSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	d, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestAgentURL: the register command the console shows names an address
// agents can reach, never a wildcard.
func TestAgentURL(t *testing.T) {
	host, _ := os.Hostname()
	for in, want := range map[string]string{
		"127.0.0.1:7070": "http://127.0.0.1:7070",
		"0.0.0.0:7070":   "http://" + net.JoinHostPort(host, "7070"),
		"[::]:7070":      "http://" + net.JoinHostPort(host, "7070"),
		":7070":          "http://" + net.JoinHostPort(host, "7070"),
	} {
		if got := agentURL(in); got != want {
			t.Errorf("agentURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJobRetry(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod", "--namespaces", "apps")
	job := submit(t, db, "prod", "apply", configMap("apps", "once"))
	ok(t, db, "job", "cancel", job.ID)
	retried := okJSON[submittedJob](t, db, "job", "retry", job.ID, "--reason", "wrong cancel")
	if retried.ID == job.ID || retried.RetryOf != job.ID || retried.State != registry.JobQueued {
		t.Fatalf("job retry -o json = %+v", retried)
	}
	if out := ok(t, db, "job", "get", retried.ID).stdout; !strings.Contains(out, "retrying "+job.ID) || !wantRow(out, "Retry of:", job.ID) {
		t.Fatalf("job get of the retry does not say what it retries:\n%s", out)
	}
	wantError(t, cli(t, db, "job", "retry", retried.ID), exitError, "only failed")

	// The original names its retry, so on-call does not retry it twice:
	// in the table and -o json, over the database and over --server.
	if out := ok(t, db, "job", "get", job.ID).stdout; !wantRow(out, "Retried as:", retried.ID) {
		t.Fatalf("job get of the original does not name its retry:\n%s", out)
	}
	if got := okJSON[struct {
		RetriedBy []string `json:"retriedBy"`
	}](t, db, "job", "get", job.ID); !slices.Equal(got.RetriedBy, []string{retried.ID}) {
		t.Fatalf("job get -o json retriedBy = %v, want [%s]", got.RetriedBy, retried.ID)
	}
	root := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "root", "--role", "admin").Token
	_, addr, _ := startServe(t, db)
	home := t.TempDir()
	tokenFile := filepath.Join(home, "token")
	if err := os.WriteFile(tokenFile, []byte(root), 0o600); err != nil {
		t.Fatal(err)
	}
	res := cliWithEnv(t, "", []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}, "job", "get", job.ID, "--server", "http://"+addr, "--token-file", tokenFile)
	if res.code != 0 || !wantRow(res.stdout, "Retried as:", retried.ID) {
		t.Fatalf("job get over --server does not name the retry: %s", res)
	}
}

// wantRow reports whether out has a line of label and value.
func wantRow(out, label, value string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(line, label) && f[len(f)-1] == value {
			return true
		}
	}
	return false
}

// TestJobDelete: the real binary deletes a finished job, refuses an open
// one with the advice to cancel it first, and the audit trail keeps who and
// why.
func TestJobDelete(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod", "--namespaces", "apps")
	job := submit(t, db, "prod", "apply", configMap("apps", "old"))
	wantError(t, cli(t, db, "job", "delete", job.ID), exitError, "queued", "cancel it first")
	ok(t, db, "job", "cancel", job.ID)
	if out := ok(t, db, "job", "delete", job.ID, "--reason", "test run").stdout; !strings.Contains(out, "Deleted canceled job "+job.ID) {
		t.Fatalf("job delete said:\n%s", out)
	}
	wantError(t, cli(t, db, "job", "get", job.ID), exitError, "no job has the id")
	wantError(t, cli(t, db, "job", "delete", job.ID), exitError, "no job has the id")
	entries, err := openRegistry(t, db).ListAudit(context.Background(), registry.AuditListParams{Action: registry.AuditJobDelete})
	if err != nil || len(entries) != 1 || entries[0].TargetID != job.ID || !strings.HasSuffix(entries[0].Reason, ": test run") ||
		!strings.HasPrefix(entries[0].Actor, registry.ActorAdmin+":") {
		t.Fatalf("audit %+v (%v)", entries, err)
	}
}

func TestClusterPauseResume(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	reg := openRegistry(t, db)
	a, bearer := registerAgent(t, reg, c.RegistrationToken)
	out := ok(t, db, "cluster", "pause", "prod", "--reason", "change freeze").stdout
	if !strings.Contains(out, "Paused the queue") {
		t.Fatalf("pause: %s", out)
	}
	// This process (a serve) reads the cluster through its record cache,
	// which learns of another process's pause from the change feed, within
	// milliseconds of the commit but not by the time the CLI has exited
	// (registry/cache.go). Wait for that, well within the cache's 10 s TTL,
	// so that it is the feed that brought the pause.
	for deadline := time.Now().Add(5 * time.Second); ; {
		seen, err := reg.Authenticate(context.Background(), bearer, registry.AuthAny)
		if err != nil {
			t.Fatal(err)
		}
		if seen.Cluster.Paused() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the change feed did not bring the CLI's pause to this process within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	submit(t, db, "prod", "apply", configMap("apps", "waits"))
	if jobs, err := reg.PollJobs(context.Background(), a, a.Cluster.ID, 10); err != nil || len(jobs) != 0 {
		t.Fatalf("a paused queue handed out %d jobs (%v)", len(jobs), err)
	}
	if got := ok(t, db, "cluster", "get", "prod").stdout; !strings.Contains(got, "queue paused") || !strings.Contains(got, "change freeze") {
		t.Fatalf("cluster get does not show the pause:\n%s", got)
	}
	if list := ok(t, db, "cluster", "list").stdout; !strings.Contains(list, "queue paused") {
		t.Fatalf("cluster list does not show the pause:\n%s", list)
	}
	wantError(t, cli(t, db, "cluster", "pause", "prod"), exitError, "already paused")
	ok(t, db, "cluster", "resume", "prod")
	// This process learns of the resume from the change feed within
	// milliseconds.
	deadline := time.Now().Add(waitTimeout)
	for {
		jobs, _ := reg.PollJobs(context.Background(), a, a.Cluster.ID, 10)
		if len(jobs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after resume: %d jobs", len(jobs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestErrorTextIsEscaped: an error message that repeats text from the
// input (here a payload's member name, which a producer may have copied
// from anywhere) reaches the terminal as visible text, never as control
// codes: an OSC sequence could retitle the window or worse.
func TestErrorTextIsEscaped(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod", "--namespaces", "apps")
	payload := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"apps"},"data":{"\u001b]0;PWNED\u0007\u001b[31mRED\ud800":1}}`
	res := cli(t, db, "job", "submit", "--cluster", "prod", "--kind", "apply", "--payload", payload)
	if res.code == exitOK {
		t.Fatalf("a payload with a lone surrogate was accepted\n%s", res)
	}
	for _, bad := range []string{"\x1b", "\x07"} {
		if strings.Contains(res.stderr, bad) {
			t.Fatalf("the error prints %q raw:\n%s", bad, res.stderr)
		}
	}
	if !strings.Contains(res.stderr, `\x1b]0;PWNED`) {
		t.Fatalf("the error hides the text instead of showing it escaped:\n%s", res.stderr)
	}
}

// TestAgentTextInRawOutputs: an agent's text can neither break -o yaml
// (DEL and C1 controls, which JSON leaves raw and YAML readers refuse,
// made job get, job list and events -o yaml fail whole) nor reach a
// terminal raw through --jq or -o jsonpath, which print values exactly only
// into a pipe or a file, as jq -r and kubectl do.
func TestAgentTextInRawOutputs(t *testing.T) {
	t.Parallel()
	db, reg, a, job, claim := heldJob(t)
	ctx := context.Background()
	hostile := "red\x1b[31mALERT\x1b]0;title\x07 \u009b31m \u202eevil\u202c del\x7f\r\nnext"
	if _, err := reg.ReportResult(ctx, a, job.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: hostile}); err != nil {
		t.Fatal(err)
	}
	appendEvent(t, reg, a, registry.Event{Kind: "Audit", Message: hostile})

	for _, args := range [][]string{{"job", "get", job.ID, "-o", "yaml"}, {"job", "list", "-o", "yaml"}, {"events", "-o", "yaml"}} {
		out := ok(t, db, args...).stdout
		if !strings.Contains(out, `del\x7F\r\nnext`) {
			t.Fatalf("tether %s does not show the agent's text:\n%s", strings.Join(args, " "), out)
		}
	}

	raw := [][]string{{"job", "get", job.ID, "--jq", ".error"}, {"job", "get", job.ID, "-o", "jsonpath={.error}"}}
	// Into a pipe: the value exactly.
	for _, args := range raw {
		if out := ok(t, db, args...).stdout; !strings.Contains(out, hostile) {
			t.Fatalf("tether %s into a pipe = %q, want the value as it is", strings.Join(args, " "), out)
		}
	}
	// Onto a terminal: escaped, line by line.
	for _, args := range raw {
		out := onTerminal(t, db, args...)
		for _, bad := range []string{"\x1b", "\u009b", "\u202e", "\x7f", "\r", "\x07"} {
			if strings.Contains(out, bad) {
				t.Fatalf("tether %s prints %q raw onto a terminal:\n%q", strings.Join(args, " "), bad, out)
			}
		}
		if !strings.Contains(out, `red\x1b[31mALERT`) || !strings.Contains(out, "\\r\nnext") {
			t.Fatalf("tether %s onto a terminal = %q, want the text escaped, its lines kept", strings.Join(args, " "), out)
		}
	}
}
