package server_test

import (
	"context"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Webhooks aimed inward are refused when they are created, whoever creates
// them: internal addresses in every spelling resolvers accept, names that
// mean this machine, and tether's own admin API. The refusal names the rule
// and the flag that lifts it.
func TestAdminAPIWebhookToAnInternalAddressRefused(t *testing.T) {
	e := newEnv(t)
	root := e.adminToken("root", registry.RoleAdmin, "")
	own, _ := url.Parse(e.url)
	for _, tc := range []struct{ url, says string }{
		{"http://169.254.169.254/latest/meta-data/", "link-local"},
		{"http://10.0.0.1/hook", "private"},
		{"http://172.16.0.1/hook", "private"},
		{"http://192.168.1.10:8080/hook", "private"},
		{"http://100.100.100.200/latest/meta-data", "shared"},
		{"http://[::1]:7070/hook", "loopback"},
		{"http://[::ffff:127.0.0.1]/hook", "loopback"},
		{"http://[fd00:ec2::254]/hook", "unique-local"},
		{"http://[fe80::1%25eth0]/hook", "link-local"},
		{"http://0.0.0.0:7070/hook", "unspecified"},
		{"http://localhost/hook", "names this machine"},
		{"http://LOCALHOST./hook", "names this machine"},
		{"http://tether.localhost/hook", "names this machine"},
		{"http://127.0.0.1./hook", "loopback"},
		{"http://0x7f000001/hook", "write it as four decimal numbers (127.0.0.1)"},
		{"http://2130706433/hook", "write it as four decimal numbers (127.0.0.1)"},
		{"http://127.1/hook", "write it as four decimal numbers (127.0.0.1)"},
		{"http://0177.0.0.1/hook", "write it as four decimal numbers (127.0.0.1)"},
		{"http://0x0a.0.0.1/hook", "(10.0.0.1)"},
		{"http://1.2.3.4.5/hook", "neither a host name nor an IPv4 address"},
		// Hosts that are not ASCII, as net/http dials them (IDNA mapping).
		{"http://127\u30020\u30020\u30021/hook", "loopback"},
		{"http://169\uff0e254\uff0e169\uff0e254/latest/meta-data/", "link-local"},
		{"http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/hook", "names this machine"},
		{"http://\u2460\u2461\u2466.0.0.1/hook", "loopback"},
		{"http://" + own.Host + "/api/admin/v1/admin-tokens", "loopback"}, // this tether's own admin API
		// IPv6 forms that carry an IPv4 address reach it: NAT64, 6to4 and
		// the old IPv4-compatible form.
		{"http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "link-local"},
		{"http://[64:ff9b:1::7f00:1]/hook", "loopback"},
		{"http://[2002:a9fe:a9fe::1]/hook", "link-local"},
		{"http://[::a00:1]/hook", "private"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			r := e.api("POST", "/webhooks", root, map[string]any{"name": "hook", "url": tc.url, "events": []string{"job.finished"}})
			fragments := []string{tc.says}
			if !strings.Contains(tc.says, "(") && !strings.Contains(tc.says, "neither") { // not a spelling's refusal
				fragments = append(fragments, "--webhook-allow-cidr")
			}
			wantAPIError(t, r, 400, "invalid", fragments...)
		})
	}
	hooks, err := e.reg.ListWebhooks(adminCtx())
	if err != nil || len(hooks) != 0 {
		t.Fatalf("webhooks after the refusals: %+v (%v)", hooks, err)
	}
	// Addresses on the internet, and names (checked when they resolve).
	for i, u := range []string{"https://hooks.example.com/t", "http://93.184.215.14/hook", "https://[2606:4700::6810:84e5]/hook", "http://db.internal:5432/", "http://[64:ff9b::5db8:d70e]/hook"} {
		e.api("POST", "/webhooks", root, map[string]any{"name": "ok-" + string(rune('a'+i)), "url": u, "events": []string{"job.finished"}}).want(t, 201)
	}
}

// serve --webhook-allow-cidr lets webhooks reach the ranges it names, and
// only those.
func TestAdminAPIWebhookAllowedRange(t *testing.T) {
	e := newEnvWith(t, registry.Config{WebhookAllow: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("127.0.0.1/32")}})
	root := e.adminToken("root", registry.RoleAdmin, "")
	hook := func(name, u string) *response {
		return e.api("POST", "/webhooks", root, map[string]any{"name": name, "url": u, "events": []string{"job.finished"}})
	}
	hook("on-prem", "http://10.20.3.4:8080/hook").want(t, 201)
	hook("loop", "http://127.0.0.1:8080/hook").want(t, 201)
	hook("local", "http://localhost:8080/hook").want(t, 201) // it resolves to 127.0.0.1 (checked again when it does)
	wantAPIError(t, hook("other", "http://10.21.0.1/hook"), 400, "invalid", "private", "--webhook-allow-cidr")
	wantAPIError(t, hook("meta", "http://169.254.169.254/"), 400, "invalid", "link-local")
}

