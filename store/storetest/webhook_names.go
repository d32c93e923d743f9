package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// testWebhookNames: a webhook's name is unique within its organization only
// (the fleet-wide webhooks count as one), and a name is resolved within the
// caller's scope. With names unique across the fleet, an organization's
// admin refused a name learned that another organization used it.
func testWebhookNames(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	admin := func(org string) context.Context {
		return registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: "admin-" + org, Role: registry.RoleAdmin, Org: org})
	}
	acme, globex := admin("acme"), admin("globex")
	create := func(ctx context.Context, name, org string) *registry.Webhook {
		t.Helper()
		w, _, err := e.reg.CreateWebhook(ctx, name, "https://hooks.example.com/"+name, []string{registry.WebhookJobFinished}, org)
		wantNoErr(t, err)
		return w
	}
	get := func(ctx context.Context, ref string) *registry.Webhook {
		t.Helper()
		w, err := e.reg.GetWebhook(ctx, ref)
		wantNoErr(t, err)
		return w
	}

	// Two organizations, and the fleet, may each use a name; one may not twice.
	acmeBilling := create(acme, "billing", "")
	globexBilling := create(globex, "billing", "")
	fleetBilling := create(e.ctx, "billing", "")
	_, _, err := e.reg.CreateWebhook(globex, "billing", "https://x.example.com", []string{registry.WebhookJobFinished}, "")
	wantCode(t, err, registry.CodeConflict)
	_, _, err = e.reg.CreateWebhook(e.ctx, "billing", "https://x.example.com", []string{registry.WebhookJobFinished}, "acme")
	wantCode(t, err, registry.CodeConflict)

	// A scoped admin's name is their organization's webhook.
	if get(acme, "billing").ID != acmeBilling.ID || get(globex, "billing").ID != globexBilling.ID {
		t.Fatal("a name resolved outside the caller's organization")
	}
	d, err := e.reg.SendTestWebhook(acme, "billing")
	wantNoErr(t, err)
	if d.WebhookID != acmeBilling.ID {
		t.Fatalf("acme's test went to %s, not its own webhook %s", d.WebhookID, acmeBilling.ID)
	}
	rotated, _, err := e.reg.RotateWebhookSecret(globex, "billing", 0)
	wantNoErr(t, err)
	if rotated.ID != globexBilling.ID {
		t.Fatalf("globex rotated %s, not its own webhook %s", rotated.ID, globexBilling.ID)
	}
	w, _, err := e.reg.WebhookDeliveries(globex, "billing", 10)
	wantNoErr(t, err)
	if w.ID != globexBilling.ID {
		t.Fatalf("globex read the deliveries of %s, not of its own webhook %s", w.ID, globexBilling.ID)
	}

	// Renames: into a name another organization uses, yes; into one of
	// one's own, no.
	pager := create(acme, "pager", "")
	taken := "billing"
	_, err = e.reg.UpdateWebhook(acme, "pager", pager.Version, registry.WebhookEdit{Name: &taken})
	wantCode(t, err, registry.CodeConflict)
	renamed := "payments"
	_, err = e.reg.UpdateWebhook(acme, "billing", get(acme, "billing").Version, registry.WebhookEdit{Name: &renamed})
	wantNoErr(t, err)
	_, err = e.reg.UpdateWebhook(acme, "pager", pager.Version, registry.WebhookEdit{Name: &taken})
	wantNoErr(t, err)
	if get(acme, "billing").ID != pager.ID || get(globex, "billing").ID != globexBilling.ID {
		t.Fatal("a rename reached another organization's webhook")
	}
	deleted, err := e.reg.DeleteWebhook(acme, "billing")
	wantNoErr(t, err)
	if deleted.ID != pager.ID || get(globex, "billing").ID != globexBilling.ID {
		t.Fatalf("acme's delete of billing deleted %s", deleted.ID)
	}

	// A fleet admin naming a name several organizations use is asked for
	// the id, and nothing is changed.
	_, err = e.reg.GetWebhook(e.ctx, "billing")
	wantCode(t, err, registry.CodeInvalid)
	if msg := err.Error(); !strings.Contains(msg, globexBilling.ID) || !strings.Contains(msg, fleetBilling.ID) || !strings.Contains(msg, "id") {
		t.Fatalf("the refusal of an ambiguous name does not list the ids to choose from: %s", msg)
	}
	_, err = e.reg.DeleteWebhook(e.ctx, "billing")
	wantCode(t, err, registry.CodeInvalid)
	_, err = e.reg.DeleteWebhook(e.ctx, fleetBilling.ID)
	wantNoErr(t, err)
	if get(e.ctx, "billing").ID != globexBilling.ID {
		t.Fatal("a name left in one organization does not resolve for a fleet admin")
	}
	if get(e.ctx, acmeBilling.ID).Name != "payments" {
		t.Fatal("a fleet admin cannot reach a webhook by its id")
	}
}
