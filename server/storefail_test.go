package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testfs"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/sqlite"
)

// TestReadOnlyDatabaseAnswers503AndRecovers is issue 11's defect 3 on a real
// server over a real SQLite file: serve starts on a database file it cannot
// write. /readyz says so, every write (an agent's registration, events, a
// poll that hands out a job, a producer's submit) answers 503 with
// Retry-After and a message that says what failed but not where; once the
// file is writable again, the same server (no restart) takes writes and is
// ready.
func TestReadOnlyDatabaseAnswers503AndRecovers(t *testing.T) {
	var (
		regToken, credential, adminToken, clusterID string
		undo                                        func()
	)
	e := newEnvOn(t, func(path string) (registry.Store, error) {
		// What the database held before it became read-only: written by an
		// earlier run of tether, on the same clock and key file.
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			return nil, err
		}
		reg := registry.New(st, registry.Config{Clock: clocktest.New(), Keyring: registry.NewKeyFile(registry.KeyFilePath(path))})
		spec := registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"*"}, AllowedCatalogEntries: []string{"*"}, AllowedOperationTemplates: []string{"*"}, Policy: registry.DefaultPolicy()}
		c, tok, err := reg.CreateCluster(adminCtx(), spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		cred, err := reg.Register(adminCtx(), registry.RegisterParams{Token: tok.Secret.Reveal()})
		if err != nil {
			t.Fatal(err)
		}
		submitTo(t, reg, c.ID)
		spec.Name = "staging"
		_, tok2, err := reg.CreateCluster(adminCtx(), spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := reg.CreateAdminToken(adminCtx(), "producer", registry.RoleOperator, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		clusterID, credential, regToken, adminToken = c.ID, cred.Token.Reveal(), tok2.Secret.Reveal(), admin.Secret.Reveal()
		reg.Close()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		undo = testfs.ReadOnly(t, path)
		return sqlite.Open(context.Background(), path, sqlite.Options{})
	}, registry.Config{})
	a := &agent{e: e, clusterID: clusterID, token: credential}

	writes := []struct {
		name string
		do   func() *response
		ok   int
	}{
		{"register", func() *response {
			return e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": regToken}))
		}, http.StatusOK},
		{"events", func() *response {
			return a.do(http.MethodPost, "/api/agent/events", withBody(`{"events":[{"kind":"Audit","eventKey":"k1","message":"hello"}]}`))
		}, http.StatusNoContent},
		{"poll", func() *response { return a.poll(0) }, http.StatusOK},
		{"submit", func() *response {
			return e.api(http.MethodPost, "/jobs", adminToken, map[string]any{"cluster": "prod", "kind": "apply",
				"payload": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "apps"}}})
		}, http.StatusAccepted},
	}
	wantUnavailable := func(what string, r *response) {
		t.Helper()
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("%s on a read-only database: %d %s, want 503", what, r.status, r.body)
		}
		if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Fatalf("%s: 503 with Retry-After %q, want a delay", what, ra)
		}
		body := string(r.body)
		if !strings.Contains(body, `"unavailable"`) {
			t.Fatalf("%s: %s, want the unavailable code", what, body)
		}
		if strings.Contains(body, e.dbPath) || strings.Contains(body, "tether.db") {
			t.Fatalf("%s: %s names the database's file", what, body)
		}
	}

	ready := e.do(http.MethodGet, "/readyz")
	wantUnavailable("/readyz", ready)
	if !strings.Contains(string(ready.body), "cannot be written") {
		t.Fatalf("/readyz: %s, want it to say the database cannot be written", ready.body)
	}
	if e.do(http.MethodGet, "/healthz").status != http.StatusOK {
		t.Fatal("/healthz failed: the process is alive, only its database is not writable")
	}
	for _, w := range writes {
		r := w.do()
		wantUnavailable(w.name, r)
		if w.name != "poll" && !strings.Contains(string(r.body), "read-only") {
			t.Fatalf("%s: %s, want it to say the database is read-only", w.name, r.body)
		}
	}
	if logs := e.logs.String(); !strings.Contains(logs, "readonly") {
		t.Fatalf("the log does not have the driver's words for the failure:\n%s", logs)
	}

	undo() // the operator fixes the file's permissions
	for _, w := range writes {
		r := w.do()
		if r.status != w.ok {
			t.Fatalf("%s once the database is writable again: %d %s, want %d", w.name, r.status, r.body, w.ok)
		}
		if w.name == "poll" && !strings.Contains(string(r.body), `"jobs":[{`) {
			t.Fatalf("poll once the database is writable again: %s, want the queued job", r.body)
		}
	}
	// /readyz reuses its last outcome for a moment, then sees the recovery.
	e.clock.Advance(registry.ReadyCacheTTL)
	e.do(http.MethodGet, "/readyz").want(t, http.StatusOK)
}
