package server_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

// A job whose payload cannot be signed (no RFC 8785 form; stored before
// submit refused such payloads, or slipped past) does not hold back the
// jobs behind it: a poll of the signing cluster answers 200 with the good
// jobs, signed, and the poisoned job ends failed with a reason an operator
// sees in the admin API, the audit trail and the server's log. Issue 28
// item 2.
func TestPollDeliversAroundAnUndeliverableJob(t *testing.T) {
	e := newEnv(t)
	_, tok := e.cluster("signed", func(s *registry.ClusterSpec) { s.Policy.RequireSignedPayloads = true })
	a := e.register(tok)
	now := e.clock.Now()
	const poisoned = "j-01poisoned0000000000000000"
	_, _, err := e.store.JobInsert(adminCtx(), registry.JobInsertParams{
		Job: registry.Job{
			ID: poisoned, ClusterID: a.clusterID, Kind: registry.KindApply, State: registry.JobQueued, Attempt: 1,
			Payload:   json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"},"data":{"n":1e999}}`),
			CreatedAt: now, UpdatedAt: now, SubmittedBy: "test",
		},
		History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted, Actor: "test"},
		Audit:   registry.AuditEntry{At: now, Actor: "test", Action: registry.AuditJobSubmit, ClusterID: a.clusterID, TargetKind: "job", TargetID: poisoned},
	})
	if err != nil {
		t.Fatal(err)
	}
	good := []string{e.submit(a.clusterID), e.submit(a.clusterID)}

	jobs := pollSigned(t, a)
	set := keySet(t, a)
	if len(jobs) != len(good) {
		t.Fatalf("polled %d jobs, want the %d good ones", len(jobs), len(good))
	}
	for i, j := range jobs {
		if j.ID != good[i] {
			t.Fatalf("polled %s at %d, want %s", j.ID, i, good[i])
		}
		verifyIndependently(t, set, a.clusterID, j)
	}

	admin := e.adminToken("root", registry.RoleAdmin, "")
	r := e.api("GET", "/jobs/"+poisoned, admin, nil)
	r.want(t, http.StatusOK)
	got := decodeAs[registry.Job](t, r)
	if got.State != registry.JobFailed || !strings.HasPrefix(got.Error, "undeliverable: ") || !strings.Contains(got.Error, "RFC 8785") {
		t.Fatalf("poisoned job: %s %q, want failed with an undeliverable reason", got.State, got.Error)
	}
	r = e.api("GET", "/audit?action="+registry.AuditJobUndeliverable, admin, nil)
	r.want(t, http.StatusOK)
	if !strings.Contains(string(r.body), poisoned) {
		t.Fatalf("the audit trail does not name the undeliverable job: %s", r.body)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "job is undeliverable") || !strings.Contains(logs, poisoned) {
		t.Fatalf("the server's log does not name the undeliverable job:\n%s", logs)
	}
}

// The legacy payload-only signature is sent only where the policy allows
// it (the admin API reaches the setting), and then an old-style verifier
// (JCS of the payload alone, what agents before the bound form check)
// still accepts the job; the bound signature is there beside it.
func TestLegacyPayloadSignaturesWhereAllowed(t *testing.T) {
	e := newEnv(t)
	_, tok := e.cluster("signed", func(s *registry.ClusterSpec) { s.Policy.RequireSignedPayloads = true })
	a := e.register(tok)
	e.submit(a.clusterID)
	for _, j := range pollSigned(t, a) {
		if j.Signature != nil {
			t.Fatalf("job %s carries the legacy signature by default", j.ID)
		}
	}

	admin := e.adminToken("root", registry.RoleAdmin, "")
	r := e.api("PATCH", "/clusters/signed", admin, map[string]any{"policy": map[string]any{"allowLegacyPayloadSignatures": true}}, withHeader("If-Match", `"1"`))
	r.want(t, http.StatusOK)
	if c := decodeAs[registry.Cluster](t, r); !c.Policy.AllowLegacyPayloadSignatures || !c.Policy.RequireSignedPayloads {
		t.Fatalf("policy after the patch: %+v", c.Policy)
	}
	e.submit(a.clusterID)
	jobs := pollSigned(t, a)
	set := keySet(t, a)
	if len(jobs) != 1 || jobs[0].Signature == nil || jobs[0].JobSignature == nil {
		t.Fatalf("jobs %+v, want one with both signatures", jobs)
	}
	// The old agent's check, with nothing of tether's.
	pub := keyOf(t, set, *jobs[0].SignatureKeyID)
	canonical, err := jcs.Transform(jobs[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if sig, err := base64Std(*jobs[0].Signature); err != nil || !ed25519.Verify(pub, canonical, sig) {
		t.Fatalf("an old-style verifier refuses the legacy signature (%v)", err)
	}
	sig, err := base64Std(*jobs[0].JobSignature)
	if err != nil || !ed25519.Verify(pub, boundMessage(t, a.clusterID, jobs[0].ID, jobs[0].Kind, jobs[0].ExpiresAt, jobs[0].Payload), sig) {
		t.Fatal("the bound signature beside it does not verify")
	}
}

// A replica whose key file cannot open a job's sealed payload or its
// cluster's signing key (the wrong --key-file) does not fail the job and
// does not hide it: it answers the poll without it, logs the job and the
// reason, and the replica with the right key file hands it out at once.
func TestReplicaWithoutTheKeyLeavesTheJobForAnother(t *testing.T) {
	e := newEnv(t)
	key, err := jwe.GenerateX25519()
	if err != nil {
		t.Fatal(err)
	}
	_, tok := e.cluster("sealed", func(s *registry.ClusterSpec) {
		s.Policy.RequireSignedPayloads, s.Policy.RequireEncryptedPayloads = true, true
		s.PublicKey = registry.AgentPublicKey(key.Public().JWK())
	})
	a := e.register(tok) // its answer makes the signing key, with this replica's key file
	id := e.submit(a.clusterID)

	// The other replica: the same database, another key file.
	other := *e
	other.logs = &syncBuffer{}
	reg := registry.New(e.store, registry.Config{Clock: e.clock, Keyring: registry.NewKeyFile(filepath.Join(t.TempDir(), "other.key"))})
	srv := server.New(reg, server.Config{Logger: slog.New(slog.NewTextHandler(other.logs, nil)), RateLimit: -1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served; reg.Close() })
	other.url = "http://" + ln.Addr().String()
	viaOther := *a
	viaOther.e = &other

	r := viaOther.poll(0)
	r.want(t, http.StatusOK)
	if strings.Contains(string(r.body), id) {
		t.Fatalf("the replica without the key handed the job out: %s", r.body)
	}
	if logs := other.logs.String(); !strings.Contains(logs, "cannot prepare job for delivery on this replica") || !strings.Contains(logs, id) {
		t.Fatalf("the replica without the key does not log the job it set aside:\n%s", logs)
	}
	if j, err := e.reg.GetJob(adminCtx(), id); err != nil || j.State != registry.JobQueued {
		t.Fatalf("the set-aside job: %+v, %v; want it queued", j, err)
	}
	r = a.poll(0)
	r.want(t, http.StatusOK)
	if !strings.Contains(string(r.body), id) || !strings.Contains(string(r.body), `"encryptedPayload"`) {
		t.Fatalf("the replica with the key does not hand the job out at once: %s", r.body)
	}
}
