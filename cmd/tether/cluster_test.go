package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

func TestClusterCreateJSON(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	before := time.Now()
	c := createCluster(t, db, "prod-eu", "--org", "payments", "--namespaces", "apps,monitoring", "--catalog", "postgres,redis",
		"--templates", "backup.velero", "--mode", "pull", "--lease-seconds", "120", "--max-attempts", "3",
		"--require-capability", "hmac,lease", "--token-ttl", "2h")

	if !strings.HasPrefix(c.RegistrationToken, "tether_reg_") {
		t.Errorf("got registrationToken %q, want the tether_reg_ prefix", c.RegistrationToken)
	}
	if got, want := c.ExpiresAt, before.Add(2*time.Hour); got.Before(want.Add(-time.Minute)) || got.After(want.Add(time.Minute)) {
		t.Errorf("got expiresAt %s, want about %s (--token-ttl 2h)", got, want)
	}
	if c.Cluster.ID != c.ClusterID {
		t.Errorf("got cluster.id %q, want clusterId %q", c.Cluster.ID, c.ClusterID)
	}
	got := c.Cluster
	if got.Name != "prod-eu" || got.Organization != "payments" || got.State != registry.ClusterPending || got.Mode != registry.ModePull || got.Version != 1 {
		t.Errorf("got cluster %+v, want prod-eu of payments, pending, pull, version 1", got)
	}
	for _, check := range []struct {
		field     string
		got, want []string
	}{
		{"allowedNamespaces", got.AllowedNamespaces, []string{"apps", "monitoring"}},
		{"allowedCatalogEntries", got.AllowedCatalogEntries, []string{"postgres", "redis"}},
		{"allowedOperationTemplates", got.AllowedOperationTemplates, []string{"backup.velero"}},
		{"requiredCapabilities", got.Policy.RequiredCapabilities, []string{"hmac", "lease"}},
	} {
		if !slices.Equal(check.got, check.want) {
			t.Errorf("got %s %v, want %v", check.field, check.got, check.want)
		}
	}
	if got.Policy.LeaseSeconds != 120 || got.Policy.MaxAttempts != 3 {
		t.Errorf("got policy %+v, want leaseSeconds 120 and maxAttempts 3", got.Policy)
	}

	// The expiry is RFC 3339 in the raw output, as scripts read it.
	res := ok(t, db, "cluster", "create", "--name", "raw", "-o", "json")
	raw := decode[map[string]map[string]any](t, res)
	if s, _ := raw["registrationToken"]["expiresAt"].(string); s == "" {
		t.Errorf("got registrationToken.expiresAt %v, want an RFC 3339 string", raw["registrationToken"]["expiresAt"])
	} else if _, err := time.Parse(time.RFC3339, s); err != nil {
		t.Errorf("got expiresAt %q, want RFC 3339: %v", s, err)
	}
}

func TestClusterCreateLeaseZeroIsKept(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "no-reclaim", "--lease-seconds", "0")
	if c.Cluster.Policy.LeaseSeconds != 0 || c.Cluster.Policy.MaxAttempts != registry.DefaultMaxAttempts {
		t.Errorf("got policy %+v, want leaseSeconds 0 (no automatic reclaim) and the default max attempts", c.Cluster.Policy)
	}
}

func TestClusterCreateTableShowsTokenOnce(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	res := ok(t, db, "cluster", "create", "--name", "prod-eu", "--namespaces", "apps")
	tokens := readTokens(t, db, "prod-eu")
	if len(tokens) != 1 {
		t.Fatalf("got %d tokens, want 1", len(tokens))
	}
	// The table output is the only place the secret is: find it there.
	i := strings.Index(res.stdout, "tether_reg_")
	if i < 0 {
		t.Fatalf("got no token in the output, want it shown once\n%s", res)
	}
	token := strings.Fields(res.stdout[i:])[0]
	if n := strings.Count(res.stdout, token); n != 1 {
		t.Errorf("got the token %d times, want exactly once\n%s", n, res)
	}
	for _, want := range []string{
		"will not be shown again",
		"tether agent register --server URL --token - --state-dir DIR",
		tokens[0].ID,
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("got output without %q\n%s", want, res)
		}
	}
	// The token shown is the real one: an agent can register with it.
	reg := openRegistry(t, db)
	registerAgent(t, reg, token)
	assertSecretAbsent(t, db, token, "prod-eu")
}

