package server_test

import (
	"context"
	"net/netip"
	"net/url"
	"strings"
	"testing"

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
		{"http://" + own.Host + "/api/admin/v1/admin-tokens", "loopback"}, // this tether's own admin API
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
	for i, u := range []string{"https://hooks.example.com/t", "http://93.184.215.14/hook", "https://[2606:4700::6810:84e5]/hook", "http://db.internal:5432/"} {
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
// origin and a fingerprint: its path and query often hold the receiver's
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
		"slack": "slack → https://hooks.slack.example (URL fingerprint " + registry.WebhookURLFingerprint(secretURL) + ") for job.finished",
		"old":   "old → https://hooks.example.com (URL fingerprint " + registry.WebhookURLFingerprint(oldURL) + ") for job.finished",
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
