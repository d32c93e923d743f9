package agent_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/registry"
)

// signedCluster creates a cluster that requires signed payloads and
// registers an agent state dir for it through server (tether or a proxy).
func (e *env) signedCluster(name, server string) (*registry.Cluster, string) {
	e.t.Helper()
	c, tok, err := e.reg.CreateCluster(admin, registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"team-a", "team-b"},
		Policy: registry.Policy{LeaseSeconds: 6, MaxAttempts: 5, RequireSignedPayloads: true}}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	dir := filepath.Join(e.dir, name)
	if _, err := agent.Register(context.Background(), server, tok.Secret.Reveal(), dir, nil, fast); err != nil {
		e.t.Fatal(err)
	}
	return c, dir
}

func (e *env) waitAudit(clusterID, key string) *registry.Event {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, _ := e.reg.ListEvents(admin, registry.EventListParams{ClusterID: clusterID, Kinds: []string{"Audit"}})
		for i := range evs {
			if evs[i].EventKey == key {
				return &evs[i]
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no Audit event %s", key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The reference agent verifies every job's signature before running it: a
// signed job runs; a job whose payload was changed on the way (a proxy
// rewrites its namespace) and a job without a signature on a cluster that
// requires one end failed, with an Audit event, and their command never runs.
func TestAgentVerifiesPayloadSignatures(t *testing.T) {
	e := newEnv(t)
	marker := filepath.Join(e.dir, "ran-")
	cmd := `cat >/dev/null; touch "` + marker + `$TETHER_JOB_ID"`

	c, dir := e.signedCluster("signed", e.url)
	e.run(dir, cmd, nil)
	ok := e.submit(c.ID, nil)
	if got := e.waitJob(ok.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("signed job: %s %q", got.State, got.Error)
	}

	// A proxy that changes the payload of every job it hands out.
	target, _ := url.Parse(e.url)
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.URL.Path != "/api/agent/jobs" {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			body = bytes.ReplaceAll(body, []byte(`"namespace":"team-a"`), []byte(`"namespace":"team-b"`))
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
			return nil
		},
	})
	defer proxy.Close()
	tc, tdir := e.signedCluster("tampered", proxy.URL)
	e.run(tdir, cmd, nil)
	bad := e.submit(tc.ID, nil)
	got := e.waitJob(bad.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "does not match its signature") {
		t.Fatalf("tampered job: %s %q, want failed: does not match its signature", got.State, got.Error)
	}
	if ev := e.waitAudit(tc.ID, agent.EventPayloadSignatureInvalid); !strings.Contains(ev.Message, bad.ID) {
		t.Errorf("audit event %q does not name the job", ev.Message)
	}

	// Signing turned off behind the agent's back: its credential says the
	// cluster signs, so an unsigned job is refused.
	if _, err := e.reg.ModifyCluster(admin, c.ID, func(s *registry.ClusterSpec) error {
		s.Policy.RequireSignedPayloads = false
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	unsigned := e.submit(c.ID, nil)
	got = e.waitJob(unsigned.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "carries no signature") {
		t.Fatalf("unsigned job: %s %q, want failed: carries no signature", got.State, got.Error)
	}
	for _, id := range []string{bad.ID, unsigned.ID} {
		if fileExists(marker + id) {
			t.Errorf("job %s ran although its signature was refused", id)
		}
	}
	if !fileExists(marker + ok.ID) {
		t.Error("the signed job's command did not run")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// A job whose signing key the agent cannot fetch right now (tether or the
// network is down) is not failed for it: the agent leaves it unclaimed, and
// it runs once the keys can be fetched. An agent that stops meanwhile leaves
// it queued, unclaimed, its command not run.
func TestSigningKeysUnreachableLeavesTheJobQueued(t *testing.T) {
	e := newEnv(t)
	var keysDown atomic.Bool
	var keyFetches atomic.Int64
	proxy := injector(t, e.url, func(r *http.Request) int {
		if r.URL.Path != "/api/agent/keys" {
			return 0
		}
		if n := keyFetches.Add(1); keysDown.Load() || n <= 2 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	c, dir := e.signedCluster("keys-down", proxy)
	marker := filepath.Join(e.dir, "ran-")
	cmd := `cat >/dev/null; touch "` + marker + `$TETHER_JOB_ID"`
	// A new signing key: the credential names the old one, so the agent
	// must fetch the key set to verify jobs signed with the new one.
	if _, err := e.reg.RotateSigningKey(admin, c.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	stop := e.run(dir, cmd, nil)
	first := e.submit(c.ID, nil)
	if got := e.waitJob(first.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("job verified after two failed key fetches: %s %q, want succeeded", got.State, got.Error)
	}

	keysDown.Store(true)
	if _, err := e.reg.RotateSigningKey(admin, c.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	before := keyFetches.Load()
	second := e.submit(c.ID, nil)
	for deadline := time.Now().Add(30 * time.Second); keyFetches.Load() < before+2; {
		if time.Now().After(deadline) {
			t.Fatal("the agent never tried to fetch the new signing key")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	got, err := e.reg.GetJob(admin, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != registry.JobQueued || got.ClaimID != "" {
		t.Fatalf("job whose keys could not be fetched: %s claim %q error %q, want queued and unclaimed", got.State, got.ClaimID, got.Error)
	}
	if fileExists(marker + second.ID) {
		t.Error("the job ran although its signature was never verified")
	}
}
