package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/postgres"
	"github.com/tetherhq/tether/store/sqlite"
)

// revocationNoticed bounds how long a request held by a revoked admin token
// may go on waiting. The promise (issue 28, item 8) is within 2 s: the
// change feed wakes the request within milliseconds, and a recheck every
// second backs it up. The bound is 5 s, a "something is broken" bound (both
// failed), so that a loaded two-core CI machine under -race does not fail
// it as it once did the SSH console's same 2 s.
const revocationNoticed = 5 * time.Second

// A request held by ?wait= (GET /jobs/{id}, POST /jobs) is answered 401
// within 2 s of its token's revocation, whether this server's registry
// revoked it or another replica's over the same database, and within 2 s of
// its expiry; not when the wait of 60 s runs out. On both stores.
func TestAdminWaitAnsweredSoonAfterRevocation(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		e := newEnv(t)
		adminWaitAnsweredSoonAfterRevocation(t, e, func() (registry.Store, error) {
			return sqlite.Open(context.Background(), e.dbPath, sqlite.Options{}) // another process's handle
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn, _ := pgtest.Schema(t, "tether_wait")
		open := func() (registry.Store, error) { return postgres.Open(context.Background(), dsn, postgres.Options{}) }
		adminWaitAnsweredSoonAfterRevocation(t, newEnvOn(t, func(string) (registry.Store, error) { return open() }, registry.Config{}), open)
	})
}

