package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/webhook"
)

// The Standard Webhooks specification (standardwebhooks.com), as a
// receiver reads it, written here from its text and not from tether's
// signer:
//
//   - the secret is "whsec_" and the base64 of the key; the HMAC key is the
//     decoded bytes;
//   - the signed content is webhook-id, ".", webhook-timestamp, ".", and
//     the raw body;
//   - webhook-signature is a space-separated list of "v1,<base64 of
//     HMAC-SHA256(key, signed content)>"; any one matching is enough;
//   - webhook-timestamp is Unix seconds, refused when far from now.
func specVerify(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(n, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("timestamp %q", ts)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, sig := range strings.Split(sigs, " ") {
		version, value, _ := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(value)
		if version == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no v1 signature matches")
}

// legacyMAC is the v1 value X-Tether-Signature must carry for secret,
// as tether computed them before Standard Webhooks (and receivers still
// verify): hex HMAC-SHA256 keyed with the secret's text, over t "." body.
func legacyMAC(secret, header string, body []byte) (string, []string) {
	var ts string
	var v1 []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		if k == "t" {
			ts = v
		} else if k == "v1" {
			v1 = append(v1, v)
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	return hex.EncodeToString(mac.Sum(nil)), v1
}

// library verifies with the official Go library of Standard Webhooks.
func library(t *testing.T, secret string, h http.Header, body []byte) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("the Standard Webhooks library refuses the secret: %v", err)
	}
	return wh.Verify(body, h)
}

// headerReceiver is a real receiver on 127.0.0.1 that keeps every request's
// headers and body.
type headerReceiver struct {
	mu  sync.Mutex
	got []hookRequest
	srv *httptest.Server
}

type hookRequest struct {
	h    http.Header
	body []byte
}

func newHeaderReceiver(t *testing.T) *headerReceiver {
	r := &headerReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, hookRequest{req.Header.Clone(), body})
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// next sends what is due and returns the one request it made.
func (r *headerReceiver) next(t *testing.T, f *fixture) hookRequest {
	t.Helper()
	r.mu.Lock()
	before := len(r.got)
	r.mu.Unlock()
	if _, err := webhook.New(f.reg, webhook.Config{}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != before+1 {
		t.Fatalf("the receiver got %d requests, want 1", len(r.got)-before)
	}
	return r.got[before]
}

// TestStandardWebhooksSignatures: a delivery verifies with the official
// Standard Webhooks library and with a verifier written from the
// specification, and still with tether's own header, as before.
func TestStandardWebhooksSignatures(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "tether.db"), clocktest.New())
	rcv := newHeaderReceiver(t)
	_, secret, err := f.reg.CreateWebhook(f.ctx, "hook", rcv.srv.URL, []string{registry.WebhookJobFinished}, "")
	if err != nil {
		t.Fatal(err)
	}
	if key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret.Reveal(), "whsec_")); err != nil || len(key) < 24 {
		t.Fatalf("secret %q is not whsec_ and the base64 of at least 24 bytes (%d, %v)", secret.Reveal(), len(key), err)
	}
	f.finishJob(t)
	got := rcv.next(t, f)
	if err := specVerify(secret.Reveal(), got.h, got.body); err != nil {
		t.Errorf("by the specification: %v", err)
	}
	if err := library(t, secret.Reveal(), got.h, got.body); err != nil {
		t.Errorf("by the Standard Webhooks library: %v", err)
	}
	if err := library(t, "whsec_"+base64.StdEncoding.EncodeToString([]byte("not the secret, 24 bytes")), got.h, got.body); err == nil {
		t.Error("another secret verifies")
	}
	if err := library(t, secret.Reveal(), got.h, append(got.body, ' ')); err == nil {
		t.Error("a changed body verifies")
	}
	var body webhook.Body
	if err := json.Unmarshal(got.body, &body); err != nil || body.ID != got.h.Get("webhook-id") || got.h.Get(webhook.HeaderDelivery) != body.ID {
		t.Errorf("webhook-id %q, X-Tether-Delivery %q, body id %q: want one id", got.h.Get("webhook-id"), got.h.Get(webhook.HeaderDelivery), body.ID)
	}
	// The legacy header, for one release.
	want, v1 := legacyMAC(secret.Reveal(), got.h.Get(webhook.HeaderSignature), got.body)
	if len(v1) != 1 || v1[0] != want {
		t.Errorf("X-Tether-Signature %q, want v1=%s", got.h.Get(webhook.HeaderSignature), want)
	}
	if err := webhook.Verify(secret.Reveal(), got.h.Get(webhook.HeaderSignature), got.body, time.Now(), time.Minute); err != nil {
		t.Errorf("X-Tether-Signature: %v", err)
	}
}

