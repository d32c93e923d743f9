package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func TestJobSubmitPayloadSources(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "src", "--namespaces", "apps")

	file := filepath.Join(t.TempDir(), "cm.json")
	if err := os.WriteFile(file, []byte(configMap("apps", "from-file")), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := okJSON[submittedJob](t, db, "job", "submit", "--cluster", "src", "--kind", "apply", "-f", file)
	res := cliIn(t, db, configMap("apps", "from-stdin"), "job", "submit", "--cluster", "src", "--kind", "apply", "-f", "-", "-o", "json")
	if res.code != exitOK {
		t.Fatalf("got exit %d, want 0\n%s", res.code, res)
	}
	fromStdin := decode[submittedJob](t, res)
	fromFlag := submit(t, db, "src", "delete", `{"apiVersion":"v1","kind":"ConfigMap","name":"from-flag","namespace":"apps"}`)

	for _, c := range []struct {
		job  submittedJob
		name string
		kind registry.JobKind
	}{{fromFile, "from-file", registry.KindApply}, {fromStdin, "from-stdin", registry.KindApply}, {fromFlag, "from-flag", registry.KindDelete}} {
		if c.job.ID == "" || c.job.State != registry.JobQueued || !c.job.Created || c.job.Kind != c.kind || c.job.Target.Name != c.name {
			t.Errorf("got %+v, want a new queued %s job for %s", c.job, c.kind, c.name)
		}
	}

	out := ok(t, db, "job", "submit", "--cluster", "src", "--kind", "apply", "--payload", configMap("apps", "table")).stdout
	if !strings.Contains(out, "Submitted job j-") || !strings.Contains(out, "ConfigMap/apps/table") || !strings.Contains(out, "queued") {
		t.Errorf("got %q, want the job id, its target and its state", out)
	}
	// A source typed on the command line wins over the other one's value
	// from the environment; two typed sources are still refused.
	typedFile := filepath.Join(t.TempDir(), "typed.json")
	if err := os.WriteFile(typedFile, []byte(configMap("apps", "typed-file")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"TETHER_PAYLOAD=" + configMap("apps", "from-env"), []string{"-f", typedFile}, "typed-file"},
		{"TETHER_FILE=" + typedFile, []string{"--payload", configMap("apps", "typed-payload")}, "typed-payload"},
	} {
		res := cliWithEnv(t, db, []string{tc.env}, append([]string{"job", "submit", "--cluster", "src", "--kind", "apply", "-o", "json"}, tc.args...)...)
		if res.code != 0 {
			t.Fatalf("%s with %v: %s", tc.env, tc.args, res)
		}
		if j := decode[submittedJob](t, res); j.Target.Name != tc.want {
			t.Errorf("%s with %v submitted %s, want the typed source's %s", tc.env, tc.args, j.Target.Name, tc.want)
		}
	}
	wantError(t, cli(t, db, "job", "submit", "--cluster", "src", "--kind", "apply", "-f", typedFile, "--payload", configMap("apps", "x")), exitUsage, "exactly one of")

	// The target comes from the payload: a kind that holds an escape
	// sequence is shown escaped, not acted on by the terminal.
	out = ok(t, db, "job", "submit", "--cluster", "src", "--kind", "apply", "--payload",
		`{"apiVersion":"v1","kind":"Config\u001b[31mMap","metadata":{"name":"red","namespace":"apps"}}`).stdout
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `Config\x1b[31mMap/apps/red`) {
		t.Errorf("got %q, want the target's escape sequence shown as \\x1b", out)
	}
}

