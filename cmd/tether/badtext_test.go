package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
	"github.com/tetherhq/tether/store/sqlite"
)

// TestSubmitRefusesTextThatIsNotText: job submit and rollout create refuse,
// naming where, a payload that RFC 8785 cannot canonicalize (an escaped lone
// surrogate, bytes that are not UTF-8): before, it was queued and then
// failed every poll of its cluster whose batch held it.
func TestSubmitRefusesTextThatIsNotText(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	createCluster(t, db, "prod", "--namespaces", "*", "--label", "tier=web")
	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"apps"}}`
	}
	for _, tc := range []struct{ payload, says string }{
		{cm(`\ud800`), `payload.metadata.name holds \ud800`},
		{cm("caf\xe9"), "payload.metadata.name holds bytes that are not UTF-8"},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"apps"},"data":{"n":1e400}}`, "canonicalized"},
	} {
		wantError(t, cli(t, db, "job", "submit", "--cluster", "prod", "--kind", "apply", "--payload", tc.payload), exitError, tc.says)
		wantError(t, cli(t, db, "rollout", "create", "-l", "tier=web", "--kind", "apply", "--payload", tc.payload), exitError, tc.says)
	}
	if jobs := okJSON[[]registry.Job](t, db, "job", "list"); len(jobs) != 0 {
		t.Errorf("got %d jobs, want none after refused submissions", len(jobs))
	}
}

// TestStoredBadTextPrintsAsUTF8: a payload, result and event stored with
// bytes that are not UTF-8, or an escaped lone surrogate ("\ud800"), before
// such text was refused (written here
// through the store and the registry) print with U+FFFD in their place:
// job get -o yaml (which failed on them), -o json, job list and events.
func TestStoredBadTextPrintsAsUTF8(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		storedBadTextPrints(t, db, st, registry.KeyFilePath(db))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		db := pgDB(t)
		st, err := postgres.Open(context.Background(), db, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		storedBadTextPrints(t, db, st, filepath.Join(t.TempDir(), "tether.key"))
	})
}

func storedBadTextPrints(t *testing.T, db string, st registry.Store, keyFile string) {
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(keyFile)})
	t.Cleanup(func() {
		reg.Close()
		st.Close()
	})
	c := createCluster(t, db, "prod", "--key-file", keyFile, "--namespaces", "*")
	a, _ := registerAgent(t, reg, c.RegistrationToken)
	ctx := context.Background()
	now := reg.Now()
	id := "j-01hbadutf8bbbbbbbbbbbbbbbb"
	if _, _, err := st.JobInsert(ctx, registry.JobInsertParams{
		Job: registry.Job{
			ID: id, ClusterID: c.ClusterID, Kind: registry.KindApply, Target: registry.Target{Kind: "ConfigMap"},
			Payload: json.RawMessage("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"k\":\"caf\xe9\",\"s\":\"lone\\ud800\"}}"),
			State:   registry.JobQueued, Attempt: 1, CreatedAt: now, UpdatedAt: now, SubmittedBy: "admin:test",
		},
		History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted, Actor: "admin:test"},
		Audit:   registry.AuditEntry{At: now, Actor: "admin:test", Action: registry.AuditJobSubmit, ClusterID: c.ClusterID, TargetKind: "job", TargetID: id},
	}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	claim, err := reg.AckJob(ctx, a, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.ReportResult(ctx, a, id, claim.ClaimID, registry.ResultReport{
		Outcome: registry.OutcomeSucceeded, Body: json.RawMessage("{\"outcome\":\"succeeded\",\"note\":\"\xffresult\",\"s\":\"rlone\\udc00\"}"),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.AppendEvents(ctx, a, "", []registry.Event{{Kind: "Audit", Message: "m", Body: json.RawMessage("{\"kind\":\"Audit\",\"extra\":\"\xfeevent\",\"s\":\"elone\\ud800\"}")}}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"job", "get", id, "-o", "yaml"}, []string{"caf\uFFFD", "\uFFFDresult", "lone\uFFFD", "rlone\uFFFD"}},
		{[]string{"job", "get", id, "-o", "json"}, []string{"caf\uFFFD", "\uFFFDresult", `lone\ufffd`, `rlone\ufffd`}},
		{[]string{"job", "list", "-o", "yaml"}, []string{"caf\uFFFD", "\uFFFDresult", "lone\uFFFD"}},
		{[]string{"events", "--cluster", "prod", "-o", "json"}, []string{"\uFFFDevent", `elone\ufffd`}},
		{[]string{"events", "--cluster", "prod", "-o", "yaml"}, []string{"\uFFFDevent", "elone\uFFFD"}},
	} {
		res := ok(t, db, append([]string{"--key-file", keyFile}, tc.args...)...)
		if !utf8.ValidString(res.stdout) {
			t.Fatalf("tether %s printed bytes that are not UTF-8:\n%q", strings.Join(tc.args, " "), res.stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.stdout, w) {
				t.Fatalf("tether %s does not show %q:\n%s", strings.Join(tc.args, " "), w, res.stdout)
			}
		}
	}
}

// TestLongFiltersAreRefused: the CLI's free-text filters are bounded as the
// admin API's are (registry.MaxQueryText); a search of 50,000 characters
// failed on SQLite as an internal error.
func TestLongFiltersAreRefused(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	c := createCluster(t, db, "prod", "--namespaces", "*")
	submit(t, db, c.ClusterID, "apply", configMap("apps", "x")) // SQLite reads a pattern only against a row
	long := strings.Repeat("x", 50000)
	for _, args := range [][]string{
		{"job", "list", "--search", long},
		{"job", "list", "--stuck", "--search", long},
		{"events", "--kind", long},
		{"audit", "--action", long},
		{"cluster", "list", "-l", long},
	} {
		wantError(t, cli(t, db, args...), exitError, "is 50000 characters long; the limit is 1000")
	}
}