// readTokens lists a cluster's tokens with the CLI.
func readTokens(t testing.TB, db, cluster string) []tokenView {
	t.Helper()
	return okJSON[[]tokenView](t, db, "token", "list", cluster)
}

// assertSecretAbsent runs every command that shows a cluster and its tokens
// and credentials, and checks that secret appears in none of them.
func assertSecretAbsent(t testing.TB, db, secret, cluster string) {
	t.Helper()
	for _, args := range [][]string{
		{"cluster", "list"}, {"cluster", "list", "-o", "json"},
		{"cluster", "get", cluster}, {"cluster", "get", cluster, "-o", "json"},
		{"token", "list"}, {"token", "list", cluster, "-o", "json"},
		{"credential", "list", cluster}, {"credential", "list", cluster, "-o", "json"},
		{"audit"}, {"audit", "-o", "json"},
		{"events", "-o", "json"},
	} {
		res := ok(t, db, args...)
		if strings.Contains(res.stdout+res.stderr, secret) {
			t.Errorf("tether %s printed the secret %q; want it shown only when issued", strings.Join(args, " "), secret)
		}
	}
}

func TestClusterListAndGet(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := createCluster(t, db, "alpha", "--org", "payments", "--namespaces", "apps", "--catalog", "postgres")
	b := createCluster(t, db, "beta")
	submit(t, db, "alpha", "apply", configMap("apps", "one"))
	submit(t, db, "alpha", "apply", configMap("apps", "two"))

	// An agent registers and reports a heartbeat with conditions.
	reg := openRegistry(t, db)
	agent, bearer := registerAgent(t, reg, a.RegistrationToken, "hmac", "lease")
	_, err := reg.AppendEvents(context.Background(), agent, "", []registry.Event{{
		Kind:        registry.EventClusterHeartbeat,
		ResourceRef: registry.ResourceRef{APIVersion: "ops.vworkspace.io/v1alpha1", Kind: "Cluster", Name: agent.Cluster.ID},
		Conditions: []registry.Condition{
			{Type: "Ready", Status: "True"},
			{Type: "Synced", Status: "False", Reason: "GitUnreachable", Message: "cannot reach git"},
		},
	}})
	if err != nil {
		t.Fatalf("append heartbeat: %v", err)
	}

	list := okJSON[[]registry.Cluster](t, db, "cluster", "list")
	if len(list) != 2 || list[0].ID != a.ClusterID || list[1].ID != b.ClusterID {
		t.Fatalf("got clusters %+v, want alpha then beta", list)
	}
	if list[0].State != registry.ClusterActive {
		t.Errorf("got alpha %s, want active after its agent registered", list[0].State)
	}
	table := ok(t, db, "cluster", "list").stdout
	for _, want := range []string{"NAME", "alpha", "beta", "payments", "active", "pending", "Synced=False"} {
		if !strings.Contains(table, want) {
			t.Errorf("got cluster list without %q\n%s", want, table)
		}
	}

	// By name and by id, the same record.
	byName := okJSON[clusterDetail](t, db, "cluster", "get", "alpha")
	byID := okJSON[clusterDetail](t, db, "cluster", "get", a.ClusterID)
	if byName.ID != a.ClusterID || byID.ID != a.ClusterID {
		t.Fatalf("got ids %q and %q, want %q for both name and id", byName.ID, byID.ID, a.ClusterID)
	}
	d := byName
	if got := d.JobCounts[registry.JobQueued]; got != 2 {
		t.Errorf("got jobCounts.queued %d, want 2", got)
	}
	if len(d.Credentials) != 1 || d.Credentials[0].State != registry.CredentialActive || !d.Credentials[0].Signed {
		t.Errorf("got credentials %+v, want one active, signed", d.Credentials)
	}
	if len(d.Tokens) != 1 || d.Tokens[0].State != registry.TokenUsed {
		t.Errorf("got tokens %+v, want one used", d.Tokens)
	}
	if len(d.Status.Conditions) != 2 || d.Status.LastHeartbeatAt.IsZero() {
		t.Errorf("got status %+v, want two conditions and a heartbeat time", d.Status)
	}
	if d.Silent {
		t.Errorf("got silent, want not silent right after a heartbeat")
	}

	out := ok(t, db, "cluster", "get", "alpha").stdout
	for _, want := range []string{
		a.ClusterID, "payments", "Namespaces:", "apps", "postgres", "Lease:", "60s", "Max attempts:",
		"Synced", "GitUnreachable", "cannot reach git", "Synced=False",
		"1 active", agent.Credential.ID, "signed writes", "1 used", "queued 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("got cluster get without %q\n%s", want, out)
		}
	}
	if strings.Contains(out, bearer) {
		t.Errorf("cluster get printed the agent's bearer credential")
	}

	wantError(t, cli(t, db, "cluster", "get", "gamma"), exitError, `no cluster has the id or name "gamma"`)
}