func TestJobSubmitRefusesBadInput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "strict", "--namespaces", "apps", "--catalog", "postgres", "--templates", "backup.velero")

	for _, tc := range []struct {
		name      string
		kind      string
		payload   string
		fragments []string
	}{
		{"malformed JSON", "apply", `{"apiVersion": "v1", "kind": `, []string{"payload is not valid JSON"}},
		{"not an object", "apply", `["a"]`, []string{"payload must be a JSON object"}},
		{"wrong field type", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":3}}`, []string{"metadata.name", "string"}},
		{"unknown intent", "intent", `{"intent":"launch-rockets"}`, []string{`intent "launch-rockets" is not one of`}},
		{"namespace outside the allowlist", "apply", configMap("kube-system", "x"), []string{`namespace "kube-system"`, "not in cluster strict's allowed namespaces"}},
		{"catalog entry not allowed", "apply", appInstance("apps", "db", "mysql"), []string{`catalog entry "mysql" is not in cluster strict's allowed catalog entries`}},
		{"catalog entry not allowed in an intent", "intent", `{"intent":"ensure-application-instance","applicationInstance":` + appInstance("apps", "db", "mysql") + `}`, []string{`catalog entry "mysql"`}},
		{"cluster-scoped object without *", "apply", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"new-ns"}}`, []string{"cluster-scoped object", "needs * in cluster strict's allowed namespaces"}},
		{"operation template not allowed", "intent", operation("apps", "Restore", "velero"), []string{`operation template "restore.velero" is not in cluster strict's allowed operation templates`}},
		{"delete without a name", "delete", `{"apiVersion":"v1","kind":"ConfigMap","namespace":"apps"}`, []string{"a delete payload needs apiVersion, kind and name"}},
		{"manifest without a name", "apply", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"apps"}}`, []string{"missing metadata.name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := cli(t, db, "job", "submit", "--cluster", "strict", "--kind", tc.kind, "--payload", tc.payload)
			wantError(t, res, exitError, tc.fragments...)
		})
	}
	wantError(t, cli(t, db, "job", "submit", "--cluster", "nope", "--kind", "apply", "--payload", configMap("apps", "x")), exitError, `no cluster has the id or name "nope"`)
	wantError(t, cli(t, db, "job", "submit", "--cluster", "strict", "--kind", "apply", "-f", filepath.Join(t.TempDir(), "missing.json")), exitError, "cannot read the payload file")
	wantError(t, cli(t, db, "job", "submit", "--cluster", "strict", "--kind", "apply", "--payload", configMap("apps", "x"), "--expires-in", "400d"), exitError, "expires-in")
	if jobs := okJSON[[]registry.Job](t, db, "job", "list"); len(jobs) != 0 {
		t.Errorf("got %d jobs, want none after refused submissions", len(jobs))
	}

	// What the allowlists admit is accepted.
	submit(t, db, "strict", "apply", appInstance("apps", "db", "postgres"))
	submit(t, db, "strict", "intent", operation("apps", "Backup", "velero"))
	createCluster(t, db, "open", "--namespaces", "*")
	submit(t, db, "open", "apply", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"new-ns"}}`)
}

