package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tetherhq/tether/registry"
)

// keyText names a public key in a diff: its curve and kid, or none. A key
// typed in the form that does not parse is "a new key" (the registry says
// what is wrong with it on save).
func keyText(k registry.AgentPublicKey) string {
	switch id := k.KeyID(); id {
	case "none", "invalid":
		if id == "invalid" {
			return "a new key"
		}
		return id
	default:
		return k.Curve() + " " + id[:min(12, len(id))] + "…"
	}
}

// describeDiff lists what changed from a to b, for status lines and the
// conflict dialog ("" when nothing did).
func describeDiff(a, b registry.ClusterSpec) string {
	var parts []string
	scalar := func(name string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			parts = append(parts, fmt.Sprintf("%s %v → %v", name, x, y))
		}
	}
	list := func(name string, x, y []string) {
		var add, del []string
		for _, v := range y {
			if !slices.Contains(x, v) {
				add = append(add, "+"+v)
			}
		}
		for _, v := range x {
			if !slices.Contains(y, v) {
				del = append(del, "-"+v)
			}
		}
		if len(add)+len(del) > 0 {
			parts = append(parts, name+" "+strings.Join(append(add, del...), " "))
		}
	}
	scalar("name", a.Name, b.Name)
	scalar("organization", a.Organization, b.Organization)
	scalar("mode", a.Mode, b.Mode)
	list("namespaces", a.AllowedNamespaces, b.AllowedNamespaces)
	list("catalog", a.AllowedCatalogEntries, b.AllowedCatalogEntries)
	list("templates", a.AllowedOperationTemplates, b.AllowedOperationTemplates)
	scalar("lease", a.Policy.LeaseSeconds, b.Policy.LeaseSeconds)
	scalar("max attempts", a.Policy.MaxAttempts, b.Policy.MaxAttempts)
	list("requires", a.Policy.RequiredCapabilities, b.Policy.RequiredCapabilities)
	scalar("signed payloads", a.Policy.RequireSignedPayloads, b.Policy.RequireSignedPayloads)
	scalar("legacy signatures", a.Policy.AllowLegacyPayloadSignatures, b.Policy.AllowLegacyPayloadSignatures)
	scalar("encrypted payloads", a.Policy.RequireEncryptedPayloads, b.Policy.RequireEncryptedPayloads)
	scalar("mTLS", a.Policy.RequireClientCertificate, b.Policy.RequireClientCertificate)
	if keyText(a.PublicKey) != keyText(b.PublicKey) {
		parts = append(parts, "public key "+keyText(a.PublicKey)+" → "+keyText(b.PublicKey))
	}
	return strings.Join(parts, "; ")
}
