package server_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lestrrat-go/jwx/v3/jwa"
	jwxjwe "github.com/lestrrat-go/jwx/v3/jwe"
	jwxjwk "github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/tetherhq/tether/internal/jwe"
	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

type encryptedJob struct {
	ID               string           `json:"id"`
	Kind             string           `json:"kind"`
	ExpiresAt        *time.Time       `json:"expiresAt"`
	Payload          *json.RawMessage `json:"payload"`
	EncryptedPayload string           `json:"encryptedPayload"`
	JobSignature     string           `json:"jobSignature"`
	SignatureKeyID   string           `json:"signatureKeyId"`
}

// TestEncryptedPayloads goes through encrypted payloads over real HTTP on
// both stores: the agent's key at register, the policy toggle, a job handed
// out as a JWE that an independent implementation (lestrrat-go/jwx) opens
// and whose signature covers the plaintext, reads that withhold the
// payload, an audited explicit viewing, and a database without the payload
// in it.
func TestEncryptedPayloads(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		e := newEnv(t)
		encryptedPayloadsOver(t, e, func(marker string) {
			// The file, its WAL and its shared memory, with the WAL live.
			for _, f := range []string{e.dbPath, e.dbPath + "-wal", e.dbPath + "-shm"} {
				b, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				if bytes.Contains(b, []byte(marker)) {
					t.Fatalf("%s holds the sealed payload in plain text", f)
				}
			}
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn := os.Getenv("TETHER_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("TETHER_TEST_POSTGRES_DSN is not set: the PostgreSQL run is skipped")
		}
		var conn *pgx.Conn
		e := newEnvOn(t, func(string) (registry.Store, error) {
			st, c, err := postgresWithConn(t)
			conn = c
			return st, err
		}, registry.Config{})
		encryptedPayloadsOver(t, e, func(marker string) {
			var n int
			err := conn.QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE position($1::bytea IN payload) > 0`, []byte(marker)).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			var rows int
			if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE payload_sealed`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if n != 0 || rows == 0 {
				t.Fatalf("%d job rows hold the payload in plain text (%d sealed rows), want 0", n, rows)
			}
		})
	})
}