// The audit trail, which viewers read, records a webhook's URL by its
// origin alone: its path and query often hold the receiver's
// own secret. Entries written before (holding the whole URL) are shown the
// same way.
func TestAdminAPIAuditShowsNoWebhookPathOrQuery(t *testing.T) {
	e := newEnv(t)
	root := e.adminToken("root", registry.RoleAdmin, "")
	viewer := e.adminToken("oncall", registry.RoleViewer, "")
	const secretURL = "https://hooks.slack.example/services/T0000/B0000/XXXXsecretXXXX?token=s3cret"
	e.api("POST", "/webhooks", root, map[string]any{"name": "slack", "url": secretURL, "events": []string{"job.finished"}}).want(t, 201)
	// An entry as tether wrote it before, straight into the store.
	const oldURL = "https://hooks.example.com/old/path-secret?token=old-s3cret"
	err := e.store.WebhookCreate(context.Background(), registry.WebhookCreateParams{
		Webhook: registry.Webhook{ID: "wh-old", Name: "old", URL: oldURL, Events: []string{"job.finished"}, CreatedAt: e.clock.Now(), CreatedBy: "admin:test", SealedSecret: []byte("sealed")},
		Audit:   registry.AuditEntry{At: e.clock.Now(), Actor: "admin:test", Action: "webhook.create", TargetKind: "webhook", TargetID: "wh-old", Reason: "old → " + oldURL + " for job.finished"},
	})
	if err != nil {
		t.Fatal(err)
	}

	r := e.api("GET", "/audit?action=webhook.create", viewer, nil)
	r.want(t, 200)
	audit := decodeAs[struct{ Items []registry.AuditEntry }](t, r)
	if len(audit.Items) != 2 {
		t.Fatalf("audit entries %+v, want the two creations", audit.Items)
	}
	want := map[string]string{
		"slack": "slack → https://hooks.slack.example/… for job.finished",
		"old":   "old → https://hooks.example.com/… for job.finished",
	}
	for _, a := range audit.Items {
		name, _, _ := strings.Cut(a.Reason, " ")
		if a.Reason != want[name] {
			t.Errorf("audit reason %q, want %q", a.Reason, want[name])
		}
		for _, leak := range []string{"secret", "token", "/services", "/old"} {
			if strings.Contains(a.Reason, leak) {
				t.Errorf("audit reason %q shows %q", a.Reason, leak)
			}
		}
	}
	// Viewers do not read webhooks themselves; their admins see the URL.
	wantAPIError(t, e.api("GET", "/webhooks", viewer, nil), 403, "forbidden")
	r = e.api("GET", "/webhooks", root, nil)
	r.want(t, 200)
	if !strings.Contains(string(r.body), "token=s3cret") {
		t.Errorf("an admin's webhook list %s lacks the URL", r.body)
	}
}

