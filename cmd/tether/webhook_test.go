package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/webhook"
)

// TestWebhookEndToEnd: a subscription made with the CLI, a job finished
// through the registry, and a real `tether serve` delivering it, signed, to a
// receiver on 127.0.0.1.
func TestWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer rcv.Close()

	created := okJSON[struct {
		Name   string `json:"name"`
		Secret string `json:"secret"`
	}](t, db, "webhook", "create", "--name", "billing", "--url", rcv.URL, "--events", "job.finished")
	if !strings.HasPrefix(created.Secret, "whsec_") {
		t.Fatalf("secret %q", created.Secret)
	}
	if list := ok(t, db, "webhook", "list").stdout; !strings.Contains(list, "billing") || strings.Contains(list, created.Secret) {
		t.Fatalf("webhook list:\n%s", list)
	}
	createCluster(t, db, "prod", "--namespaces", "apps")
	job := submit(t, db, "prod", "apply", configMap("apps", "hooked"))
	ok(t, db, "job", "cancel", job.ID, "--reason", "testing webhooks")

	srv, _, _ := startServe(t, db)
	deadline := time.Now().Add(waitTimeout)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivery within %s; serve's log:\n%s", waitTimeout, srv.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	req, body := got[0], bodies[0]
	mu.Unlock()
	if err := webhook.Verify(created.Secret, req.Header.Get(webhook.HeaderSignature), body, time.Now(), time.Minute); err != nil {
		t.Fatalf("delivery signature: %v", err)
	}
	var b struct {
		Event string
		Data  struct{ ID, State string }
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Event != "job.finished" || b.Data.ID != job.ID || b.Data.State != "canceled" {
		t.Fatalf("delivery body %s", body)
	}
	deadline = time.Now().Add(waitTimeout)
	for {
		out := ok(t, db, "webhook", "deliveries", "billing").stdout
		if strings.Contains(out, "delivered") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery is not recorded as delivered:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	reg := openRegistry(t, db)
	if _, ds, err := reg.WebhookDeliveries(registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "t"}), "billing", 10); err != nil || len(ds) != 1 || ds[0].Attempts != 1 {
		t.Fatalf("deliveries %+v %v", ds, err)
	}
	wantError(t, cli(t, db, "webhook", "create", "--name", "x", "--url", rcv.URL, "--events", "job.started"), exitError, "job.started")
	ok(t, db, "webhook", "delete", "billing")
}
