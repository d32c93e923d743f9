package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// fixedKey is an X25519 public key (RFC 7748's Alice), so that its kid in
// the goldens is stable.
const fixedKey = `{"kty":"OKP","crv":"X25519","x":"hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr0666pjqqbTmo"}`

// secureEU gives prod-eu-1 a public key and turns every protection on, and
// queues a job whose payload is then sealed.
func secureEU(h *harness) {
	h.t.Helper()
	e := h.env
	must(e.reg.ModifyCluster(e.admin, h.fx.euID, func(s *registry.ClusterSpec) error {
		s.PublicKey = fixedKey
		s.Policy.RequireSignedPayloads, s.Policy.RequireEncryptedPayloads, s.Policy.RequireClientCertificate = true, true, true
		s.Policy.RequiredCapabilities = []string{registry.CapabilityHMAC}
		return nil
	}))
}

// The cluster detail shows the security posture: signed and encrypted
// payloads, HMAC, mTLS and the key (goldens at 120x40 and 80x24).
func TestGoldenSecurityPosture(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		scroll        string
	}{{"cluster_detail_security", 120, 40, "G"}, {"narrow_cluster_detail_security", 80, 24, "ctrl+d"}} {
		t.Run(tc.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: tc.width, height: tc.height, seed: secureEU})
			h.keys(":")
			h.typeText("clusters prod-eu-1")
			h.keys("enter")
			h.waitIdle(topIs[*clusterDetail])
			h.keys(tc.scroll) // the SECURITY section is below the queue and allowlists
			h.waitIdle(topIs[*clusterDetail])
			frame := h.frame()
			for _, want := range []string{"SECURITY", "signed payloads", "encrypted payloads", "mTLS", "HMAC writes"} {
				if !strings.Contains(frame, want) {
					t.Errorf("the detail does not show %q", want)
				}
			}
			h.golden()
		})
	}
}

// The edit form edits the security toggles: encryption on a cluster
// without a key is refused with the registry's error and changes nothing;
// with a key pasted in the form it is saved, and the other toggles are
// kept as they were (they used to be dropped on save).
func TestEditFormSecurityToggles(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
	}{{"edit_cluster_security", 120, 40}, {"narrow_edit_cluster_security", 80, 24}} {
		t.Run(tc.name, func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: tc.width, height: tc.height, seed: func(h *harness) {
				must(h.env.reg.ModifyCluster(h.env.admin, h.fx.usID, func(s *registry.ClusterSpec) error {
					s.Policy.RequireClientCertificate = true
					return nil
				}))
			}})
			h.keys(":")
			h.typeText("clusters prod-us-1")
			h.keys("enter")
			h.waitIdle(topIs[*clusterDetail])
			h.keys("e")
			h.waitIdle(isModal[*clusterForm])
			// To the Security field; move to "encrypted payloads" and toggle it.
			var sec int
			h.inspect(func(m *Model) {
				f := m.modal.(*clusterForm)
				for i, fd := range f.fields {
					if fd.key == "security" {
						sec = i
					}
				}
			})
			for range sec {
				h.keys("tab")
			}
			h.keys("right", "space", "ctrl+s")
			h.waitIdle(func(m *Model) bool {
				f, ok := m.modal.(*clusterForm)
				return ok && !f.saving && f.err != ""
			})
			var formErr string
			h.inspect(func(m *Model) { formErr = m.modal.(*clusterForm).err })
			if !strings.Contains(formErr, "no public key") {
				t.Fatalf("saving encryption without a key: form error %q", formErr)
			}
			h.golden()

			// Paste a key in the Public key field (after Legacy sigs) and save.
			h.keys("tab", "tab")
			h.typeText(fixedKey)
			h.keys("ctrl+s")
			h.waitIdle(func(m *Model) bool { return m.modal == nil })
			c, err := h.env.reg.GetCluster(context.Background(), h.fx.usID)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Policy.RequireEncryptedPayloads || c.PublicKey.Curve() != "X25519" || !c.Policy.RequireClientCertificate || c.Policy.RequireSignedPayloads {
				t.Fatalf("saved policy %+v key %q: want encryption and mTLS on, signing off, the X25519 key", c.Policy, c.PublicKey)
			}
		})
	}
}

// A job of a cluster with encrypted payloads shows its payload withheld;
// P opens it, and the viewing is in the audit trail.
func TestJobDetailSealedPayload(t *testing.T) {
	var jobID string
	h := startConsole(t, consoleOpts{start: "jobs", seed: func(h *harness) {
		secureEU(h)
		jobID = h.env.submit(h.t, h.fx.euID, "web", "vault-sync").ID
	}})
	h.keys(":")
	h.typeText("job " + h.id(jobID))
	h.keys("enter")
	h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
	h.keys("G")
	h.waitIdle(func(m *Model) bool { return true })
	if frame := h.frame(); !strings.Contains(frame, "sealed at rest and withheld") || strings.Contains(frame, "replicas") {
		t.Fatalf("the sealed payload is not withheld:\n%s", frame)
	}
	h.golden()
	h.keys("P")
	h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.revealed != nil })
	h.keys("G")
	h.waitIdle(func(m *Model) bool { return true })
	if frame := h.frame(); !strings.Contains(frame, "replicas") || !strings.Contains(frame, "shown on request") {
		t.Fatalf("P did not show the payload:\n%s", frame)
	}
	audit, err := h.env.reg.ListAudit(context.Background(), registry.AuditListParams{Action: registry.AuditJobPayloadViewed})
	if err != nil || len(audit) != 1 || audit[0].TargetID != jobID || audit[0].Actor != "admin:alice" {
		t.Fatalf("audit %+v, %v: want one viewing of %s by the console's user", audit, err, jobID)
	}
}
