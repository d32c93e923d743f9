package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// pgDB returns a postgres:// --db in a schema of its own (dropped when the
// test ends), or skips the test without TETHER_TEST_POSTGRES_DSN.
func pgDB(t *testing.T) string {
	t.Helper()
	if dsn := os.Getenv(pgtest.Env); dsn != "" && !strings.Contains(dsn, "://") {
		t.Skip(pgtest.Env + " is not a postgres:// URL, which --db needs")
	}
	dsn, _ := pgtest.Schema(t, "tether_cli")
	return dsn
}

// TestAuditFollowPostgresConcurrentWriters: on PostgreSQL, writes run side by
// side (several writers, several replicas), so audit entries commit, and
// reach the change feed, in another order than their ids. tether audit
// --follow prints each of them all the same, once.
func TestAuditFollowPostgresConcurrentWriters(t *testing.T) {
	db := pgDB(t)
	key := filepath.Join(t.TempDir(), "tether.key")
	var regs []*registry.Registry
	for range 2 { // two replicas
		st, err := postgres.Open(context.Background(), db, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(key)})
		t.Cleanup(func() {
			reg.Close()
			st.Close()
		})
		regs = append(regs, reg)
	}
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})
	c, _, err := regs[0].CreateCluster(ctx, registry.ClusterSpec{Name: "busy", AllowedNamespaces: []string{"apps"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub := registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindDelete, Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"apps"}`)}
	first, _, err := regs[0].SubmitJob(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, db, "--key-file", key, "audit", "--follow", "--action", "job.", "-o", "json")
	p.waitOutput(t, first.ID)

	const writers, each = 8, 100
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, _, err := regs[i%2].SubmitJob(ctx, sub); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, err := regs[0].CancelJob(ctx, first.ID, "the last one"); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, "the last one")
	res := interrupt(t, p)
	seen := map[int64]bool{}
	submits := 0
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var e registry.AuditEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("got line %q, want one JSON object per line: %v", line, err)
		}
		if seen[e.ID] {
			t.Fatalf("audit entry %d printed twice", e.ID)
		}
		seen[e.ID] = true
		if e.Action == registry.AuditJobSubmit {
			submits++
		}
	}
	if want := 1 + writers*each; submits != want {
		t.Fatalf("audit --follow printed %d job.submit entries, want %d", submits, want)
	}
}

// A --db whose search_path names a schema that does not exist is refused
// saying so and how to create it, not as "internal error: cannot open
// database".
func TestPostgresMissingSchema(t *testing.T) {
	db := pgDB(t) // skips without PostgreSQL
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	missing := q.Get("search_path") + "_missing" // never created
	q.Set("search_path", missing)
	u.RawQuery = q.Encode()
	res := cli(t, u.String(), "cluster", "list")
	wantError(t, res, exitError, "schema "+missing+", named by its search_path, does not exist", "CREATE SCHEMA "+missing)
	if strings.Contains(res.stderr, "internal error") {
		t.Errorf("a missing schema is reported as an internal error: %s", res.stderr)
	}
}
