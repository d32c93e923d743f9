package registry

import (
	"fmt"
	"slices"
	"strings"
)

// SpecChange is one field of a ClusterSpec that an edit changed. From and
// To are the field's values as typed: string, ConnectivityMode, Labels,
// []string, int, bool or AgentPublicKey; each surface words them its own
// way (the audit trail with describeSpecChange, the console its own).
type SpecChange struct {
	// Field is the spec field's JSON name, with the policy's fields
	// unprefixed: "name", "labels", "allowedNamespaces", "leaseSeconds",
	// "publicKey".
	Field    string
	From, To any
}

// DiffClusterSpec lists the fields that differ from old to new, in the
// spec's order: the one definition of "changed" every surface uses (an edit
// whose list is empty changes nothing). Lists compare in order; labels as
// sets; public keys by key id.
func DiffClusterSpec(old, new *ClusterSpec) []SpecChange {
	var out []SpecChange
	diff := func(field string, a, b any, same bool) {
		if !same {
			out = append(out, SpecChange{Field: field, From: a, To: b})
		}
	}
	diff("name", old.Name, new.Name, old.Name == new.Name)
	diff("organization", old.Organization, new.Organization, old.Organization == new.Organization)
	diff("labels", old.Labels, new.Labels, old.Labels.String() == new.Labels.String())
	diff("mode", old.Mode, new.Mode, old.Mode == new.Mode)
	diff("allowedNamespaces", old.AllowedNamespaces, new.AllowedNamespaces, slices.Equal(old.AllowedNamespaces, new.AllowedNamespaces))
	diff("allowedCatalogEntries", old.AllowedCatalogEntries, new.AllowedCatalogEntries, slices.Equal(old.AllowedCatalogEntries, new.AllowedCatalogEntries))
	diff("allowedOperationTemplates", old.AllowedOperationTemplates, new.AllowedOperationTemplates, slices.Equal(old.AllowedOperationTemplates, new.AllowedOperationTemplates))
	op, np := &old.Policy, &new.Policy
	diff("leaseSeconds", op.LeaseSeconds, np.LeaseSeconds, op.LeaseSeconds == np.LeaseSeconds)
	diff("maxAttempts", op.MaxAttempts, np.MaxAttempts, op.MaxAttempts == np.MaxAttempts)
	diff("requiredCapabilities", op.RequiredCapabilities, np.RequiredCapabilities, slices.Equal(op.RequiredCapabilities, np.RequiredCapabilities))
	diff("requireClientCertificate", op.RequireClientCertificate, np.RequireClientCertificate, op.RequireClientCertificate == np.RequireClientCertificate)
	diff("requireSignedPayloads", op.RequireSignedPayloads, np.RequireSignedPayloads, op.RequireSignedPayloads == np.RequireSignedPayloads)
	diff("requireEncryptedPayloads", op.RequireEncryptedPayloads, np.RequireEncryptedPayloads, op.RequireEncryptedPayloads == np.RequireEncryptedPayloads)
	diff("allowLegacyPayloadSignatures", op.AllowLegacyPayloadSignatures, np.AllowLegacyPayloadSignatures, op.AllowLegacyPayloadSignatures == np.AllowLegacyPayloadSignatures)
	diff("publicKey", old.PublicKey, new.PublicKey, old.PublicKey.KeyID() == new.PublicKey.KeyID())
	return out
}

// describeSpecChange words an edit for the audit trail ("no change" when
// nothing changed).
func describeSpecChange(old, new *ClusterSpec) string {
	changes := DiffClusterSpec(old, new)
	if len(changes) == 0 {
		return "no change"
	}
	parts := make([]string, len(changes))
	for i, ch := range changes {
		parts[i] = fmt.Sprintf("%s %v -> %v", auditFieldName(ch.Field), auditValue(ch.From), auditValue(ch.To))
	}
	return strings.Join(parts, "; ")
}

// auditFieldName is the audit trail's name of a field: the list fields
// shortened, as its entries have always read.
func auditFieldName(field string) string {
	switch field {
	case "allowedNamespaces":
		return "namespaces"
	case "allowedCatalogEntries":
		return "catalog"
	case "allowedOperationTemplates":
		return "templates"
	}
	return field
}

func auditValue(v any) any {
	switch v := v.(type) {
	case Labels:
		return "{" + v.String() + "}"
	case AgentPublicKey:
		return v.KeyID()
	}
	return v
}
