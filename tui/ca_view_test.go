package tui

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

func csrPEM(tb testing.TB) string {
	tb.Helper()
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	der := must(x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key))
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// certifiedCluster creates tether's CA and a cluster, secure-1, whose agent
// registered with a CSR: its credential carries a client certificate.
func certifiedCluster(tb testing.TB, e *env) *registry.IssuedCredential {
	tb.Helper()
	must(e.reg.InitCA(e.admin, false))
	_, tok := e.cluster(tb, registry.ClusterSpec{Name: "secure-1", Organization: "acme", AllowedNamespaces: []string{"default"}})
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAgent, Name: "unregistered@10.0.0.9"})
	return must(e.reg.Register(ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), CSR: csrPEM(tb)}))
}

func openCA(m *Model) { do(m, ":", "c", "a", "enter") }

func caAudit(t *testing.T, e *env) []registry.AuditEntry {
	t.Helper()
	var out []registry.AuditEntry
	for _, a := range must(e.reg.ListAudit(e.admin, registry.AuditListParams{Limit: 100})) {
		if a.Action == registry.AuditCAInit || a.Action == registry.AuditCAReplace {
			out = append(out, a)
		}
	}
	return out
}

// :ca over either backend: with no CA it says so and offers i; i asks
// first (n changes nothing), y creates the CA by the registry's InitCA,
// audited as the console's person, and the view then shows the certificate
// read from the store; i does nothing once there is a CA.
func TestCAViewCreatesTheCA(t *testing.T) {
	for _, tc := range []struct {
		name  string
		actor string
		back  func(t *testing.T, e *env) Backend
	}{
		{"local", "alice", func(t *testing.T, e *env) Backend { return e.backend() }},
		{"remote", "oncall-admin", func(t *testing.T, e *env) Backend { return remoteEnv(t, e, registry.RoleAdmin, "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			seedFleet(t, e)
			m := New(Options{Backend: tc.back(t, e), ServerURL: "http://127.0.0.1:7070"})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			load(t, m, e)
			openCA(m)
			if _, ok := m.top().(*caView); !ok {
				t.Fatalf(":ca opened %T, want the CA view", m.top())
			}
			view := m.View().Content
			for _, want := range []string{"NO CERTIFICATE AUTHORITY", "tether has no CA", "i creates one", "create the CA"} {
				if !strings.Contains(view, want) {
					t.Errorf("the CA view without a CA lacks %q:\n%s", want, view)
				}
			}
			do(m, "i")
			if !isModal[*confirm](m) {
				t.Fatalf("i opened %T, want a confirmation", m.modal)
			}
			do(m, "n")
			if cas := must(e.reg.CAs(e.admin)); len(cas) != 0 || m.modal != nil {
				t.Fatalf("n: %d CAs, modal %T; want none", len(cas), m.modal)
			}
			do(m, "i", "y")
			cas := must(e.reg.CAs(e.admin))
			if len(cas) != 1 {
				t.Fatalf("y: %d CAs, want 1 (status %q)", len(cas), m.status)
			}
			if !strings.Contains(m.status, "created tether's CA "+cas[0].ID) {
				t.Errorf("status %q does not name the new CA %s", m.status, cas[0].ID)
			}
			audit := caAudit(t, e)
			if len(audit) != 1 || audit[0].Action != registry.AuditCAInit || !strings.Contains(audit[0].Actor, tc.actor) || audit[0].TargetID != cas[0].ID {
				t.Errorf("audit %+v, want one ca.init of %s by %s", audit, cas[0].ID, tc.actor)
			}
			cert := must(x509.ParseCertificate(cas[0].CertDER))
			view = m.View().Content
			for _, want := range []string{"CURRENT CA", cas[0].ID, "ECDSA P-256", "O=tether", fingerprint(cert.Raw)[:47], stamp(cert.NotAfter)} {
				if !strings.Contains(view, want) {
					t.Errorf("the CA view lacks %q:\n%s", want, view)
				}
			}
			if strings.Contains(view, "create the CA") {
				t.Errorf("the CA view still offers to create one:\n%s", view)
			}
			do(m, "i")
			if m.modal != nil || len(must(e.reg.CAs(e.admin))) != 1 {
				t.Errorf("i with a CA: modal %T; it must do nothing", m.modal)
			}
		})
	}
}

// Who may not create the CA is not offered i: a read-only console and a
// viewer's (i says read-only), an operator's (i says only an admin may).
// Nothing is created.
func TestCAViewRefusesNonAdmins(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly bool
		role     registry.Role
		says     string
	}{
		{"read_only", true, "", "read-only mode"},
		{"viewer", false, registry.RoleViewer, "read-only mode"},
		{"operator", false, registry.RoleOperator, "create the CA needs the admin role; this console has the operator role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			seedFleet(t, e)
			var b Backend = e.backend()
			ro := tc.readOnly
			if tc.role != "" {
				r := remoteEnv(t, e, tc.role, "")
				b, ro = r, r.ReadOnly()
			}
			m := New(Options{Backend: b, ReadOnly: ro, ServerURL: "http://127.0.0.1:7070"})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			load(t, m, e)
			openCA(m)
			view := m.View().Content
			if strings.Contains(view, "create the CA") || strings.Contains(view, "i creates") || !strings.Contains(view, "An admin creates one with tether ca init") {
				t.Errorf("a console that may not create the CA offers it, or does not say who may:\n%s", view)
			}
			do(m, "i")
			if m.modal != nil {
				t.Fatalf("i opened %T", m.modal)
			}
			if !strings.Contains(m.status, tc.says) {
				t.Errorf("i: status %q, want %q", m.status, tc.says)
			}
			if n := len(must(e.reg.CAs(e.admin))); n != 0 || len(caAudit(t, e)) != 0 {
				t.Errorf("%d CAs created", n)
			}
		})
	}
}

