package server_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/testfs"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/sqlite"
)

// TestReadOnlyDatabaseAnswers503AndRecovers is issue 11's defect 3 on a real
// server over a real SQLite file: serve starts on a database file it cannot
// write. /readyz says so, every write (an agent's registration, events, a
// poll that hands out a job, a producer's submit) answers 503 with
// Retry-After and a message that says what failed but not where, while reads
// go on; once the file is writable again, the same server (no restart) takes
// writes within sqlite.ReopenInterval, and is ready at its next readiness
// check.
func TestReadOnlyDatabaseAnswers503AndRecovers(t *testing.T) {
	t.Run("database file", func(t *testing.T) { testReadOnlyDatabase(t, false, false) })
	// Issue 28 item 9: serve restarted while the -wal and -shm files and the
	// directory were read-only too used to fail every write, and /readyz,
	// until it was restarted again: SQLite shares the read-only -shm mapping
	// among all the process's connections to the file for as long as one of
	// them is open.
	t.Run("database, -wal, -shm and directory", func(t *testing.T) { testReadOnlyDatabase(t, true, false) })
	t.Run("database, -wal, -shm and directory, readyz first", func(t *testing.T) { testReadOnlyDatabase(t, true, true) })
}

// testReadOnlyDatabase runs TestReadOnlyDatabaseAnswers503AndRecovers with
// the database file read-only, or (wal) with the -wal and -shm files the
// previous run left behind and their directory read-only too. Once they are
// writable again, writes recover by themselves after ReopenInterval, or
// (readyFirst) the next readiness check sees the recovery at once.
func testReadOnlyDatabase(t *testing.T, wal, readyFirst bool) {
	var (
		regToken, credential, adminToken, clusterID string
		undo                                        func()
	)
	storeClock := clocktest.New() // times the store's reopening; the env's clock, the registry's
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
		var undos []func()
		if wal {
			// The directory made read-only while the previous run still
			// has the database open: it cannot remove the -wal and -shm
			// files as it stops. (The files are made read-only after: see
			// store/sqlite's readOnlyWAL.)
			undos = append(undos, testfs.ReadOnly(t, filepath.Dir(path)))
		}
		reg.Close()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		undos = append(undos, testfs.ReadOnly(t, path))
		if wal {
			undos = append(undos, testfs.ReadOnly(t, path+"-wal"), testfs.ReadOnly(t, path+"-shm"))
		}
		undo = func() {
			for _, u := range undos {
				u()
			}
			testfs.OwnerWritable(t, path+"-wal", path+"-shm")
		}
		return sqlite.Open(context.Background(), path, sqlite.Options{Clock: storeClock})
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
	e.api(http.MethodGet, "/clusters/prod", adminToken, nil).want(t, http.StatusOK) // reads go on

	undo() // the operator fixes the permissions
	if readyFirst {
		// Its probe reopens the store without waiting for ReopenInterval.
		e.clock.Advance(registry.ReadyCacheTTL)
		e.do(http.MethodGet, "/readyz").want(t, http.StatusOK)
	} else {
		storeClock.Advance(sqlite.ReopenInterval)
	}
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