func adminWaitAnsweredSoonAfterRevocation(t *testing.T, e *env, openOther func() (registry.Store, error)) {
	st, err := openOther()
	if err != nil {
		t.Fatal(err)
	}
	other := registry.New(st, registry.Config{Clock: e.clock})
	t.Cleanup(func() { other.Close(); st.Close() })

	e.cluster("prod")
	root := e.adminToken("root", registry.RoleAdmin, "")
	payload := func(name string) json.RawMessage {
		return json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"apps"}}`)
	}
	open := e.api("POST", "/jobs", root, map[string]any{"cluster": "prod", "kind": "apply", "payload": payload("open")})
	open.want(t, http.StatusAccepted)
	job := decodeAs[registry.Job](t, open)

	revokeWith := func(reg *registry.Registry) func(name string) {
		return func(name string) {
			if _, err := reg.RevokeAdminToken(adminCtx(), name, "leaked"); err != nil {
				t.Fatal(err)
			}
		}
	}
	expire := func(string) { e.clock.Advance(2 * time.Hour) }
	for i, tc := range []struct {
		name, method string
		submit       bool
		end          func(name string)
	}{
		{"read, revoked here", "GET", false, revokeWith(e.reg)},
		{"read, revoked by another replica", "GET", false, revokeWith(other)},
		{"submit, revoked here", "POST", true, revokeWith(e.reg)},
		{"submit, revoked by another replica", "POST", true, revokeWith(other)},
		{"read, expired", "GET", false, expire},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "producer-" + string(rune('a'+i))
			issued, err := e.reg.CreateAdminToken(adminCtx(), name, registry.RoleOperator, "", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			token := issued.Secret.Reveal()
			done := make(chan *response, 1)
			go func() {
				if tc.submit {
					done <- e.api("POST", "/jobs?wait=60", token, map[string]any{"cluster": "prod", "kind": "apply", "payload": payload(name)})
				} else {
					done <- e.api("GET", "/jobs/"+job.ID+"?wait=60", token, nil)
				}
			}()
			// Held: past its authentication, waiting for the job.
			eventually(t, "the request to wait", func() bool {
				return strings.Contains(string(e.getMetrics().body), "tether_admin_waits_held 1")
			})
			tc.end(name)
			select {
			case r := <-done:
				wantAPIError(t, r, http.StatusUnauthorized, "unauthorized")
			case <-time.After(revocationNoticed):
				t.Fatalf("still waiting %s after the token stopped working", revocationNoticed)
			}
			eventually(t, "the wait to be released", func() bool {
				return strings.Contains(string(e.getMetrics().body), "tether_admin_waits_held 0")
			})
		})
	}

	// A token that still works keeps waiting for its job's outcome.
	live := e.adminToken("live", registry.RoleOperator, "")
	done := make(chan *response, 1)
	go func() { done <- e.api("GET", "/jobs/"+job.ID+"?wait=60", live, nil) }()
	eventually(t, "the request to wait", func() bool {
		return strings.Contains(string(e.getMetrics().body), "tether_admin_waits_held 1")
	})
	e.api("POST", "/jobs/"+job.ID+"/cancel", root, nil).want(t, http.StatusOK)
	if r := <-done; r.status != http.StatusOK || !strings.Contains(string(r.body), `"canceled"`) {
		t.Fatalf("a live token's wait: %d %s", r.status, r.body)
	}
}

// A watch stream ends within 2 s of its token's revocation by another
// replica, even when nothing changes after it.
func TestAdminWatchEndsSoonAfterRevocation(t *testing.T) {
	e := newEnv(t)
	e.cluster("prod")
	st, err := sqlite.Open(context.Background(), e.dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other := registry.New(st, registry.Config{Clock: e.clock})
	t.Cleanup(func() { other.Close(); st.Close() })

	token := e.adminToken("watcher", registry.RoleViewer, "")
	w := e.watch(t, token, "?kinds=clusters", "")
	w.untilSnapshotEnd(t)
	if _, err := other.RevokeAdminToken(adminCtx(), "watcher", "leaked"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(revocationNoticed)
	for {
		select {
		case ev, ok := <-w.ch:
			if !ok {
				return
			}
			t.Fatalf("the stream of a revoked token delivered %+v", ev)
		case <-timeout:
			t.Fatalf("the stream of a revoked token is still open %s later", revocationNoticed)
		}
	}
}

// One admin token, a viewer's too, holds at most MaxWaitsPerAdminToken
// requests waiting with ?wait= at once: past it a read is answered 429 with
// Retry-After, and a submission 202 with its job at once (it is queued), so
// that no token can hold tens of thousands of waits and exhaust the
// server's memory. Another token still waits.
func TestAdminWaitsPerTokenAreCapped(t *testing.T) {
	e := newEnv(t)
	e.cluster("prod")
	root := e.adminToken("root", registry.RoleAdmin, "")
	viewer := e.adminToken("viewer", registry.RoleViewer, "")
	open := e.api("POST", "/jobs", root, map[string]any{"cluster": "prod", "kind": "apply",
		"payload": json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"open","namespace":"apps"}}`)})
	open.want(t, http.StatusAccepted)
	job := decodeAs[registry.Job](t, open)

	done := make(chan *response, server.MaxWaitsPerAdminToken+1)
	for range server.MaxWaitsPerAdminToken {
		go func() { done <- e.api("GET", "/jobs/"+job.ID+"?wait=60", viewer, nil) }()
	}
	eventually(t, "the requests to wait", func() bool {
		return strings.Contains(string(e.getMetrics().body), fmt.Sprintf("tether_admin_waits_held %d", server.MaxWaitsPerAdminToken))
	})
	r := e.api("GET", "/jobs/"+job.ID+"?wait=60", viewer, nil)
	wantAPIError(t, r, http.StatusTooManyRequests, "too_many_polls")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("a 429 without Retry-After")
	}
	sub := e.api("POST", "/jobs?wait=60", viewer, map[string]any{"cluster": "prod", "kind": "apply",
		"payload": json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"more","namespace":"apps"}}`)})
	if sub.status != http.StatusForbidden { // a viewer may not submit; an operator's submission is answered at once
		t.Fatalf("a viewer's submission: %d %s", sub.status, sub.body)
	}
	operator := e.adminToken("producer", registry.RoleOperator, "")
	for range server.MaxWaitsPerAdminToken {
		go func() { done <- e.api("GET", "/jobs/"+job.ID+"?wait=60", operator, nil) }()
	}
	eventually(t, "the operator's requests to wait", func() bool {
		return strings.Contains(string(e.getMetrics().body), fmt.Sprintf("tether_admin_waits_held %d", 2*server.MaxWaitsPerAdminToken))
	})
	sub = e.api("POST", "/jobs?wait=60", operator, map[string]any{"cluster": "prod", "kind": "apply",
		"payload": json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"more","namespace":"apps"}}`)})
	sub.want(t, http.StatusAccepted)
	if sub.header.Get("Retry-After") == "" || !strings.Contains(string(sub.body), `"queued"`) {
		t.Fatalf("a submission past the cap: %s %s", sub.header, sub.body)
	}
	e.api("POST", "/jobs/"+job.ID+"/cancel", root, nil).want(t, http.StatusOK)
	for range 2 * server.MaxWaitsPerAdminToken {
		if r := <-done; r.status != http.StatusOK {
			t.Fatalf("a held wait: %d %s", r.status, r.body)
		}
	}
}