func TestJobIdempotencyKey(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "idem", "--namespaces", "apps")
	first := submit(t, db, "idem", "apply", configMap("apps", "x"), "--idempotency-key", "deploy-42")
	again := submit(t, db, "idem", "apply", configMap("apps", "x"), "--idempotency-key", "deploy-42")
	if !first.Created || again.Created {
		t.Errorf("got created %v then %v, want true then false", first.Created, again.Created)
	}
	if again.ID != first.ID {
		t.Errorf("got job %s for the same key, want the existing %s", again.ID, first.ID)
	}
	out := ok(t, db, "job", "submit", "--cluster", "idem", "--kind", "apply", "--payload", configMap("apps", "x"), "--idempotency-key", "deploy-42").stdout
	if !strings.Contains(out, first.ID) || !strings.Contains(out, "no new job") {
		t.Errorf("got %q, want it to name the existing job and say no new one was made", out)
	}
	other := submit(t, db, "idem", "apply", configMap("apps", "x"), "--idempotency-key", "deploy-43")
	if other.ID == first.ID || !other.Created {
		t.Errorf("got %s (created %v) for another key, want a new job", other.ID, other.Created)
	}
	// Once the job ended, its key still answers it: a retry never queues
	// the job twice.
	ok(t, db, "job", "cancel", first.ID)
	if ended := submit(t, db, "idem", "apply", configMap("apps", "x"), "--idempotency-key", "deploy-42"); ended.Created || ended.ID != first.ID || ended.State != registry.JobCanceled {
		t.Errorf("after the job ended got %s (created %v, %s), want the canceled %s", ended.ID, ended.Created, ended.State, first.ID)
	}
	out = ok(t, db, "job", "submit", "--cluster", "idem", "--kind", "apply", "--payload", configMap("apps", "x"), "--idempotency-key", "deploy-42").stdout
	if !strings.Contains(out, first.ID) || !strings.Contains(out, "(canceled); no new job") {
		t.Errorf("got %q, want it to name the canceled job and say no new one was made", out)
	}
	// Another request with the key is refused, naming the key.
	wantError(t, cli(t, db, "job", "submit", "--cluster", "idem", "--kind", "apply", "--payload", configMap("apps", "y"), "--idempotency-key", "deploy-42"),
		exitError, `"deploy-42"`, first.ID, "another kind or payload")
	if jobs := okJSON[[]registry.Job](t, db, "job", "list"); len(jobs) != 2 {
		t.Errorf("got %d jobs, want 2", len(jobs))
	}
}

// TestJobIdempotencyKeyOverServe: over --server, a retry after the job ended
// answers it too; serve's --idempotency-retention (here from
// $TETHER_IDEMPOTENCY_RETENTION) of 0 keeps keys for open jobs only.
func TestJobIdempotencyKeyOverServe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		keep bool
	}{
		{"default", nil, true},
		{"open jobs only", []string{"TETHER_IDEMPOTENCY_RETENTION=0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newDB(t)
			createCluster(t, db, "idem", "--namespaces", "apps")
			token := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "producer", "--role", "operator").Token
			_, addr, _ := startServeEnv(t, db, tc.env, "--listen", "127.0.0.1:0")
			home := t.TempDir()
			tokenFile := filepath.Join(home, "token")
			if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
				t.Fatal(err)
			}
			remote := func(args ...string) result {
				return cliWithEnv(t, "", []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}, append(args, "--server", "http://"+addr, "--token-file", tokenFile)...)
			}
			submitRemote := func() submittedJob {
				t.Helper()
				res := remote("job", "submit", "--cluster", "idem", "--kind", "apply", "--payload", configMap("apps", "x"), "--idempotency-key", "deploy-42", "-o", "json")
				if res.code != exitOK {
					t.Fatalf("submit over --server: %s", res)
				}
				return decode[submittedJob](t, res)
			}
			first := submitRemote()
			if res := remote("job", "cancel", first.ID); res.code != exitOK {
				t.Fatalf("cancel: %s", res)
			}
			again := submitRemote()
			if tc.keep && (again.Created || again.ID != first.ID || again.State != registry.JobCanceled) {
				t.Errorf("after the job ended got %s (created %v, %s), want the canceled %s", again.ID, again.Created, again.State, first.ID)
			}
			if !tc.keep && (!again.Created || again.ID == first.ID) {
				t.Errorf("with keys for open jobs only, after the job ended got %s (created %v), want a new job", again.ID, again.Created)
			}
		})
	}
}