// An admin edits a webhook with compare-and-swap (If-Match, as a cluster's
// PATCH), where the rule on internal addresses holds as at creation;
// rotates its secret (24 h of overlap unless told); sends it a test; and
// redelivers what ended. An organization's admin reaches none of another
// organization's.
func TestAdminAPIWebhookEditRotateTestRedeliver(t *testing.T) {
	e := newEnv(t)
	root := e.adminToken("root", registry.RoleAdmin, "")
	other := e.adminToken("other", registry.RoleAdmin, "elsewhere")
	created := e.api("POST", "/webhooks", root, map[string]any{"name": "hook", "url": "https://hooks.example.com/a", "events": []string{"job.finished"}})
	created.want(t, 201)
	first := decodeAs[struct {
		Secret  string `json:"secret"`
		Version int64  `json:"version"`
	}](t, created)

	got := e.api("GET", "/webhooks/hook", root, nil)
	got.want(t, 200)
	if got.header.Get("ETag") != `"1"` || first.Version != 1 {
		t.Fatalf("ETag %q, version %d: want 1", got.header.Get("ETag"), first.Version)
	}
	wantAPIError(t, e.api("PATCH", "/webhooks/hook", root, map[string]any{"url": "https://b.example.com/"}), 428, "precondition_required", "If-Match")
	wantAPIError(t, e.api("PATCH", "/webhooks/hook", root, map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, withHeader("If-Match", `"1"`)),
		400, "invalid", "link-local", "--webhook-allow-cidr")
	wantAPIError(t, e.api("PATCH", "/webhooks/hook", root, map[string]any{"events": nil}, withHeader("If-Match", `"1"`)), 400, "invalid", "events")
	wantAPIError(t, e.api("PATCH", "/webhooks/hook", other, map[string]any{"name": "mine"}, withHeader("If-Match", `"1"`)), 404, "not_found")
	patched := e.api("PATCH", "/webhooks/hook", root, map[string]any{"url": "https://b.example.com/new", "name": "renamed"},
		withHeader("If-Match", `"1"`), withHeader("Content-Type", "application/merge-patch+json"))
	patched.want(t, 200)
	w := decodeAs[registry.Webhook](t, patched)
	if w.Name != "renamed" || w.URL != "https://b.example.com/new" || w.Version != 2 || patched.header.Get("ETag") != `"2"` || strings.Join(w.Events, ",") != "job.finished" {
		t.Fatalf("patched %+v (ETag %s)", w, patched.header.Get("ETag"))
	}
	wantAPIError(t, e.api("PATCH", "/webhooks/renamed", root, map[string]any{"url": "https://c.example.com/"}, withHeader("If-Match", `"1"`)),
		409, "conflict", "version 1", "version 2")

	rotated := e.api("POST", "/webhooks/renamed/rotate-secret", root, nil)
	rotated.want(t, 200)
	r := decodeAs[struct {
		Secret              string    `json:"secret"`
		PreviousSecretUntil time.Time `json:"previousSecretUntil"`
		Version             int64     `json:"version"`
	}](t, rotated)
	if r.Secret == first.Secret || !strings.HasPrefix(r.Secret, "whsec_") || !r.PreviousSecretUntil.Equal(e.clock.Now().Add(24*time.Hour)) || r.Version != 3 {
		t.Fatalf("rotated: %+v, want a new secret and 24h of overlap", r)
	}
	rotated = e.api("POST", "/webhooks/renamed/rotate-secret", root, map[string]any{"overlap": "0s"})
	rotated.want(t, 200)
	if strings.Contains(string(rotated.body), "previousSecretUntil") {
		t.Fatalf("an overlap of 0s keeps the previous secret: %s", rotated.body)
	}
	wantAPIError(t, e.api("POST", "/webhooks/renamed/rotate-secret", root, map[string]any{"overlap": "31d"}), 400, "invalid", "30d")
	wantAPIError(t, e.api("POST", "/webhooks/renamed/rotate-secret", other, nil), 404, "not_found")

	test := e.api("POST", "/webhooks/renamed/test", root, nil)
	test.want(t, 202)
	d := decodeAs[registry.WebhookDelivery](t, test)
	if d.Event != registry.WebhookTest || d.State != registry.DeliveryPending {
		t.Fatalf("test delivery %+v", d)
	}
	wantAPIError(t, e.api("POST", "/webhooks/renamed/test", other, nil), 404, "not_found")
	wantAPIError(t, e.api("POST", "/webhook-deliveries/"+d.DeliveryID()+"/redeliver", root, nil), 409, "conflict", "pending")
	due, err := e.reg.ClaimWebhookDeliveries(adminCtx(), 10, time.Minute)
	if err != nil || len(due) != 1 {
		t.Fatalf("claim: %d %v", len(due), err)
	}
	if err := e.reg.RecordWebhookAttempt(adminCtx(), &due[0], 0, "could not connect to the receiver"); err != nil {
		t.Fatal(err)
	}
	after := decodeAs[registry.WebhookDelivery](t, e.api("GET", "/webhook-deliveries/"+strconv.FormatInt(d.ID, 10), root, nil))
	if after.Attempts != 1 || after.LastError != "could not connect to the receiver" {
		t.Fatalf("the delivery after its attempt: %+v", after)
	}
	wantAPIError(t, e.api("GET", "/webhook-deliveries/"+d.DeliveryID(), other, nil), 404, "not_found")
	// Failed for good a day later, then sent again.
	e.clock.Advance(registry.WebhookRetryFor)
	due, _ = e.reg.ClaimWebhookDeliveries(adminCtx(), 10, time.Minute)
	if err := e.reg.RecordWebhookAttempt(adminCtx(), &due[0], 0, "could not connect to the receiver"); err != nil {
		t.Fatal(err)
	}
	again := e.api("POST", "/webhook-deliveries/"+d.DeliveryID()+"/redeliver", root, nil)
	again.want(t, 202)
	if a := decodeAs[registry.WebhookDelivery](t, again); a.RedeliveryOf != d.ID || a.ID == d.ID || a.State != registry.DeliveryPending {
		t.Fatalf("redelivery %+v of %s", a, d.DeliveryID())
	}
	wantAPIError(t, e.api("POST", "/webhook-deliveries/"+d.DeliveryID()+"/redeliver", other, nil), 404, "not_found")

	audit := decodeAs[struct{ Items []registry.AuditEntry }](t, e.api("GET", "/audit?action=webhook.", root, nil))
	var actions []string
	for _, a := range audit.Items {
		actions = append(actions, a.Action)
	}
	for _, want := range []string{"webhook.update", "webhook.rotate-secret", "webhook.test", "webhook.redeliver"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit %v lacks %s", actions, want)
		}
	}
	if strings.Contains(string(e.api("GET", "/audit?action=webhook.", root, nil).body), "whsec_") {
		t.Error("the audit trail shows a secret")
	}
}