func TestClusterEdit(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "edit-me", "--namespaces", "apps,legacy", "--catalog", "postgres", "--templates", "backup.velero")

	c := okJSON[registry.Cluster](t, db, "cluster", "edit", "edit-me",
		"--add-namespace", "billing", "--remove-namespace", "legacy",
		"--set-catalog", "redis,mysql", "--add-template", "runCommand.job",
		"--lease-seconds", "0", "--max-attempts", "7", "--require-capability", "lease",
		"--org", "platform")
	if got, want := c.AllowedNamespaces, []string{"apps", "billing"}; !slices.Equal(got, want) {
		t.Errorf("got namespaces %v, want %v", got, want)
	}
	if got, want := c.AllowedCatalogEntries, []string{"redis", "mysql"}; !slices.Equal(got, want) {
		t.Errorf("got catalog %v, want %v", got, want)
	}
	if got, want := c.AllowedOperationTemplates, []string{"backup.velero", "runCommand.job"}; !slices.Equal(got, want) {
		t.Errorf("got templates %v, want %v", got, want)
	}
	if c.Policy.LeaseSeconds != 0 || c.Policy.MaxAttempts != 7 || !slices.Equal(c.Policy.RequiredCapabilities, []string{"lease"}) {
		t.Errorf("got policy %+v, want lease 0, 7 attempts, lease required", c.Policy)
	}
	if c.Organization != "platform" || c.Version != 2 {
		t.Errorf("got organization %q version %d, want platform at version 2", c.Organization, c.Version)
	}

	c = okJSON[registry.Cluster](t, db, "cluster", "edit", "edit-me", "--templates", "", "--set-namespaces", "*", "--name", "renamed")
	if len(c.AllowedOperationTemplates) != 0 || !slices.Equal(c.AllowedNamespaces, []string{"*"}) || c.Name != "renamed" {
		t.Errorf("got %+v, want no templates, namespaces [*], name renamed", c.ClusterSpec)
	}

	table := ok(t, db, "cluster", "edit", "renamed", "--remove-catalog", "mysql").stdout
	for _, want := range []string{"Updated cluster renamed", "version 4", "redis"} {
		if !strings.Contains(table, want) {
			t.Errorf("got edit output without %q\n%s", want, table)
		}
	}

	wantError(t, cli(t, db, "cluster", "edit", "renamed", "--remove-namespace", "nope"), exitError,
		`namespace "nope" is not in cluster renamed's allowed namespaces`, "nothing was changed")
	wantError(t, cli(t, db, "cluster", "edit", "renamed", "--add-namespace", "Not_A_Namespace"), exitError, `"Not_A_Namespace" is not valid`)
	wantError(t, cli(t, db, "cluster", "edit", "renamed", "--lease-seconds", "2"), exitError, "lease seconds 2")
	createCluster(t, db, "taken")
	wantError(t, cli(t, db, "cluster", "edit", "renamed", "--name", "taken"), exitError, `a cluster named "taken" already exists`)
	wantError(t, cli(t, db, "cluster", "create", "--name", "taken"), exitError, `a cluster named "taken" already exists`)
	if got := okJSON[registry.Cluster](t, db, "cluster", "get", "renamed"); got.Version != 4 {
		t.Errorf("got version %d after refused edits, want 4 (unchanged)", got.Version)
	}
}

func TestClusterEditIfVersion(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "cas", "--namespaces", "apps")

	c := okJSON[registry.Cluster](t, db, "cluster", "edit", "cas", "--add-namespace", "one", "--if-version", "1")
	if c.Version != 2 {
		t.Fatalf("got version %d, want 2", c.Version)
	}
	// A second admin who also looked at version 1 loses, and is told the
	// current version.
	res := cli(t, db, "cluster", "edit", "cas", "--add-namespace", "two", "--if-version", "1")
	wantError(t, res, exitError, "version 1", "now at version 2")
	c = okJSON[registry.Cluster](t, db, "cluster", "get", "cas")
	if slices.Contains(c.AllowedNamespaces, "two") || c.Version != 2 {
		t.Errorf("got %v at version %d, want the stale edit not applied", c.AllowedNamespaces, c.Version)
	}
	wantError(t, cli(t, db, "cluster", "edit", "cas", "--add-namespace", "two", "--if-version", "0"), exitUsage, "--if-version 0")
}

