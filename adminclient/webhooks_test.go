package adminclient_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// TestWebhooks: a script manages a webhook through the typed methods
// against a real server: create, edit with the version it read, rotate,
// test, follow the delivery, redeliver, delete.
func TestWebhooks(t *testing.T) {
	reg, url := serve(t)
	ctx := context.Background()
	c, err := adminclient.New(url, token(t, reg, registry.RoleAdmin))
	if err != nil {
		t.Fatal(err)
	}
	w, secret, err := c.CreateWebhook(ctx, adminclient.WebhookSpec{Name: "hook", URL: "https://hooks.example.com/a", Events: []string{"job.finished"}})
	if err != nil || !strings.HasPrefix(secret, "whsec_") || w.Version != 1 {
		t.Fatalf("CreateWebhook = %+v, %q, %v", w, secret, err)
	}
	newURL := "https://hooks.example.com/b"
	if w, err = c.UpdateWebhook(ctx, "hook", w.Version, adminclient.WebhookEdit{URL: &newURL}); err != nil || w.URL != newURL || w.Version != 2 {
		t.Fatalf("UpdateWebhook = %+v, %v", w, err)
	}
	if _, err := c.UpdateWebhook(ctx, "hook", 1, adminclient.WebhookEdit{Events: []string{"rollout.halted"}}); !adminclient.IsCode(err, "conflict") {
		t.Fatalf("an edit of a stale version: %v, want conflict", err)
	}
	w, rotated, err := c.RotateWebhookSecret(ctx, "hook", 0)
	if err != nil || rotated == secret || w.PreviousSecretUntil.Sub(w.CreatedAt) < 23*time.Hour {
		t.Fatalf("RotateWebhookSecret(0) = %+v, %v: want a new secret and the default overlap", w, err)
	}
	if w, _, err = c.RotateWebhookSecret(ctx, "hook", -1); err != nil || !w.PreviousSecretUntil.IsZero() {
		t.Fatalf("RotateWebhookSecret(-1) = %+v, %v: want no overlap", w, err)
	}
	if got, err := c.GetWebhook(ctx, w.ID); err != nil || got.Name != "hook" || got.Version != 4 {
		t.Fatalf("GetWebhook = %+v, %v", got, err)
	}

	d, err := c.TestWebhook(ctx, "hook")
	if err != nil || d.Event != "webhook.test" || d.Attempted() {
		t.Fatalf("TestWebhook = %+v, %v", d, err)
	}
	if _, err := c.RedeliverWebhookDelivery(ctx, d.DeliveryID()); !adminclient.IsCode(err, "conflict") {
		t.Fatalf("redelivering a pending delivery: %v, want conflict", err)
	}
	admin := registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	due, err := reg.ClaimWebhookDeliveries(admin, 10, time.Minute)
	if err != nil || len(due) != 1 {
		t.Fatalf("claim: %d, %v", len(due), err)
	}
	if err := reg.RecordWebhookAttempt(admin, &due[0], 204, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetWebhookDelivery(ctx, d.DeliveryID()); err != nil || !got.Attempted() || got.State != "delivered" || got.LastStatus != 204 {
		t.Fatalf("GetWebhookDelivery = %+v, %v", got, err)
	}
	again, err := c.RedeliverWebhookDelivery(ctx, d.DeliveryID())
	if err != nil || again.RedeliveryOf != d.ID || again.ID == d.ID {
		t.Fatalf("RedeliverWebhookDelivery = %+v, %v", again, err)
	}
	if ds, err := c.WebhookDeliveries(ctx, "hook", 10); err != nil || len(ds) != 2 || ds[0].ID != again.ID {
		t.Fatalf("WebhookDeliveries = %+v, %v", ds, err)
	}
	if hooks, err := c.ListWebhooks(ctx); err != nil || len(hooks) != 1 {
		t.Fatalf("ListWebhooks = %+v, %v", hooks, err)
	}
	if err := c.DeleteWebhook(ctx, "hook"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetWebhookDelivery(ctx, d.DeliveryID()); !adminclient.IsCode(err, "not_found") {
		t.Fatalf("a deleted webhook's delivery: %v, want not_found", err)
	}
}
