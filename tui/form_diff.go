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

// diffLabels are the console's words for the spec's fields
// (registry.SpecChange.Field).
var diffLabels = map[string]string{
	"allowedNamespaces":            "namespaces",
	"allowedCatalogEntries":        "catalog",
	"allowedOperationTemplates":    "templates",
	"leaseSeconds":                 "lease",
	"maxAttempts":                  "max attempts",
	"requiredCapabilities":         "requires",
	"requireClientCertificate":     "mTLS",
	"requireSignedPayloads":        "signed payloads",
	"requireEncryptedPayloads":     "encrypted payloads",
	"allowLegacyPayloadSignatures": "legacy signatures",
	"publicKey":                    "public key",
}

// describeDiff words what changed from a to b (registry.DiffClusterSpec),
// for status lines and the conflict dialog ("" when nothing did).
func describeDiff(a, b registry.ClusterSpec) string {
	changes := registry.DiffClusterSpec(&a, &b)
	parts := make([]string, len(changes))
	for i, ch := range changes {
		name := ch.Field
		if l, ok := diffLabels[name]; ok {
			name = l
		}
		switch from := ch.From.(type) {
		case []string:
			parts[i] = name + " " + listDiff(from, ch.To.([]string))
		case registry.Labels:
			parts[i] = fmt.Sprintf("%s {%s} → {%s}", name, from, ch.To.(registry.Labels))
		case registry.AgentPublicKey:
			parts[i] = name + " " + keyText(from) + " → " + keyText(ch.To.(registry.AgentPublicKey))
		default:
			parts[i] = fmt.Sprintf("%s %v → %v", name, ch.From, ch.To)
		}
	}
	return strings.Join(parts, "; ")
}

// listDiff words a list's change as the items added (+) and removed (-),
// or "reordered" when it holds the same items.
func listDiff(x, y []string) string {
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
	if len(add)+len(del) == 0 {
		return "reordered"
	}
	return strings.Join(append(add, del...), " ")
}