// Relative edits made at the same time by several processes all land: each
// one is re-applied to the version that won before it.
func TestClusterEditConcurrentRelativeEdits(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "busy", "--namespaces", "apps")
	const n = 4
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = cli(t, db, "cluster", "edit", "busy", "--add-namespace", fmt.Sprintf("team-%d", i))
		}()
	}
	wg.Wait()
	for _, res := range results {
		if res.code != exitOK {
			t.Fatalf("got exit %d, want 0\n%s", res.code, res)
		}
	}
	c := okJSON[registry.Cluster](t, db, "cluster", "get", "busy")
	for i := range n {
		if ns := fmt.Sprintf("team-%d", i); !slices.Contains(c.AllowedNamespaces, ns) {
			t.Errorf("got namespaces %v, want %s among them", c.AllowedNamespaces, ns)
		}
	}
	if c.Version != n+1 {
		t.Errorf("got version %d, want %d (one per edit)", c.Version, n+1)
	}
}

func TestClusterDisableEnable(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "switch", "--namespaces", "apps")

	c := okJSON[registry.Cluster](t, db, "cluster", "disable", "switch", "--reason", "maintenance")
	if c.State != registry.ClusterDisabled {
		t.Fatalf("got state %s, want disabled", c.State)
	}
	wantError(t, cli(t, db, "job", "submit", "--cluster", "switch", "--kind", "apply", "--payload", configMap("apps", "x")), exitError, "is disabled")

	out := ok(t, db, "cluster", "enable", "switch").stdout
	if !strings.Contains(out, "Enabled cluster switch") || !strings.Contains(out, "pending") {
		t.Errorf("got %q, want it to say the cluster is enabled and pending again", out)
	}
	submit(t, db, "switch", "apply", configMap("apps", "x"))

	audit := okJSON[[]registry.AuditEntry](t, db, "audit", "--cluster", "switch", "--action", "cluster.disable")
	if len(audit) != 1 || audit[0].Reason != "maintenance" {
		t.Errorf("got audit %+v, want one cluster.disable with reason maintenance", audit)
	}
}

func TestClusterDeleteCascades(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	doomed := createCluster(t, db, "doomed", "--namespaces", "apps")
	kept := createCluster(t, db, "kept", "--namespaces", "apps")
	reg := openRegistry(t, db)
	ctx := context.Background()
	agent, bearer := registerAgent(t, reg, doomed.RegistrationToken, "lease")
	j1 := submit(t, db, "doomed", "apply", configMap("apps", "one"))
	submit(t, db, "doomed", "apply", configMap("apps", "two"))
	keptJob := submit(t, db, "kept", "apply", configMap("apps", "three"))
	if _, err := reg.AckJob(ctx, agent, j1.ID); err != nil {
		t.Fatalf("ack: %v", err)
	}
	if _, err := reg.AppendEvents(ctx, agent, "", []registry.Event{{Kind: registry.EventConditionTransition, EventKey: "k1", Message: "hello"}}); err != nil {
		t.Fatalf("append events: %v", err)
	}
	ok(t, db, "token", "issue", "doomed")

	// Without a terminal and without --yes, nothing is deleted.
	wantError(t, cli(t, db, "cluster", "delete", "doomed"), exitUsage, "--yes")
	okJSON[clusterDetail](t, db, "cluster", "get", "doomed")

	out := ok(t, db, "cluster", "delete", "doomed", "--yes").stdout
	if !strings.Contains(out, "Deleted cluster doomed") {
		t.Errorf("got %q, want it to say the cluster was deleted", out)
	}

	wantError(t, cli(t, db, "cluster", "get", "doomed"), exitError, "no cluster has the id or name")
	wantError(t, cli(t, db, "job", "get", j1.ID), exitError, "no job has the id")
	if jobs := okJSON[[]registry.Job](t, db, "job", "list"); len(jobs) != 1 || jobs[0].ID != keptJob.ID {
		t.Errorf("got jobs %+v, want only the other cluster's job", jobs)
	}
	if n, err := reg.CountJobs(ctx, registry.JobListParams{ClusterIDs: []string{doomed.ClusterID}}); err != nil || n != 0 {
		t.Errorf("got %d jobs of the deleted cluster (err %v), want 0", n, err)
	}
	if ev, err := reg.ListEvents(ctx, registry.EventListParams{ClusterID: doomed.ClusterID}); err != nil || len(ev) != 0 {
		t.Errorf("got %d events of the deleted cluster (err %v), want 0", len(ev), err)
	}
	for _, tk := range readTokens(t, db, "") {
		if tk.ClusterID == doomed.ClusterID {
			t.Errorf("got token %s of the deleted cluster, want it deleted", tk.ID)
		}
	}
	if _, err := reg.Authenticate(ctx, bearer, registry.AuthAny); registry.ErrorCode(err) != registry.CodeUnauthorized {
		t.Errorf("got %v authenticating the deleted cluster's credential, want unauthorized", err)
	}
	// The audit trail outlives the cluster and is found by its id.
	audit := okJSON[[]registry.AuditEntry](t, db, "audit", "--cluster", doomed.ClusterID, "--action", "cluster.delete")
	if len(audit) != 1 {
		t.Errorf("got %d cluster.delete entries, want 1", len(audit))
	}
	okJSON[clusterDetail](t, db, "cluster", "get", kept.ClusterID)

	type deleted struct {
		Deleted bool             `json:"deleted"`
		Cluster registry.Cluster `json:"cluster"`
	}
	if got := okJSON[deleted](t, db, "cluster", "delete", "kept", "-y"); !got.Deleted || got.Cluster.ID != kept.ClusterID {
		t.Errorf("got %+v, want kept deleted", got)
	}
	wantError(t, cli(t, db, "job", "get", keptJob.ID), exitError, "no job has the id")
}

