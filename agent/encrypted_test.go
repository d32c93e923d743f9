package agent_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// encryptedCluster registers an agent state dir through server (tether or
// a proxy) for a new cluster, then turns encrypted (and signed) payloads on:
// the agent's key reached tether at register.
func (e *env) encryptedCluster(name, server string) (*registry.Cluster, string) {
	e.t.Helper()
	c, tok, err := e.reg.CreateCluster(admin, registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"team-a"},
		Policy: registry.Policy{LeaseSeconds: 6, MaxAttempts: 5}}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	dir := filepath.Join(e.dir, name)
	if _, err := agent.Register(context.Background(), server, tok.Secret.Reveal(), dir, nil, fast); err != nil {
		e.t.Fatal(err)
	}
	if c, err = e.reg.ModifyCluster(admin, c.ID, func(s *registry.ClusterSpec) error {
		s.Policy.RequireEncryptedPayloads, s.Policy.RequireSignedPayloads = true, true
		return nil
	}); err != nil {
		e.t.Fatalf("turn encryption on (the agent's key should be there): %v", err)
	}
	return c, dir
}

// The reference agent keeps its key in its state dir (mode 0600), sends it
// at register, decrypts an encrypted job and runs it with the plaintext
// (whose signature it verifies), without logging it; an encryptedPayload
// changed on the way ends the job failed with an Audit event
// JobPayloadDecryptionFailed, and its command never runs. On both stores.
func TestAgentDecryptsPayloads(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { agentDecrypts(t, newEnv(t)) })
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn := os.Getenv("TETHER_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("TETHER_TEST_POSTGRES_DSN is not set: the PostgreSQL run is skipped")
		}
		dir := t.TempDir()
		agentDecrypts(t, newEnvOn(t, dir, freshPostgres(t)))
	})
}

func agentDecrypts(t *testing.T, e *env) {
	out := filepath.Join(e.dir, "stdin-")
	cmd := `cat > "` + out + `$TETHER_JOB_ID"`
	logs := &lockedBuffer{}
	withLogs := func(c *agent.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}

	c, dir := e.encryptedCluster("sealed", e.url)
	info, err := os.Stat(filepath.Join(dir, "encryption-key.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("encryption key file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	e.run(dir, cmd, withLogs)
	marker := "pw-" + hex.EncodeToString(randBytes(8))
	ok := e.submit(c.ID, func(s *registry.JobSubmission) {
		s.Payload = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a","data":{"pw":"` + marker + `"}}`)
	})
	if got := e.waitJob(ok.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("encrypted job: %s %q", got.State, got.Error)
	}
	stdin, err := os.ReadFile(out + ok.ID)
	if err != nil || !strings.Contains(string(stdin), marker) || strings.Contains(string(stdin), "encryptedPayload") {
		t.Fatalf("the command's input %s (%v): want the decrypted payload", stdin, err)
	}

	// A proxy that changes a character of every encryptedPayload.
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
			var ans map[string][]map[string]any
			if json.Unmarshal(body, &ans) == nil {
				for _, j := range ans["jobs"] {
					if enc, ok := j["encryptedPayload"].(string); ok {
						parts := strings.Split(enc, ".")
						ct := []byte(parts[3])
						if i := len(ct) / 2; ct[i] == 'A' { // still base64url: changes the ciphertext
							ct[i] = 'B'
						} else {
							ct[i] = 'A'
						}
						parts[3] = string(ct)
						j["encryptedPayload"] = strings.Join(parts, ".")
					}
				}
				body, _ = json.Marshal(ans)
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
			return nil
		},
	})
	defer proxy.Close()
	tc, tdir := e.encryptedCluster("tampered", proxy.URL)
	e.run(tdir, cmd, withLogs)
	bad := e.submit(tc.ID, func(s *registry.JobSubmission) {
		s.Payload = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a","data":{"pw":"` + marker + `"}}`)
	})
	got := e.waitJob(bad.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "does not decrypt") {
		t.Fatalf("tampered job: %s %q, want failed: does not decrypt", got.State, got.Error)
	}
	if ev := e.waitAudit(tc.ID, agent.EventPayloadDecryptionFailed); !strings.Contains(ev.Message, bad.ID) {
		t.Errorf("audit event %q does not name the job", ev.Message)
	}
	if fileExists(out + bad.ID) {
		t.Error("the tampered job's command ran")
	}
	if strings.Contains(logs.String(), marker) {
		t.Fatal("the agent logged the decrypted payload")
	}
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// freshPostgres opens a store on a schema of its own, dropped at the end.
func freshPostgres(t *testing.T) registry.Store {
	t.Helper()
	dsn, _ := pgtest.Schema(t, "tether_agent")
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A key file that others may read (a restore that lost the mode, a careless
// copy) is refused, at start and at a new registration, with the chmod that
// fixes it; it is neither used nor replaced by a new key (which would leave
// the cluster's public key pointing at the old one).
func TestAgentRefusesAReadableEncryptionKey(t *testing.T) {
	e := newEnv(t)
	c, dir := e.encryptedCluster("loose", e.url)
	path := filepath.Join(dir, "encryption-key.json")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := agent.New(agent.Config{StateDir: dir, Command: "true", Retry: fast})
		if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Fatalf("agent.New with the key file at mode %04o: %v, want a refusal saying chmod 600", mode, err)
		}
		tok, err := e.reg.IssueToken(admin, c.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Register(context.Background(), e.url, tok.Secret.Reveal(), dir, nil, fast); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("agent.Register with the key file at mode %04o: %v, want a refusal", mode, err)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the refused key file changed (%v)", err)
	}
	// Once fixed, the same key is used.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.New(agent.Config{StateDir: dir, Command: "true", Retry: fast}); err != nil {
		t.Fatalf("agent.New after chmod 600: %v", err)
	}
}