// An organization's admin may name a webhook as another organization
// already named one: the creation succeeds, and nothing it answers (nor any
// later lookup by that name) tells them of the other. A fleet admin naming
// a name several organizations use is asked for the id.
func TestAdminAPIWebhookNamesArePerOrganization(t *testing.T) {
	e := newEnv(t)
	root := e.adminToken("root", registry.RoleAdmin, "")
	globex := e.adminToken("globex-admin", registry.RoleAdmin, "globex")
	hook := func(url string) map[string]any {
		return map[string]any{"name": "billing", "url": url, "events": []string{"job.finished"}}
	}
	theirs := e.api("POST", "/webhooks", root, map[string]any{"name": "billing", "url": "https://acme-secret-host.example.com/", "events": []string{"job.finished"}, "org": "acme"})
	theirs.want(t, 201)
	acme := decodeAs[registry.Webhook](t, theirs)

	created := e.api("POST", "/webhooks", globex, hook("https://globex.example.com/"))
	created.want(t, 201)
	mine := decodeAs[registry.Webhook](t, created)
	if mine.Org != "globex" || mine.ID == acme.ID {
		t.Fatalf("globex's webhook: %+v", mine)
	}
	for _, r := range []*response{created, e.api("GET", "/webhooks/billing", globex, nil), e.api("GET", "/webhooks", globex, nil)} {
		if body := string(r.body); strings.Contains(body, acme.ID) || strings.Contains(body, "acme") {
			t.Fatalf("globex's admin learns of acme's webhook: %s", body)
		}
	}
	if got := decodeAs[registry.Webhook](t, e.api("GET", "/webhooks/billing", globex, nil)); got.ID != mine.ID {
		t.Fatalf("globex's billing is %s, want its own %s", got.ID, mine.ID)
	}
	// Within one organization a name is still taken once.
	wantAPIError(t, e.api("POST", "/webhooks", globex, hook("https://globex.example.com/2")), 409, "conflict", "already exists")

	wantAPIError(t, e.api("GET", "/webhooks/billing", root, nil), 400, "invalid", acme.ID, mine.ID, "id")
	e.api("GET", "/webhooks/"+acme.ID, root, nil).want(t, 200)
	e.api("DELETE", "/webhooks/billing", globex, nil).want(t, 200)
	if got := decodeAs[registry.Webhook](t, e.api("GET", "/webhooks/billing", root, nil)); got.ID != acme.ID {
		t.Fatalf("the one billing left is %s, want acme's %s", got.ID, acme.ID)
	}
}
