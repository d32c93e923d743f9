package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// scriptedReceiver is a real receiver on 127.0.0.1 that answers each
// message (webhook-id) with the next status of its script, 200 past it or
// without one: retries of one message do not shift another's answers.
type scriptedReceiver struct {
	mu     sync.Mutex
	script map[string][]int
	got    []hookRequest
	srv    *httptest.Server
}

type hookRequest struct {
	h    http.Header
	body []byte
}

func newScriptedReceiver(t *testing.T, script map[string][]int) *scriptedReceiver {
	r := &scriptedReceiver{script: script}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		r.got = append(r.got, hookRequest{req.Header.Clone(), body})
		status := http.StatusOK
		if s := r.script[id]; len(s) > 0 {
			status, r.script[id] = s[0], s[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// requests are the requests that carried message id, in order.
func (r *scriptedReceiver) requests(id string) []hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookRequest
	for _, g := range r.got {
		if g.h.Get("webhook-id") == id {
			out = append(out, g)
		}
	}
	return out
}

// TestWebhookEditRotateTestRedeliver: the real binary edits a webhook (the
// rule on internal addresses holds on edit too), rotates its secret, sends
// it tests with --wait through a real tether serve, locally and over
// --server, and redelivers a delivery with the same webhook-id; serve's log
// of a failed attempt names the webhook, its id and the delivery.
func TestWebhookEditRotateTestRedeliver(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	first := newScriptedReceiver(t, nil)
	// wd-1, a test, is delivered, and refused when it is redelivered; wd-2,
	// another test, is refused every time.
	rcv := newScriptedReceiver(t, map[string][]int{"wd-1": {204, 503}, "wd-2": {500, 500, 500, 500, 500}})
	allow := []string{"--webhook-allow-cidr", "127.0.0.0/8"}

	created := okJSON[struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}](t, db, append([]string{"webhook", "create", "--name", "billing", "--url", first.srv.URL, "--events", "job.finished"}, allow...)...)

	// Edit: the URL is checked as at creation.
	wantError(t, cli(t, db, "webhook", "edit", "billing", "--url", rcv.srv.URL+"/hook"), exitError, "loopback", "--webhook-allow-cidr")
	wantError(t, cli(t, db, "webhook", "edit", "billing"), exitUsage, "--name, --url and --events")
	wantError(t, cli(t, db, append([]string{"webhook", "edit", "billing", "--url", rcv.srv.URL + "/hook", "--if-version", "7"}, allow...)...),
		exitError, "version 7", "version 1")
	out := ok(t, db, append([]string{"webhook", "edit", "billing", "--name", "payments", "--url", rcv.srv.URL + "/hook",
		"--events", "job.finished,credential.revoked"}, allow...)...).stdout
	if !strings.Contains(out, "Webhook payments ("+created.ID+") sends job.finished, credential.revoked to "+rcv.srv.URL+"/hook (version 2)") {
		t.Fatalf("webhook edit said:\n%s", out)
	}

	// Rotate with an overlap: the secret is shown once.
	rotated := okJSON[struct {
		Secret              string `json:"secret"`
		PreviousSecretUntil string `json:"previousSecretUntil"`
	}](t, db, "webhook", "rotate-secret", "payments", "--overlap", "2h")
	if rotated.Secret == created.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.PreviousSecretUntil == "" {
		t.Fatalf("rotate-secret: %+v", rotated)
	}
	if list := ok(t, db, "webhook", "list", "-o", "json").stdout; strings.Contains(list, rotated.Secret) || strings.Contains(list, created.Secret) {
		t.Fatal("webhook list shows a secret")
	}

	// A test, delivered: it verifies with both secrets, through the
	// Standard Webhooks library.
	srv, addr, _ := startServe(t, db, allow...)
	out = ok(t, db, "webhook", "test", "payments", "--wait").stdout
	if !strings.Contains(out, "Test delivery wd-1 to webhook payments was delivered: the receiver answered 204.") {
		t.Fatalf("webhook test --wait said:\n%s", out)
	}
	h, body := rcv.requests("wd-1")[0].h, rcv.requests("wd-1")[0].body
	for _, secret := range []string{created.Secret, rotated.Secret} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("the test delivery with a secret of the overlap: %v", err)
		}
	}
	if h.Get("X-Tether-Event") != "webhook.test" || len(first.got) != 0 {
		t.Errorf("test delivery: event %q; the old URL got %d requests", h.Get("X-Tether-Event"), len(first.got))
	}

	// A test the receiver refuses fails the command, and serve's log names
	// the webhook, its id and the delivery.
	wantError(t, cli(t, db, "webhook", "test", "payments", "--wait"), exitError, "test delivery wd-2 to webhook payments failed: the receiver answered 500")
	line := srv.waitLine(t, "webhook delivery attempt failed", "delivery=wd-2")
	for _, want := range []string{"webhook=payments", "webhook_id=" + created.ID, "delivery=wd-2", "status=500"} {
		if !strings.Contains(line, want) {
			t.Errorf("serve's log line %q does not say %q", line, want)
		}
	}

	// Redelivery of the first test: the same message, webhook-id wd-1, a
	// delivery of its own (wd-3); the receiver refuses it, and the log line
	// says which message it carried.
	out = ok(t, db, "webhook", "redeliver", "wd-1").stdout
	if !strings.Contains(out, "Delivery wd-3 sends message wd-1 (webhook.test) again, with webhook-id wd-1") {
		t.Fatalf("webhook redeliver said:\n%s", out)
	}
	// wd-2 is retried 2.5 to 7.5 s after it failed, and a slow machine may
	// log that retry first: the line wanted is wd-3's.
	line = srv.waitLine(t, "webhook delivery attempt failed", "delivery=wd-3")
	for _, want := range []string{"webhook=payments", "webhook_id=" + created.ID, "delivery=wd-3", "message=wd-1", "status=503"} {
		if !strings.Contains(line, want) {
			t.Errorf("serve's log line %q does not say %q", line, want)
		}
	}
	if again := rcv.requests("wd-1"); len(again) != 2 || string(again[1].body) != string(body) {
		t.Errorf("the redelivery: %d requests with webhook-id wd-1, want 2, the second with the first's body %s", len(again), body)
	}
	deliveries := ok(t, db, "webhook", "deliveries", "payments").stdout
	if !strings.Contains(deliveries, "wd-3") || !strings.Contains(deliveries, "WEBHOOK-ID") {
		t.Errorf("webhook deliveries:\n%s", deliveries)
	}
	wantError(t, cli(t, db, "webhook", "redeliver", "wd-2"), exitError, "still pending")
	wantError(t, cli(t, db, "webhook", "redeliver", "nope"), exitError, "not a delivery id")

	// Over --server, the same: the receiver now answers 200.
	token := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "root", "--role", "admin").Token
	home := t.TempDir()
	tokenFile := filepath.Join(home, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	remote := func(args ...string) result {
		return cliWithEnv(t, "", []string{"XDG_CONFIG_HOME=" + home, "HOME=" + home}, append(args, "--server", "http://"+addr, "--token-file", tokenFile)...)
	}
	res := remote("webhook", "test", "payments", "--wait")
	if res.code != exitOK || !strings.Contains(res.stdout, "was delivered: the receiver answered 200") {
		t.Fatalf("webhook test --wait over --server:\n%s", res)
	}
	if res := remote("webhook", "rotate-secret", "payments", "--overlap", "0s"); res.code != exitOK || !strings.Contains(res.stdout, "The previous secret no longer signs deliveries.") {
		t.Fatalf("rotate-secret --overlap 0s over --server:\n%s", res)
	}
	if res := remote("webhook", "edit", "payments", "--url", "http://10.0.0.1/hook"); res.code != exitError || !strings.Contains(res.stderr, "private") {
		t.Fatalf("an edit to a private address over --server:\n%s", res)
	}
}