// On a terminal, delete asks for the cluster's name. The test stands in for
// the terminal and runs the command in-process.
func TestClusterDeleteConfirmation(t *testing.T) {
	db := newDB(t)
	createCluster(t, db, "confirm-me")
	saved := stdinIsTerminal
	stdinIsTerminal = func(io.Reader) bool { return true }
	t.Cleanup(func() { stdinIsTerminal = saved })

	runIn := func(stdin string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--db", db, "cluster", "delete", "confirm-me"}, strings.NewReader(stdin), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := runIn("confirm-you\n")
	if code != exitError || !strings.Contains(stderr, "Type the cluster's name") || !strings.Contains(stderr, "nothing was deleted") {
		t.Fatalf("got exit %d, stderr %q; want 1 with a prompt and a refusal", code, stderr)
	}
	if stdout != "" {
		t.Errorf("got stdout %q, want nothing", stdout)
	}
	okJSON[clusterDetail](t, db, "cluster", "get", "confirm-me")

	code, stdout, stderr = runIn("confirm-me\n")
	if code != exitOK || !strings.Contains(stdout, "Deleted cluster confirm-me") {
		t.Fatalf("got exit %d, stdout %q, stderr %q; want the cluster deleted", code, stdout, stderr)
	}
	wantError(t, cli(t, db, "cluster", "get", "confirm-me"), exitError, "no cluster has the id or name")
}

// A --jq that fails on the answer of a command that changed something prints
// the whole answer instead of losing it: cluster create's registration token
// is shown only once, and the cluster exists whatever the expression did.
// A read command's failed --jq prints nothing (a script's $(...) stays
// empty).
func TestMutationKeepsAnswerWhenOutputFails(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	res := cli(t, db, "cluster", "create", "--name", "kept", "-o", "json", "--jq", ".registrationToken.token.value")
	if res.code != exitError {
		t.Fatalf("got exit %d, want %d (the expression failed)\n%s", res.code, exitError, res)
	}
	if !strings.Contains(res.stderr, "--jq: expected an object") || !strings.Contains(res.stderr, "printed above") {
		t.Errorf("got stderr without the jq error and the note that the answer is printed\n%s", res)
	}
	var answer struct {
		Cluster           registry.Cluster              `json:"cluster"`
		RegistrationToken adminclient.RegistrationToken `json:"registrationToken"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &answer); err != nil || !strings.HasPrefix(answer.RegistrationToken.Token, "tether_reg_") || answer.Cluster.Name != "kept" {
		t.Fatalf("got stdout without the whole answer (%v)\n%s", err, res)
	}
	// The token printed is the live one.
	reg := openRegistry(t, db)
	registerAgent(t, reg, answer.RegistrationToken.Token)

	read := cli(t, db, "cluster", "get", "kept", "-o", "json", "--jq", ".name.value")
	if read.code != exitError || read.stdout != "" {
		t.Errorf("a read command's failed --jq: got exit %d and stdout %q, want %d and nothing", read.code, read.stdout, exitError)
	}
}