func encryptedPayloadsOver(t *testing.T, e *env, atRest func(marker string)) {
	admin := e.adminToken("root", registry.RoleAdmin, "")
	viewer := e.adminToken("look", registry.RoleViewer, "")
	key, err := jwe.GenerateX25519()
	if err != nil {
		t.Fatal(err)
	}

	// A malformed key, a private key, a signing key and an X25519 point of
	// small order (every agreement with it is all zeros, RFC 7748 §6.1, so
	// no job could ever be encrypted to it) are refused with a 400 naming
	// the field, before the token is spent.
	c, tok := e.cluster("sealed")
	priv, _ := key.MarshalPrivateJWK()
	for _, bad := range []string{`{"kty":"OKP","crv":"X25519","x":"AAAA"}`, string(priv), `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`, `"nope"`,
		`{"kty":"OKP","crv":"X25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, `{"kty":"OKP","crv":"X25519","x":"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`} {
		r := e.do(http.MethodPost, "/api/agent/register", withBody(`{"registrationToken":"`+tok+`","publicKey":`+bad+`}`))
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "publicKey") {
			t.Fatalf("register with publicKey %.30s: %d %s", bad, r.status, r.body)
		}
	}
	r := e.do(http.MethodPost, "/api/agent/register", withBody(`{"registrationToken":"`+tok+`","publicKey":`+key.Public().JWK()+`}`))
	r.want(t, http.StatusOK)
	var ans credentialAnswer
	r.decode(t, &ans)
	a := e.agentFrom(ans)

	// Turning encryption on without a key is refused, saying how to set one.
	_, tok2 := e.cluster("keyless")
	_ = tok2
	got := e.api("GET", "/clusters/keyless", admin, nil)
	wantAPIError(t, e.api("PATCH", "/clusters/keyless", admin, map[string]any{"policy": map[string]any{"requireEncryptedPayloads": true}},
		withHeader("If-Match", got.header.Get("ETag"))), 422, "public_key_required", "--public-key-file")

	// The registered cluster has the agent's key; turn encryption and
	// signing on.
	got = e.api("GET", "/clusters/"+c.ID, admin, nil)
	var cl map[string]any
	if err := json.Unmarshal(got.body, &cl); err != nil {
		t.Fatal(err)
	}
	if pk, _ := cl["publicKey"].(map[string]any); pk == nil || pk["kid"] != key.Public().Thumbprint() || pk["d"] != nil {
		t.Fatalf("cluster publicKey = %v, want the agent's JWK with kid %s", cl["publicKey"], key.Public().Thumbprint())
	}
	r = e.api("PATCH", "/clusters/"+c.ID, admin, map[string]any{"policy": map[string]any{"requireEncryptedPayloads": true, "requireSignedPayloads": true}},
		withHeader("If-Match", got.header.Get("ETag")))
	r.want(t, http.StatusOK)

	marker := fmt.Sprintf("s3cr3t-%x", rand.Uint64())
	payload := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"default"},"stringData":{"password":"` + marker + `"}}`
	r = e.api("POST", "/jobs", admin, map[string]any{"cluster": c.ID, "kind": "apply", "payload": json.RawMessage(payload)})
	if r.status != http.StatusAccepted || strings.Contains(string(r.body), marker) {
		t.Fatalf("submit: %d %s (the answer must not show the payload)", r.status, r.body)
	}
	jobID := decodeAs[registry.Job](t, r).ID

	// The agent gets encryptedPayload instead of payload.
	pr := a.poll(0)
	pr.want(t, http.StatusOK)
	if strings.Contains(string(pr.body), marker) || strings.Contains(string(pr.body), `"payload"`) {
		t.Fatalf("the poll answer shows the payload: %s", pr.body)
	}
	var jobs struct {
		Jobs []encryptedJob `json:"jobs"`
	}
	pr.decode(t, &jobs)
	if len(jobs.Jobs) != 1 || jobs.Jobs[0].EncryptedPayload == "" || jobs.Jobs[0].Payload != nil {
		t.Fatalf("polled %s, want one job with encryptedPayload only", pr.body)
	}
	j := jobs.Jobs[0]
	// An independent implementation decrypts it.
	msg, err := jwxjwe.Parse([]byte(j.EncryptedPayload))
	if err != nil {
		t.Fatal(err)
	}
	h := msg.ProtectedHeaders()
	alg, _ := h.Algorithm()
	enc, _ := h.ContentEncryption()
	kid, _ := h.KeyID()
	if alg.String() != "ECDH-ES+A256KW" || enc.String() != "A256GCM" || kid != key.Public().Thumbprint() {
		t.Fatalf("JWE header alg %v enc %v kid %q", alg, enc, kid)
	}
	rawPriv, err := jwxjwk.ParseKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := jwxjwe.Decrypt([]byte(j.EncryptedPayload), jwxjwe.WithKey(jwa.ECDH_ES_A256KW(), rawPriv))
	if err != nil {
		t.Fatalf("jwx does not decrypt the payload: %v", err)
	}
	if !strings.Contains(string(plain), marker) {
		t.Fatalf("decrypted %s", plain)
	}
	// The signature covers the plaintext.
	set := keySet(t, a)
	pub, err := set[0].Ed25519PublicKey()
	if err != nil || set[0].Kid != j.SignatureKeyID {
		t.Fatalf("key set %+v for signature key %s: %v", set, j.SignatureKeyID, err)
	}
	sig, err := base64Std(j.JobSignature)
	if err != nil || !ed25519.Verify(pub, boundMessage(t, c.ID, j.ID, j.Kind, j.ExpiresAt, plain), sig) {
		t.Fatal("the signature does not verify over the decrypted payload")
	}

	// Reads withhold it; an explicit, audited request shows it.
	for _, path := range []string{"/jobs/" + jobID, "/jobs?cluster=" + c.ID} {
		r = e.api("GET", path, admin, nil)
		r.want(t, http.StatusOK)
		if strings.Contains(string(r.body), marker) || !strings.Contains(string(r.body), `"payloadSealed":true`) {
			t.Fatalf("GET %s shows the sealed payload or does not say it is sealed: %s", path, r.body)
		}
	}
	// The watch stream's snapshot withholds it too.
	w := e.watch(t, admin, "?kinds=jobs", "")
	seen := false
	for {
		ev := w.next(t)
		if ev.event == "end_of_snapshot" {
			break
		}
		if ev.data.ID == jobID {
			seen = true
			if strings.Contains(string(ev.data.Object), marker) || !strings.Contains(string(ev.data.Object), `"payloadSealed":true`) {
				t.Fatalf("the watch stream shows the sealed payload: %s", ev.data.Object)
			}
		}
	}
	w.cancel()
	if !seen {
		t.Fatal("the watch snapshot does not hold the job")
	}
	wantAPIError(t, e.api("GET", "/jobs/"+jobID+"?showPayload=true", viewer, nil), 403, "forbidden")
	wantAPIError(t, e.api("GET", "/jobs/"+jobID+"?showPayload=maybe", admin, nil), 400, "invalid", "showPayload")
	r = e.api("GET", "/jobs/"+jobID+"?showPayload=true", admin, nil)
	r.want(t, http.StatusOK)
	if !strings.Contains(string(r.body), marker) {
		t.Fatalf("showPayload=true does not show it: %s", r.body)
	}
	r = e.api("GET", "/audit?limit=100", admin, nil)
	if !strings.Contains(string(r.body), registry.AuditJobPayloadViewed) || strings.Contains(string(r.body), marker) {
		t.Fatalf("audit trail: %s, want a %s entry without the payload", r.body, registry.AuditJobPayloadViewed)
	}

	// Not in the database, not in the logs.
	atRest(marker)
	if strings.Contains(e.logs.String(), marker) {
		t.Fatal("the server's log holds the payload")
	}
}

// postgresWithConn is freshPostgres that also returns a connection to the
// schema, to look at the rows as stored.
func postgresWithConn(t *testing.T) (registry.Store, *pgx.Conn, error) {
	t.Helper()
	dsn, _ := pgtest.Schema(t, "tether_enc")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn) // its search_path is the schema
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	return st, conn, err
}