func TestJobListFilters(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "one", "--namespaces", "apps")
	createCluster(t, db, "two", "--namespaces", "apps")
	a := submit(t, db, "one", "apply", configMap("apps", "alpha"))
	b := submit(t, db, "one", "delete", `{"apiVersion":"v1","kind":"ConfigMap","name":"bravo","namespace":"apps"}`)
	c := submit(t, db, "two", "apply", configMap("apps", "charlie"))
	ok(t, db, "job", "cancel", c.ID)

	ids := func(args ...string) []string {
		t.Helper()
		var out []string
		for _, j := range okJSON[[]registry.Job](t, db, append([]string{"job", "list"}, args...)...) {
			out = append(out, j.ID)
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{c.ID, b.ID, a.ID}}, // newest first
		{[]string{"--cluster", "one"}, []string{b.ID, a.ID}},
		{[]string{"--cluster", c.ClusterID}, []string{c.ID}},
		{[]string{"--state", "canceled"}, []string{c.ID}},
		{[]string{"--state", "queued,canceled"}, []string{c.ID, b.ID, a.ID}},
		{[]string{"--kind", "delete"}, []string{b.ID}},
		{[]string{"--search", "alpha"}, []string{a.ID}},
		{[]string{"--limit", "1"}, []string{c.ID}},
		{[]string{"--state", "succeeded"}, nil},
	} {
		if got := ids(tc.args...); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("job list %v: got %v, want %v", tc.args, got, tc.want)
		}
	}
	if res := ok(t, db, "job", "list", "--state", "succeeded", "-o", "json"); strings.TrimSpace(res.stdout) != "[]" {
		t.Errorf("got %q for no jobs, want []", res.stdout)
	}
	table := ok(t, db, "job", "list").stdout
	for _, want := range []string{"STATE", "ConfigMap/apps/alpha", "one", "two", "canceled", "queued"} {
		if !strings.Contains(table, want) {
			t.Errorf("got job list without %q\n%s", want, table)
		}
	}
}

