package record

import (
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// ClusterCols are a cluster's columns and its status's, as ScanCluster
// reads them; select them FROM ClusterFrom.
const ClusterCols = `c.id, c.name, c.organization, c.public_key, c.allowed_namespaces, c.allowed_catalog_entries,
	c.allowed_operation_templates, c.mode, c.state, c.lease_seconds, c.max_attempts, c.required_capabilities,
	c.version, c.created_at, c.updated_at, c.registered_at, c.labels, c.paused_at, c.pause_reason, c.require_client_cert, c.require_signed_payloads, c.require_encrypted_payloads, c.allow_legacy_payload_signatures,
	s.last_heartbeat_at, s.capabilities, s.conditions, s.updated_at`

// ClusterFrom joins a cluster (c) to its status (s).
const ClusterFrom = ` FROM clusters c LEFT JOIN cluster_status s ON s.cluster_id = c.id`

// ScanCluster reads a row of ClusterCols.
func ScanCluster(row Scanner) (*registry.Cluster, error) {
	var c registry.Cluster
	c.AllowedNamespaces, c.AllowedCatalogEntries, c.AllowedOperationTemplates = []string{}, []string{}, []string{}
	c.Policy.RequiredCapabilities = []string{}
	c.Status.Capabilities, c.Status.Conditions = []string{}, []registry.Condition{}
	err := row.Scan(&c.ID, &c.Name, &c.Organization, (*string)(&c.PublicKey), col.JSON(&c.AllowedNamespaces), col.JSON(&c.AllowedCatalogEntries),
		col.JSON(&c.AllowedOperationTemplates), &c.Mode, &c.State, &c.Policy.LeaseSeconds, &c.Policy.MaxAttempts, col.JSON(&c.Policy.RequiredCapabilities),
		&c.Version, col.Time(&c.CreatedAt), col.Time(&c.UpdatedAt), col.Time(&c.RegisteredAt), col.JSON(&c.Labels), col.Time(&c.PausedAt), &c.PauseReason, &c.Policy.RequireClientCertificate, &c.Policy.RequireSignedPayloads, &c.Policy.RequireEncryptedPayloads, &c.Policy.AllowLegacyPayloadSignatures,
		col.Time(&c.Status.LastHeartbeatAt), col.JSON(&c.Status.Capabilities), col.JSON(&c.Status.Conditions), col.Time(&c.Status.UpdatedAt))
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// Clusters collects the clusters of a list as they are scanned. A fleet's
// list is tens of thousands of clusters: appended one by one to a growing
// []registry.Cluster, each several hundred bytes, the list was copied about
// five times over as it grew (half of a 50,000-cluster list's time); the
// scanned clusters are kept by pointer instead and copied once, by List.
type Clusters struct{ scanned []*registry.Cluster }

// Scan reads a row of ClusterCols into the list.
func (l *Clusters) Scan(row Scanner) error {
	c, err := ScanCluster(row)
	if err != nil {
		return err
	}
	l.scanned = append(l.scanned, c)
	return nil
}

// List returns the clusters scanned, in their order (never nil).
func (l *Clusters) List() []registry.Cluster {
	out := make([]registry.Cluster, len(l.scanned))
	for i, c := range l.scanned {
		out[i] = *c
	}
	return out
}
