package agent_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/jobsig"
	"github.com/tetherhq/tether/registry"
)

// relay is a reverse proxy in front of tether, run by an attacker: a
// terminating proxy or a compromised relay (docs/security.md's threat). It
// rewrites what it passes on.
type relay struct {
	url string

	mu sync.Mutex
	// job rewrites each job of a poll's answer (nil: passed on).
	job func(clusterID string, j map[string]any)
	// extraKeys are appended to GET /api/agent/keys answers.
	extraKeys []map[string]any
	// credKey, when set, replaces serverPublicKey in register and rotate
	// answers.
	credKey map[string]any
	// dropCredKey removes serverPublicKey from rotate answers.
	dropCredKey bool
	// keyFetches counts GET /api/agent/keys.
	keyFetches atomic.Int64
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	u, _ := url.Parse(target)
	r := &relay{}
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		ModifyResponse: r.modify,
	})
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *relay) set(f func(r *relay)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func (r *relay) modify(resp *http.Response) error {
	path := resp.Request.URL.Path
	if path == "/api/agent/keys" {
		r.keyFetches.Add(1)
	}
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var doc map[string]any
	if json.Unmarshal(body, &doc) == nil {
		r.mu.Lock()
		switch {
		case path == "/api/agent/jobs" && r.job != nil:
			for _, j := range doc["jobs"].([]any) {
				r.job(resp.Request.URL.Query().Get("cluster"), j.(map[string]any))
			}
		case path == "/api/agent/keys":
			for _, k := range r.extraKeys {
				doc["keys"] = append(doc["keys"].([]any), k)
			}
		case (path == "/api/agent/register" || path == "/api/agent/credentials/rotate") && r.credKey != nil:
			doc["serverPublicKey"] = r.credKey
		case path == "/api/agent/credentials/rotate" && r.dropCredKey:
			delete(doc, "serverPublicKey")
		}
		r.mu.Unlock()
		body, _ = json.Marshal(doc)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// forge replaces a job's payload with the attacker's and signs the job
// correctly, in the bound format, with the attacker's key: only the key's
// provenance can give it away.
func forge(priv ed25519.PrivateKey, kid, clusterID string, j map[string]any, payload string) {
	var expires time.Time
	if s, ok := j["expiresAt"].(string); ok {
		expires, _ = time.Parse(time.RFC3339Nano, s)
	}
	sig, err := jobsig.SignJob(priv, jobsig.Job{ClusterID: clusterID, JobID: j["id"].(string), Kind: j["kind"].(string), ExpiresAt: expires, Payload: json.RawMessage(payload)})
	if err != nil {
		panic(err)
	}
	legacy, _ := registry.SignPayload(priv, []byte(payload))
	j["payload"] = json.RawMessage(payload)
	j["jobSignature"], j["jobSignatureFormat"], j["signatureKeyId"], j["signature"] = sig, jobsig.FormatV2, kid, legacy
}

const evilPayload = `{"apiVersion":"v1","kind":"Namespace","name":"kube-system","namespace":"team-a"}`

// A relay that swaps a job's payload, signs the job with its own key under
// a new kid and adds that key to the key set (claiming the cluster's key
// endorsed it) does not get its payload run: the agent trusts only keys
// that chain to the one its register answer pinned. The job ends failed
// with the signature reason and an Audit event. Nor does a relay that also
// swaps the key in the answer to a credential rotation. Issue 28 item 1.
func TestRelayCannotIntroduceItsOwnKey(t *testing.T) {
	e := newEnv(t)
	r := newRelay(t, e.url)
	c, dir := e.signedCluster("relayed", r.url)
	set, err := e.reg.SigningKeySet(admin, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := ed25519.GenerateKey(nil)
	const kid = "sk-relay"
	relayKey := map[string]any{
		"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub), "kid": kid, "alg": "EdDSA", "use": "sig",
		// An endorsement that names the cluster's real key, signed by the
		// relay's own: it does not verify.
		"endorsedBy": set[0].Kid, "endorsement": jobsig.Endorse(priv, c.ID, kid, pub),
	}
	r.set(func(r *relay) {
		r.extraKeys = []map[string]any{relayKey}
		r.job = func(clusterID string, j map[string]any) { forge(priv, kid, clusterID, j, evilPayload) }
	})
	marker := filepath.Join(e.dir, "ran-")
	e.run(dir, `cat >/dev/null; touch "`+marker+`$TETHER_JOB_ID"`, nil)

	first := e.submit(c.ID, nil)
	got := e.waitJob(first.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "which no key this agent trusts has endorsed") {
		t.Fatalf("relayed job: %s %q, want failed: no key this agent trusts has endorsed", got.State, got.Error)
	}
	if ev := e.waitAudit(c.ID, agent.EventPayloadSignatureInvalid); !strings.Contains(ev.Message, first.ID) {
		t.Errorf("audit event %q does not name the job", ev.Message)
	}

	// The relay now also answers the agent's credential rotation with its
	// own key as serverPublicKey.
	r.set(func(r *relay) { r.credKey = relayKey })
	before, err := agent.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.ForceRotation(admin, c.ID, "test"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, err := agent.LoadState(dir)
		if err == nil && st.Credential.Token != before.Credential.Token {
			if st.Credential.ServerPublicKey == nil || st.Credential.ServerPublicKey.Kid != kid {
				t.Fatalf("the relay's rotate answer did not reach the agent: %+v", st.Credential.ServerPublicKey)
			}
			if len(st.TrustedKeys) != 1 || st.TrustedKeys[0].Kid != set[0].Kid {
				t.Fatalf("trusted keys after the relayed rotation: %+v, want only %s", st.TrustedKeys, set[0].Kid)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not rotate its credential")
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := e.submit(c.ID, nil)
	got = e.waitJob(second.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "which no key this agent trusts has endorsed") {
		t.Fatalf("job after the relayed rotation: %s %q, want failed: no key this agent trusts has endorsed", got.State, got.Error)
	}
	for _, id := range []string{first.ID, second.ID} {
		if fileExists(marker + id) {
			t.Errorf("the relay's payload ran as job %s", id)
		}
	}
}

// A relay that drops serverPublicKey from the answer to a credential
// rotation, as if the cluster had stopped signing, cannot then hand the
// agent unsigned jobs: once an agent trusts a key, every job must carry a
// signature by a trusted key, whatever a later answer says.
func TestRelayCannotTurnVerificationOffAtRotation(t *testing.T) {
	e := newEnv(t)
	r := newRelay(t, e.url)
	c, dir := e.signedCluster("downgraded", r.url)
	r.set(func(r *relay) {
		r.dropCredKey = true
		r.job = func(_ string, j map[string]any) {
			j["payload"] = json.RawMessage(evilPayload)
			for _, f := range []string{"jobSignature", "jobSignatureFormat", "signatureKeyId", "signature"} {
				delete(j, f)
			}
		}
	})
	marker := filepath.Join(e.dir, "ran-")
	e.run(dir, `cat >/dev/null; touch "`+marker+`$TETHER_JOB_ID"`, nil)
	before, err := agent.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.ForceRotation(admin, c.ID, "test"); err != nil {
		t.Fatal(err)
	}
	// A job wakes the agent's poll; its answer tells it to rotate.
	first := e.submit(c.ID, nil)
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, err := agent.LoadState(dir)
		if err == nil && st.Credential.Token != before.Credential.Token {
			if st.Credential.ServerPublicKey != nil {
				t.Fatal("the relay's rotate answer did not reach the agent")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not rotate its credential")
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := e.submit(c.ID, nil)
	for _, id := range []string{first.ID, second.ID} {
		got := e.waitJob(id, "finished", terminal)
		if got.State != registry.JobFailed || !strings.Contains(got.Error, "carries no signature") {
			t.Errorf("unsigned job %s: %s %q, want failed: carries no signature", id, got.State, got.Error)
		}
		if fileExists(marker + id) {
			t.Errorf("the relay's unsigned payload ran as job %s", id)
		}
	}
}

// A valid signed job's payload and signature moved into another job are
// refused: the bound signature covers the job's id (and cluster, kind,
// expiry). Stripping the bound signature to fall back on the legacy
// payload-only one, which the cluster still sends for older agents, does
// not work either: an agent that pinned a key requires the bound form.
func TestSignedPayloadCannotBeMovedToAnotherJob(t *testing.T) {
	e := newEnv(t)
	r := newRelay(t, e.url)
	c, dir := e.signedCluster("replayed", r.url)
	if _, err := e.reg.ModifyCluster(admin, c.ID, func(s *registry.ClusterSpec) error {
		s.Policy.AllowLegacyPayloadSignatures = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var captured map[string]any // the first job the relay saw, as tether signed it
	r.set(func(r *relay) {
		r.job = func(_ string, j map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			if captured == nil {
				captured = map[string]any{}
				for _, f := range []string{"payload", "signature", "jobSignature", "jobSignatureFormat", "signatureKeyId"} {
					captured[f] = j[f]
				}
				return
			}
			for f, v := range captured {
				j[f] = v
			}
			if j["kind"] == "apply" { // the downgrade: only the legacy signature is left
				delete(j, "jobSignature")
				delete(j, "jobSignatureFormat")
			}
		}
	})
	marker := filepath.Join(e.dir, "ran-")
	e.run(dir, `cat >/dev/null; touch "`+marker+`$TETHER_JOB_ID"`, nil)

	original := e.submit(c.ID, nil)
	if got := e.waitJob(original.ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("the original job: %s %q, want succeeded", got.State, got.Error)
	}
	moved := e.submit(c.ID, func(s *registry.JobSubmission) {
		s.Payload = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"other","namespace":"team-a"}`)
	})
	got := e.waitJob(moved.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "does not match its signature") {
		t.Fatalf("job with another job's payload and signature: %s %q, want failed: does not match its signature", got.State, got.Error)
	}
	downgraded := e.submit(c.ID, func(s *registry.JobSubmission) {
		s.Kind = registry.KindApply
		s.Payload = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-a"}}`)
	})
	got = e.waitJob(downgraded.ID, "finished", terminal)
	if got.State != registry.JobFailed || !strings.Contains(got.Error, "carries only a legacy payload signature") {
		t.Fatalf("job left with only the moved legacy signature: %s %q, want failed: carries only a legacy payload signature", got.State, got.Error)
	}
	for _, id := range []string{moved.ID, downgraded.ID} {
		if fileExists(marker + id) {
			t.Errorf("job %s ran with another job's signed payload", id)
		}
	}
}

// The keys an agent learns from endorsements are kept in its state file: a
// restarted agent verifies jobs signed with them without asking for the
// key set (here it could not: the relay refuses it).
func TestLearnedKeysSurviveARestart(t *testing.T) {
	e := newEnv(t)
	var keysRefused atomic.Bool
	var fetches atomic.Int64
	proxy := injector(t, e.url, func(r *http.Request) int {
		if r.URL.Path == "/api/agent/keys" {
			fetches.Add(1)
			if keysRefused.Load() {
				return http.StatusForbidden
			}
		}
		return 0
	})
	c, dir := e.signedCluster("restarted", proxy)
	rotated, err := e.reg.RotateSigningKey(admin, c.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stop := e.run(dir, `cat >/dev/null`, nil)
	if got := e.waitJob(e.submit(c.ID, nil).ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("job signed with the rotated key: %s %q", got.State, got.Error)
	}
	stop()
	e.waitNoHeldPolls() // else the stopped agent's poll may take (and hide) the next job
	st, err := agent.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.TrustedKeys) != 2 || st.TrustedKeys[1].Kid != rotated.ID {
		t.Fatalf("trusted keys in the state file: %+v, want the pinned key and %s", st.TrustedKeys, rotated.ID)
	}

	keysRefused.Store(true)
	before := fetches.Load()
	e.run(dir, `cat >/dev/null`, nil)
	if got := e.waitJob(e.submit(c.ID, nil).ID, "finished", terminal); got.State != registry.JobSucceeded {
		t.Fatalf("after a restart: %s %q, want succeeded with the stored key", got.State, got.Error)
	}
	if n := fetches.Load() - before; n != 0 {
		t.Fatalf("the restarted agent asked for the key set %d times", n)
	}
}