// The cluster detail shows, over either backend, whether tether has a CA
// (SECURITY) and each credential's client certificate (CREDENTIALS).
func TestClusterDetailShowsCertificates(t *testing.T) {
	for _, name := range []string{"local", "remote"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			seedFleet(t, e)
			var b Backend = e.backend()
			if name == "remote" {
				b = remoteEnv(t, e, registry.RoleViewer, "")
			}
			m := New(Options{Backend: b, ReadOnly: true, ServerURL: "http://127.0.0.1:7070"})
			m.Update(tea.WindowSizeMsg{Width: 200, Height: 80})
			load(t, m, e)
			do(m, ":")
			do(m, strings.Split("clusters prod-eu-1", "")...)
			do(m, "enter")
			if view := m.View().Content; !strings.Contains(view, "tether's CA") || !strings.Contains(view, "none: agents get no client certificates") {
				t.Errorf("without a CA the detail's SECURITY does not say so:\n%s", view)
			}
			do(m, "esc")

			issued := certifiedCluster(t, e)
			cc := must(e.reg.ListCredentials(e.admin, issued.Credential.ClusterID))[0].ClientCertificate
			if cc == nil {
				t.Fatal("the credential registered with a CSR has no certificate")
			}
			load(t, m, e)
			do(m, ":")
			do(m, strings.Split("clusters secure-1", "")...)
			do(m, "enter")
			view := m.View().Content
			ca := must(e.reg.CAs(e.admin))[0]
			for _, want := range []string{"tether's CA", ca.ID + " · valid until " + stamp(ca.NotAfter),
				"client certificate " + cc.Serial[:8] + "… · cert until " + cc.NotAfter.UTC().Format("2006-01-02")} {
				if !strings.Contains(view, want) {
					t.Errorf("the detail lacks %q:\n%s", want, view)
				}
			}
		})
	}
}

// A credential the feed brings carries its client certificate, as
// ListCredentials does: the console keeps the fleet's credentials from the
// feed, so a cluster whose agent registers while the console is open shows
// its certificate without a reload.
func TestFeedCredentialCarriesItsCertificate(t *testing.T) {
	e := newEnv(t)
	b := e.backend()
	since := must(b.LatestSeq(e.admin))
	ctx, cancel := context.WithTimeout(e.admin, 30*time.Second)
	defer cancel()
	events := must(b.Watch(ctx, registry.WatchParams{Since: since, Kinds: []registry.EntityKind{registry.EntityCredential}}))
	issued := certifiedCluster(t, e)
	for ev := range events {
		if ev.Credential == nil || ev.Credential.ID != issued.Credential.ID {
			continue
		}
		if cc := ev.Credential.ClientCertificate; cc == nil || cc.CredentialID != issued.Credential.ID || cc.Serial == "" {
			t.Fatalf("the feed's credential has certificate %+v, want the one issued with it", cc)
		}
		return
	}
	t.Fatal("the feed ended without the new credential")
}