func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "life", "--namespaces", "apps", "--lease-seconds", "60", "--max-attempts", "4")
	reg := openRegistry(t, db)
	ctx := context.Background()
	agent, _ := registerAgent(t, reg, c.RegistrationToken, "lease")
	j := submit(t, db, "life", "apply", configMap("apps", "web"))

	// Nothing to requeue or extend while it is queued.
	wantError(t, cli(t, db, "job", "requeue", j.ID), exitError, "only in_progress jobs")
	wantError(t, cli(t, db, "job", "extend-lease", j.ID, "--by", "5m"), exitError, "no lease to extend")

	claim, err := reg.AckJob(ctx, agent, j.ID)
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	err = reg.ReportStatus(ctx, agent, j.ID, claim.ClaimID, registry.StatusReport{
		Phase: "Applying", Message: "rolling out",
		Conditions: []registry.Condition{{Type: "Progressing", Status: "True", Reason: "RollingOut", Message: "2 of 3 replicas"}},
	})
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	out := ok(t, db, "job", "get", j.ID).stdout
	for _, want := range []string{
		"in_progress (phase Applying)", "Attempt:", "1 of 4", "Claim:", claim.ClaimID, agent.Credential.ID,
		"Lease:", "60s, ends", "Conditions:", "Progressing", "RollingOut", "2 of 3 replicas",
		"Timeline:", "submitted", "claimed", "status", "rolling out", "Payload:", `"namespace": "apps"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("got job get without %q\n%s", want, out)
		}
	}

	// The admin gives the holder more time.
	extended := okJSON[registry.Job](t, db, "job", "extend-lease", j.ID, "--by", "10m")
	if !extended.LeaseExpiresAt.After(claim.LeaseExpiresAt.Add(9 * time.Minute)) {
		t.Errorf("got lease end %s, want about 10m after %s", extended.LeaseExpiresAt, claim.LeaseExpiresAt)
	}
	wantError(t, cli(t, db, "job", "extend-lease", j.ID, "--by", "48h"), exitError, "at most 24h")

	// Requeue: a new attempt, and the old claim is fenced off.
	requeued := okJSON[registry.Job](t, db, "job", "requeue", j.ID, "--reason", "agent stuck")
	if requeued.State != registry.JobQueued || requeued.Attempt != 2 || requeued.ClaimID != "" {
		t.Errorf("got %s attempt %d claim %q, want queued attempt 2 without a claim", requeued.State, requeued.Attempt, requeued.ClaimID)
	}
	_, err = reg.ReportResult(ctx, agent, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
	if registry.ErrorCode(err) != registry.CodeStaleClaim {
		t.Errorf("got %v from the fenced-off holder, want stale_claim", err)
	}

	// The second attempt succeeds, with a result document.
	claim2, err := reg.AckJob(ctx, agent, j.ID)
	if err != nil {
		t.Fatalf("ack again: %v", err)
	}
	body := json.RawMessage(`{"outcome":"succeeded","appliedResources":[{"kind":"ConfigMap","name":"web"}]}`)
	if _, err := reg.ReportResult(ctx, agent, j.ID, claim2.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded, Body: body}); err != nil {
		t.Fatalf("result: %v", err)
	}
	detail := okJSON[jobDetail](t, db, "job", "get", j.ID)
	if detail.State != registry.JobSucceeded || detail.Attempt != 2 || len(detail.Result) == 0 {
		t.Errorf("got %s attempt %d result %s, want succeeded on attempt 2 with its result", detail.State, detail.Attempt, detail.Result)
	}
	var types []string
	for _, h := range detail.History {
		types = append(types, string(h.Type))
	}
	if got, want := strings.Join(types, ","), "submitted,claimed,status,lease_extended,requeued,claimed,result"; got != want {
		t.Errorf("got timeline %s, want %s", got, want)
	}
	out = ok(t, db, "job", "get", j.ID).stdout
	for _, want := range []string{"succeeded", "2 of 4", "Result:", `"appliedResources"`, "requeued by an admin", "agent stuck"} {
		if !strings.Contains(out, want) {
			t.Errorf("got job get without %q\n%s", want, out)
		}
	}
	// A finished job holds no lease: nothing may tell its reader to go
	// and requeue it because its agent might be gone.
	if strings.Contains(out, "Lease:") || strings.Contains(out, "requeue it") {
		t.Errorf("got a lease line for a finished job, want none\n%s", out)
	}
	wantError(t, cli(t, db, "job", "cancel", j.ID), exitError, "already succeeded")
	wantError(t, cli(t, db, "job", "get", "j-nope"), exitError, `no job has the id "j-nope"`)
}

func TestJobCancel(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "cancel", "--namespaces", "apps")
	j := submit(t, db, "cancel", "apply", configMap("apps", "x"))
	out := ok(t, db, "job", "cancel", j.ID, "--reason", "wrong cluster").stdout
	if !strings.Contains(out, "Canceled job "+j.ID) {
		t.Errorf("got %q, want it to confirm the cancellation", out)
	}
	got := okJSON[jobDetail](t, db, "job", "get", j.ID)
	if got.State != registry.JobCanceled || got.FinishedAt.IsZero() {
		t.Errorf("got %s finished %s, want canceled with a finish time", got.State, got.FinishedAt)
	}
	if last := got.History[len(got.History)-1]; last.Type != registry.HistoryCanceled || !strings.Contains(last.Message, "wrong cluster") {
		t.Errorf("got last timeline entry %+v, want the cancellation with its reason", last)
	}
	wantError(t, cli(t, db, "job", "cancel", j.ID), exitError, "already canceled")
}

// submitWait starts job submit --wait in the background and returns it with
// the id of the job it submitted, read from the registry once it exists.
func submitWait(t *testing.T, db string, reg *registry.Registry, cluster, name string, flags ...string) (*proc, string) {
	t.Helper()
	args := append([]string{"job", "submit", "--cluster", cluster, "--kind", "apply", "--payload", configMap("apps", name), "--wait"}, flags...)
	p := start(t, db, args...)
	var id string
	eventually(t, "the job of "+name+" to be submitted", func() bool {
		jobs, err := reg.ListJobs(context.Background(), registry.JobListParams{Search: name})
		if err != nil || len(jobs) == 0 {
			return false
		}
		id = jobs[0].ID
		return true
	})
	return p, id
}

func TestJobSubmitWait(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "waiter", "--namespaces", "apps")
	reg := openRegistry(t, db)
	ctx := context.Background()
	agent, _ := registerAgent(t, reg, c.RegistrationToken)

	t.Run("succeeded", func(t *testing.T) {
		p, id := submitWait(t, db, reg, "waiter", "ok-job", "-o", "json")
		claim, err := reg.AckJob(ctx, agent, id)
		if err != nil {
			t.Fatalf("ack: %v", err)
		}
		if _, err := reg.ReportResult(ctx, agent, id, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded}); err != nil {
			t.Fatalf("result: %v", err)
		}
		res := p.wait(t)
		if res.code != exitOK {
			t.Fatalf("got exit %d, want 0\n%s", res.code, res)
		}
		got := decode[submittedJob](t, res)
		if got.ID != id || got.State != registry.JobSucceeded || !got.Created {
			t.Errorf("got %s %s created %v, want %s succeeded, created", got.ID, got.State, got.Created, id)
		}
	})

	t.Run("noop", func(t *testing.T) {
		p, id := submitWait(t, db, reg, "waiter", "noop-job")
		if _, err := reg.ReportResult(ctx, agent, id, "", registry.ResultReport{Outcome: registry.OutcomeNoop, Error: "expired"}); err != nil {
			t.Fatalf("result: %v", err)
		}
		res := p.wait(t)
		if res.code != exitOK || !strings.Contains(res.stdout, "ended noop") {
			t.Fatalf("got exit %d, want 0 and the outcome\n%s", res.code, res)
		}
	})

	t.Run("failed", func(t *testing.T) {
		p, id := submitWait(t, db, reg, "waiter", "bad-job")
		claim, err := reg.AckJob(ctx, agent, id)
		if err != nil {
			t.Fatalf("ack: %v", err)
		}
		if _, err := reg.ReportResult(ctx, agent, id, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "admission webhook denied\nthe request"}); err != nil {
			t.Fatalf("result: %v", err)
		}
		res := p.wait(t)
		if res.code != exitJobUnsuccessful {
			t.Fatalf("got exit %d, want 3\n%s", res.code, res)
		}
		if !strings.Contains(res.stdout, "ended failed") {
			t.Errorf("got stdout %q, want the job's end", res.stdout)
		}
		// Standard error is one sentence: the waiting note, then the reason.
		lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
		if last := lines[len(lines)-1]; last != "tether: job "+id+" ended failed: admission webhook denied the request." {
			t.Errorf("got stderr %q, want the one-sentence reason", last)
		}
	})

	// The agent's error reaches the terminal escaped, on standard output
	// and in the error sentence alike.
	t.Run("failed with control codes in the error", func(t *testing.T) {
		p, id := submitWait(t, db, reg, "waiter", "hostile-job")
		claim, err := reg.AckJob(ctx, agent, id)
		if err != nil {
			t.Fatalf("ack: %v", err)
		}
		hostile := "boom \x1b]0;PWNED\x07 \x1b[31mred\x1b[0m \u202eevil"
		if _, err := reg.ReportResult(ctx, agent, id, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: hostile}); err != nil {
			t.Fatalf("result: %v", err)
		}
		res := p.wait(t)
		if res.code != exitJobUnsuccessful {
			t.Fatalf("got exit %d, want 3\n%s", res.code, res)
		}
		for _, out := range []string{res.stdout, res.stderr} {
			for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
				if strings.Contains(out, raw) {
					t.Errorf("%q reaches the terminal raw:\n%s", raw, res)
				}
			}
			if !strings.Contains(out, `\x1b[31mred`) {
				t.Errorf("the error is not shown escaped:\n%s", out)
			}
		}
	})

	// Another process (a second invocation of the binary) ends the job.
	t.Run("canceled by another process", func(t *testing.T) {
		p, id := submitWait(t, db, reg, "waiter", "doomed-job", "-o", "json")
		ok(t, db, "job", "cancel", id)
		res := p.wait(t)
		if res.code != exitJobUnsuccessful {
			t.Fatalf("got exit %d, want 3\n%s", res.code, res)
		}
		if got := decode[submittedJob](t, res); got.State != registry.JobCanceled {
			t.Errorf("got %s, want canceled", got.State)
		}
		if want := "tether: job " + id + " ended canceled.\n"; res.stderr != want {
			t.Errorf("got stderr %q, want %q", res.stderr, want)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		res := cli(t, db, "job", "submit", "--cluster", "waiter", "--kind", "apply", "--payload", configMap("apps", "slow-job"), "--wait", "--timeout", "1s", "-o", "json")
		if res.code != exitWaitTimeout {
			t.Fatalf("got exit %d, want 4\n%s", res.code, res)
		}
		got := decode[submittedJob](t, res)
		if got.State != registry.JobQueued {
			t.Errorf("got %s, want the job still queued", got.State)
		}
		if !strings.Contains(res.stderr, "timed out after 1s waiting for job "+got.ID) || strings.Count(res.stderr, "\n") != 1 {
			t.Errorf("got stderr %q, want one sentence saying the wait timed out", res.stderr)
		}
	})
}

// job submit --example prints a payload that job submit then accepts, for
// every kind and intent, and says on stderr what the cluster must allow.
func TestJobSubmitExample(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "examples", "--namespaces", "team-a", "--catalog", "nextcloud", "--templates", "backup.velero")
	for _, e := range registry.PayloadExamples() {
		res := ok(t, db, "job", "submit", "--example", e.Name)
		if !json.Valid([]byte(res.stdout)) || !strings.Contains(res.stderr, "--kind "+string(e.Kind)) {
			t.Fatalf("--example %s: got\n%s", e.Name, res)
		}
		sub := cliIn(t, db, res.stdout, "job", "submit", "--cluster", "examples", "--kind", string(e.Kind), "-f", "-", "-o", "json")
		if sub.code != exitOK {
			t.Errorf("the %s example is refused:\n%s", e.Name, sub)
		}
	}
	wantError(t, cli(t, db, "job", "submit", "--example", "aply"), exitUsage, `no payload example "aply"`, "request-operation")
	wantError(t, cli(t, db, "job", "submit", "--example", "apply", "--cluster", "examples"), exitUsage, "submits nothing", "--cluster")
}

// A job within a minute of its expiry would expire at once once requeued:
// requeue refuses it and says what to do; --extend-expiry requeues it with
// its expiry an hour away, in the same change, audited.
func TestJobRequeueNearItsExpiry(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "late", "--namespaces", "apps")
	reg := openRegistry(t, db)
	agent, _ := registerAgent(t, reg, c.RegistrationToken)
	j := submit(t, db, "late", "apply", configMap("apps", "web"), "--expires-in", "30s")
	if _, err := reg.AckJob(context.Background(), agent, j.ID); err != nil {
		t.Fatalf("ack: %v", err)
	}

	wantError(t, cli(t, db, "job", "requeue", j.ID), exitError, "would expire at once", "--extend-expiry")
	if got := okJSON[registry.Job](t, db, "job", "get", j.ID); got.State != registry.JobInProgress {
		t.Fatalf("a refused requeue left the job %s", got.State)
	}
	before := time.Now()
	requeued := okJSON[registry.Job](t, db, "job", "requeue", j.ID, "--extend-expiry", "1h")
	if requeued.State != registry.JobQueued || requeued.ExpiresAt.Before(before.Add(59*time.Minute)) {
		t.Errorf("requeued with --extend-expiry 1h: %s, expires %s", requeued.State, requeued.ExpiresAt)
	}
	if out := ok(t, db, "audit", "--action", "job.requeue").stdout; !strings.Contains(out, "expiry extended") {
		t.Errorf("the audit trail does not say the expiry was extended:\n%s", out)
	}
}