// TestSecretsMadeBeforeVerifyBothWays: a webhook made before Standard
// Webhooks has a secret of whsec_ and 32 base32 letters, and its receiver
// verifies X-Tether-Signature keyed with that text. It keeps doing so,
// unchanged, and the same secret verifies webhook-signature in the
// Standard Webhooks library, which reads it as base64 (24 bytes).
func TestSecretsMadeBeforeVerifyBothWays(t *testing.T) {
	clock := clocktest.New()
	path := filepath.Join(t.TempDir(), "tether.db")
	f := open(t, path, clock)
	rcv := newHeaderReceiver(t)
	// As tether made secrets before: 20 random bytes in lowercase base32.
	old := "whsec_" + strings.ToLower(base32.StdEncoding.EncodeToString([]byte("twenty random bytes!")))[:32]
	sealed, err := registry.NewKeyFile(registry.KeyFilePath(path)).Seal([]byte(old), []byte("wh-old"))
	if err != nil {
		t.Fatal(err)
	}
	err = f.st.WebhookCreate(context.Background(), registry.WebhookCreateParams{
		Webhook: registry.Webhook{ID: "wh-old", Name: "old", URL: rcv.srv.URL, Events: []string{registry.WebhookJobFinished},
			CreatedAt: clock.Now(), CreatedBy: "admin:test", SealedSecret: sealed},
		Audit: registry.AuditEntry{At: clock.Now(), Actor: "admin:test", Action: "webhook.create", TargetKind: "webhook", TargetID: "wh-old"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.finishJob(t)
	got := rcv.next(t, f)
	want, v1 := legacyMAC(old, got.h.Get(webhook.HeaderSignature), got.body)
	if len(v1) != 1 || v1[0] != want {
		t.Errorf("X-Tether-Signature %q changed for a secret made before: want v1=%s", got.h.Get(webhook.HeaderSignature), want)
	}
	if err := library(t, old, got.h, got.body); err != nil {
		t.Errorf("the Standard Webhooks library with the secret made before: %v", err)
	}
	if err := specVerify(old, got.h, got.body); err != nil {
		t.Errorf("by the specification, with the secret made before: %v", err)
	}
}

// TestRotationOverlap: after webhook rotate-secret --overlap, each delivery
// verifies with the new secret and with the old one, in both headers, so
// that the receiver switches whenever it likes; after the overlap, only
// with the new one.
func TestRotationOverlap(t *testing.T) {
	clock := clocktest.New()
	f := open(t, filepath.Join(t.TempDir(), "tether.db"), clock)
	rcv := newHeaderReceiver(t)
	_, oldSecret, err := f.reg.CreateWebhook(f.ctx, "hook", rcv.srv.URL, []string{registry.WebhookJobFinished}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, newSecret, err := f.reg.RotateWebhookSecret(f.ctx, "hook", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.finishJob(t)
	got := rcv.next(t, f)
	if n := len(strings.Split(got.h.Get("webhook-signature"), " ")); n != 2 {
		t.Errorf("webhook-signature %q: want two signatures during the overlap", got.h.Get("webhook-signature"))
	}
	for _, s := range []registry.Secret{oldSecret, newSecret} {
		if err := library(t, s.Reveal(), got.h, got.body); err != nil {
			t.Errorf("during the overlap, the library: %v", err)
		}
		if err := specVerify(s.Reveal(), got.h, got.body); err != nil {
			t.Errorf("during the overlap, by the specification: %v", err)
		}
		if err := webhook.Verify(s.Reveal(), got.h.Get(webhook.HeaderSignature), got.body, time.Now(), time.Minute); err != nil {
			t.Errorf("during the overlap, X-Tether-Signature: %v", err)
		}
	}
	// A receiver of X-Tether-Signature that reads one v1 (the last, as
	// the snippet in the docs did) keeps the old secret working.
	if want, v1 := legacyMAC(oldSecret.Reveal(), got.h.Get(webhook.HeaderSignature), got.body); len(v1) != 2 || v1[1] != want {
		t.Errorf("X-Tether-Signature %q: want the new secret's v1, then the old one's", got.h.Get(webhook.HeaderSignature))
	}

	clock.Advance(time.Hour)
	f.finishJob(t)
	got = rcv.next(t, f)
	if err := library(t, newSecret.Reveal(), got.h, got.body); err != nil {
		t.Errorf("after the overlap, the new secret: %v", err)
	}
	if err := library(t, oldSecret.Reveal(), got.h, got.body); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("after the overlap, the old secret: %v, want no matching signature", err)
	}
	if err := webhook.Verify(oldSecret.Reveal(), got.h.Get(webhook.HeaderSignature), got.body, time.Now(), time.Minute); err == nil {
		t.Error("after the overlap, the old secret verifies X-Tether-Signature")
	}
}

// TestTestAndRedeliveryReachTheReceiver: a test delivery goes to the one
// webhook named; a redelivery sends the same message again, byte for byte,
// with the same webhook-id, signed anew.
func TestTestAndRedeliveryReachTheReceiver(t *testing.T) {
	clock := clocktest.New()
	f := open(t, filepath.Join(t.TempDir(), "tether.db"), clock)
	rcv, other := newHeaderReceiver(t), newHeaderReceiver(t)
	_, secret, err := f.reg.CreateWebhook(f.ctx, "hook", rcv.srv.URL, []string{registry.WebhookJobFinished}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.reg.CreateWebhook(f.ctx, "other", other.srv.URL, []string{registry.WebhookJobFinished}, ""); err != nil {
		t.Fatal(err)
	}
	test, err := f.reg.SendTestWebhook(f.ctx, "hook")
	if err != nil {
		t.Fatal(err)
	}
	got := rcv.next(t, f)
	if got.h.Get("webhook-id") != test.DeliveryID() || got.h.Get(webhook.HeaderEvent) != registry.WebhookTest || library(t, secret.Reveal(), got.h, got.body) != nil {
		t.Fatalf("test delivery: headers %v body %s", got.h, got.body)
	}
	if len(other.got) != 0 {
		t.Fatal("a test of one webhook reached another")
	}

	clock.Advance(time.Hour)
	again, err := f.reg.RedeliverWebhook(f.ctx, test.DeliveryID())
	if err != nil {
		t.Fatal(err)
	}
	second := rcv.next(t, f)
	if second.h.Get("webhook-id") != test.DeliveryID() || string(second.body) != string(got.body) {
		t.Errorf("redelivery %s: webhook-id %q body %s; want %s and %s", again.DeliveryID(), second.h.Get("webhook-id"), second.body, test.DeliveryID(), got.body)
	}
	if err := library(t, secret.Reveal(), second.h, second.body); err != nil {
		t.Errorf("the redelivery: %v", err)
	}
}
