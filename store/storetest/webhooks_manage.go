package storetest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testWebhookManage: what an admin does to a webhook after creating it
// (issue 31): edit it with compare-and-swap, rotate its secret with an
// overlap, send it a test, send a delivery again.
func testWebhookManage(t *testing.T, newStore NewStore) {
	t.Run("EditIsCompareAndSwap", func(t *testing.T) {
		e := newEnv(t, newStore)
		w, _, err := e.reg.CreateWebhook(e.ctx, "billing", "https://billing.example.com/a", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		_, _, err = e.reg.CreateWebhook(e.ctx, "pager", "https://pager.example.com/", []string{registry.WebhookRolloutHalted}, "")
		wantNoErr(t, err)
		if w.Version != 1 {
			t.Fatalf("a new webhook is at version %d, want 1", w.Version)
		}
		name, url := "payments", "https://payments.example.com/hooks/s3cret-path?token=s3cret"
		got, err := e.reg.UpdateWebhook(e.ctx, "billing", 1, registry.WebhookEdit{Name: &name, URL: &url,
			Events: []string{registry.WebhookJobFinished, registry.WebhookCredentialRevoked}})
		wantNoErr(t, err)
		if got.ID != w.ID || got.Name != name || got.URL != url || strings.Join(got.Events, ",") != "job.finished,credential.revoked" || got.Version != 2 {
			t.Fatalf("after the edit: %+v", got)
		}
		list, err := e.reg.ListWebhooks(e.ctx)
		wantNoErr(t, err)
		if list[1].Name != name || list[1].URL != url || list[1].Version != 2 {
			t.Fatalf("the edit was not stored: %+v", list)
		}
		audit := e.auditFor("webhook.update")
		if len(audit) != 1 || !strings.Contains(audit[0].Reason, "URL → https://payments.example.com/…") ||
			strings.Contains(audit[0].Reason, "s3cret") {
			t.Fatalf("audit of the edit %+v: want the URL by origin only", audit)
		}

		// A stale version, a taken name, an internal address, an unknown event.
		other := "https://other.example.com/"
		_, err = e.reg.UpdateWebhook(e.ctx, name, 1, registry.WebhookEdit{URL: &other})
		wantCode(t, err, registry.CodeConflict)
		taken := "pager"
		_, err = e.reg.UpdateWebhook(e.ctx, name, 2, registry.WebhookEdit{Name: &taken})
		wantCode(t, err, registry.CodeConflict)
		for _, internal := range []string{"http://10.0.0.1/hook", "http://169.254.169.254/", "http://localhost:7070/"} {
			_, err = e.reg.UpdateWebhook(e.ctx, name, 2, registry.WebhookEdit{URL: &internal})
			wantCode(t, err, registry.CodeInvalid)
		}
		_, err = e.reg.UpdateWebhook(e.ctx, name, 2, registry.WebhookEdit{Events: []string{"job.started"}})
		wantCode(t, err, registry.CodeInvalid)
		if list, _ := e.reg.ListWebhooks(e.ctx); list[1].URL != url || list[1].Version != 2 {
			t.Fatalf("a refused edit changed the webhook: %+v", list[1])
		}
		_, err = e.reg.UpdateWebhook(e.ctx, "nope", 1, registry.WebhookEdit{URL: &other})
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("RotationSignsWithBothSecretsDuringTheOverlap", func(t *testing.T) {
		e := newEnv(t, newStore)
		w, first, err := e.reg.CreateWebhook(e.ctx, "hook", "https://hooks.example.com/", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		claimTest := func() registry.DueDelivery {
			t.Helper()
			_, err := e.reg.SendTestWebhook(e.ctx, "hook")
			wantNoErr(t, err)
			due, err := e.reg.ClaimWebhookDeliveries(e.ctx, 10, time.Minute)
			wantNoErr(t, err)
			if len(due) != 1 {
				t.Fatalf("%d due deliveries, want the test", len(due))
			}
			wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[0], 204, ""))
			return due[0]
		}
		if d := claimTest(); d.Secret != first || d.Previous != "" || d.Name != "hook" {
			t.Fatalf("before a rotation: secret %t, previous %t, name %q", d.Secret == first, d.Previous != "", d.Name)
		}

		rotated, second, err := e.reg.RotateWebhookSecret(e.ctx, "hook", time.Hour)
		wantNoErr(t, err)
		if second == first || !strings.HasPrefix(second.Reveal(), "whsec_") || rotated.Version != 2 ||
			!rotated.PreviousSecretUntil.Equal(e.clock.Now().Add(time.Hour)) {
			t.Fatalf("rotated: %+v", rotated)
		}
		list, err := e.reg.ListWebhooks(e.ctx)
		wantNoErr(t, err)
		raw, _ := json.Marshal(list)
		stored := string(list[0].SealedSecret) + string(list[0].SealedPreviousSecret) + string(raw)
		if len(list[0].SealedPreviousSecret) == 0 || strings.Contains(stored, first.Reveal()) || strings.Contains(stored, second.Reveal()) {
			t.Fatal("the secrets are stored or shown in plain text, or the previous one is not kept")
		}
		if d := claimTest(); d.Secret != second || d.Previous != first {
			t.Fatalf("during the overlap: secret new %t, previous old %t", d.Secret == second, d.Previous == first)
		}
		e.clock.Advance(time.Hour)
		if d := claimTest(); d.Secret != second || d.Previous != "" {
			t.Fatalf("after the overlap the previous secret still signs")
		}

		// An overlap of zero retires the secret at once; a rotation during an
		// overlap keeps only the secret it replaces.
		_, third, err := e.reg.RotateWebhookSecret(e.ctx, "hook", 0)
		wantNoErr(t, err)
		if d := claimTest(); d.Secret != third || d.Previous != "" {
			t.Fatal("after a rotation without overlap the previous secret still signs")
		}
		_, _, err = e.reg.RotateWebhookSecret(e.ctx, w.ID, time.Hour)
		wantNoErr(t, err)
		_, fifth, err := e.reg.RotateWebhookSecret(e.ctx, "hook", time.Hour)
		wantNoErr(t, err)
		if d := claimTest(); d.Secret != fifth || d.Previous == third || d.Previous == "" {
			t.Fatal("a rotation during an overlap: want the new secret and the one it replaced")
		}
		audit := e.auditFor("webhook.rotate-secret")
		var reasons string
		for _, a := range audit {
			reasons += a.Reason + "\n"
		}
		if len(audit) != 4 || strings.Count(reasons, "no longer signs") != 1 || strings.Count(reasons, "also signs until") != 3 {
			t.Fatalf("rotation audit %+v", audit)
		}
		for _, bad := range []time.Duration{-time.Second, 31 * 24 * time.Hour} {
			_, _, err = e.reg.RotateWebhookSecret(e.ctx, "hook", bad)
			wantCode(t, err, registry.CodeInvalid)
		}
		_, _, err = e.reg.RotateWebhookSecret(e.ctx, "nope", time.Hour)
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("TestAndRedelivery", func(t *testing.T) {
		e := newEnv(t, newStore)
		w, _, err := e.reg.CreateWebhook(e.ctx, "hook", "https://hooks.example.com/", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		test, err := e.reg.SendTestWebhook(e.ctx, "hook")
		wantNoErr(t, err)
		var data struct{ WebhookID, Name string }
		if test.Event != registry.WebhookTest || test.WebhookID != w.ID || test.State != registry.DeliveryPending ||
			json.Unmarshal(test.Data, &data) != nil || data.Name != "hook" || test.MessageID() != test.DeliveryID() {
			t.Fatalf("test delivery %+v %s", test, test.Data)
		}
		if a := e.auditFor("webhook.test"); len(a) != 1 || a[0].TargetID != w.ID {
			t.Fatalf("test audit %+v", a)
		}
		_, err = e.reg.RedeliverWebhook(e.ctx, test.DeliveryID())
		wantCode(t, err, registry.CodeConflict) // still pending

		due, err := e.reg.ClaimWebhookDeliveries(e.ctx, 10, time.Minute)
		wantNoErr(t, err)
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[0], 200, ""))
		e.clock.Advance(time.Hour)
		again, err := e.reg.RedeliverWebhook(e.ctx, test.DeliveryID())
		wantNoErr(t, err)
		if again.ID <= test.ID || again.RedeliveryOf != test.ID || again.MessageID() != test.DeliveryID() ||
			string(again.Data) != string(test.Data) || again.Event != test.Event || again.State != registry.DeliveryPending ||
			again.Attempts != 0 || !again.MessageCreatedAt().Equal(test.CreatedAt) || !again.CreatedAt.Equal(e.clock.Now()) {
			t.Fatalf("redelivery %+v of %+v", again, test)
		}
		got, _, err := e.reg.GetWebhookDelivery(e.ctx, strconv.FormatInt(again.ID, 10))
		wantNoErr(t, err)
		if got.RedeliveryOf != test.ID || !got.MessageCreatedAt().Equal(test.CreatedAt) {
			t.Fatalf("the redelivery as stored %+v", got)
		}
		// A redelivery is sent as soon as the sender looks, and a redelivery
		// of it still carries the first message.
		due, err = e.reg.ClaimWebhookDeliveries(e.ctx, 10, time.Minute)
		wantNoErr(t, err)
		if len(due) != 1 || due[0].ID != again.ID {
			t.Fatalf("due %+v, want the redelivery", due)
		}
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[0], 500, "the receiver answered 500"))
		e.clock.Advance(registry.WebhookRetryFor)
		due, err = e.reg.ClaimWebhookDeliveries(e.ctx, 10, time.Minute)
		wantNoErr(t, err)
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[0], 500, "the receiver answered 500"))
		third, err := e.reg.RedeliverWebhook(e.ctx, again.DeliveryID())
		wantNoErr(t, err)
		if third.RedeliveryOf != test.ID || !third.MessageCreatedAt().Equal(test.CreatedAt) {
			t.Fatalf("a redelivery of a redelivery %+v: want the first delivery's message", third)
		}
		if a := e.auditFor("webhook.redeliver"); len(a) != 2 || !strings.Contains(a[1].Reason, test.DeliveryID()) {
			t.Fatalf("redelivery audit %+v", a)
		}

		for ref, code := range map[string]registry.Code{"x": registry.CodeInvalid, "wd-0": registry.CodeInvalid, "wd-999999": registry.CodeNotFound} {
			_, _, err := e.reg.GetWebhookDelivery(e.ctx, ref)
			wantCode(t, err, code)
			_, err = e.reg.RedeliverWebhook(e.ctx, ref)
			wantCode(t, err, code)
		}
		// Another organization's admin sees no such delivery.
		elsewhere := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "else", Role: registry.RoleAdmin, Org: "elsewhere"})
		_, _, err = e.reg.GetWebhookDelivery(elsewhere, test.DeliveryID())
		wantCode(t, err, registry.CodeNotFound)
		_, err = e.reg.RedeliverWebhook(elsewhere, test.DeliveryID())
		wantCode(t, err, registry.CodeNotFound)
		_, err = e.reg.SendTestWebhook(elsewhere, "hook")
		wantCode(t, err, registry.CodeNotFound)

		_, err = e.reg.DeleteWebhook(e.ctx, "hook")
		wantNoErr(t, err)
		_, _, err = e.reg.GetWebhookDelivery(e.ctx, test.DeliveryID())
		wantCode(t, err, registry.CodeNotFound)
	})
}
