package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func (s *Store) clusterByID(ctx context.Context, id string) (*registry.Cluster, error) {
	c, err := record.ScanCluster(s.queryRow(ctx, "SELECT "+record.ClusterCols+record.ClusterFrom+" WHERE c.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", id)
	}
	return c, s.wrap(err, "read a cluster")
}

func (t *txn) clusterByID(id string) (*registry.Cluster, error) {
	c, err := record.ScanCluster(t.selectRow("SELECT "+record.ClusterCols+record.ClusterFrom+" WHERE c.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", id)
	}
	return c, t.s.wrap(err, "read a cluster")
}

func (s *Store) ClusterGet(ctx context.Context, id string) (*registry.Cluster, error) {
	return s.clusterByID(ctx, id)
}

func (s *Store) ClusterGetByName(ctx context.Context, name string) (*registry.Cluster, error) {
	c, err := record.ScanCluster(s.queryRow(ctx, "SELECT "+record.ClusterCols+record.ClusterFrom+" WHERE c.name = ? COLLATE NOCASE", name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "no cluster is named %q", name)
	}
	return c, s.wrap(err, "read a cluster")
}

func (s *Store) ClusterList(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error) {
	// NOCASE folds ASCII letters only and compares every other byte as it
	// is: the order registry.ClusterListParams defines.
	q := "SELECT " + record.ClusterCols + record.ClusterFrom + " WHERE (? = '' OR c.state = ?) AND (? = '' OR c.organization = ?)"
	args := []any{p.State, p.State, p.Organization, p.Organization}
	if c := p.After; c != nil {
		q += " AND (c.name COLLATE NOCASE > ? OR (c.name COLLATE NOCASE = ? AND c.id > ?))"
		args = append(args, c.Name, c.Name, c.ID)
	}
	q += " ORDER BY c.name COLLATE NOCASE, c.id"
	if p.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, p.Limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list record.Clusters
	for rows.Next() {
		if err := list.Scan(rows); err != nil {
			return nil, s.wrap(err, "read clusters")
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "read clusters")
	}
	return list.List(), nil
}

func (s *Store) ClusterCreate(ctx context.Context, p registry.ClusterCreateParams) error {
	return s.write(ctx, func(t *txn) error {
		c := &p.Cluster
		_, err := t.exec(`INSERT INTO clusters (id, name, organization, public_key, allowed_namespaces, allowed_catalog_entries,
			allowed_operation_templates, mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at, labels, require_client_cert, require_signed_payloads, require_encrypted_payloads, allow_legacy_payload_signatures)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Name, c.Organization, string(c.PublicKey), col.JSONText(c.AllowedNamespaces), col.JSONText(c.AllowedCatalogEntries),
			col.JSONText(c.AllowedOperationTemplates), c.Mode, c.State, c.Policy.LeaseSeconds, c.Policy.MaxAttempts,
			col.JSONText(c.Policy.RequiredCapabilities), c.Version, col.MS(c.CreatedAt), col.MS(c.UpdatedAt), col.MS(c.RegisteredAt), col.JSONObject(c.Labels),
			c.Policy.RequireClientCertificate, c.Policy.RequireSignedPayloads, c.Policy.RequireEncryptedPayloads, c.Policy.AllowLegacyPayloadSignatures)
		if isUniqueViolation(err) {
			return registry.Errorf(registry.CodeConflict, "a cluster named %q already exists; choose another name", c.Name)
		}
		if err != nil {
			return err
		}
		if p.Token != nil {
			if err := t.insertToken(p.Token); err != nil {
				return err
			}
		}
		return t.audit(p.Audit...)
	})
}

func (s *Store) ClusterUpdate(ctx context.Context, p registry.ClusterUpdateParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.write(ctx, func(t *txn) error {
		sp := &p.Spec
		res, err := t.exec(`UPDATE clusters SET name = ?, organization = ?, public_key = ?, allowed_namespaces = ?,
			allowed_catalog_entries = ?, allowed_operation_templates = ?, mode = ?, lease_seconds = ?, max_attempts = ?,
			required_capabilities = ?, labels = ?, require_client_cert = ?, require_signed_payloads = ?, require_encrypted_payloads = ?, allow_legacy_payload_signatures = ?, version = version + 1, updated_at = ?
			WHERE id = ? AND version = ?`,
			sp.Name, sp.Organization, string(sp.PublicKey), col.JSONText(sp.AllowedNamespaces), col.JSONText(sp.AllowedCatalogEntries),
			col.JSONText(sp.AllowedOperationTemplates), sp.Mode, sp.Policy.LeaseSeconds, sp.Policy.MaxAttempts,
			col.JSONText(sp.Policy.RequiredCapabilities), col.JSONObject(sp.Labels), sp.Policy.RequireClientCertificate, sp.Policy.RequireSignedPayloads, sp.Policy.RequireEncryptedPayloads, sp.Policy.AllowLegacyPayloadSignatures, col.MS(p.Now), p.ID, p.Version)
		if isUniqueViolation(err) {
			return registry.Errorf(registry.CodeConflict, "a cluster named %q already exists; choose another name", sp.Name)
		}
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			cur, err := t.clusterByID(p.ID)
			if err != nil {
				return err
			}
			return registry.Errorf(registry.CodeConflict,
				"cluster %s was changed by someone else: you edited version %d, it is now at version %d; reload it and apply your change again",
				p.ID, p.Version, cur.Version)
		}
		if err := t.audit(p.Audit); err != nil {
			return err
		}
		out, err = t.clusterByID(p.ID)
		return err
	})
	return out, err
}

func (s *Store) ClusterSetEnabled(ctx context.Context, p registry.ClusterSetEnabledParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.write(ctx, func(t *txn) error {
		state := "'disabled'"
		if p.Enabled {
			state = "CASE WHEN registered_at IS NULL THEN 'pending' ELSE 'active' END"
		}
		res, err := t.exec("UPDATE clusters SET state = "+state+", version = version + 1, updated_at = ? WHERE id = ?", col.MS(p.Now), p.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", p.ID)
		}
		if err := t.audit(p.Audit); err != nil {
			return err
		}
		out, err = t.clusterByID(p.ID)
		return err
	})
	return out, err
}

func (s *Store) ClusterSetPaused(ctx context.Context, p registry.ClusterSetPausedParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.write(ctx, func(t *txn) error {
		pausedAt, reason := col.MS(p.Now), p.Reason
		if !p.Paused {
			pausedAt, reason = nil, ""
		}
		res, err := t.exec("UPDATE clusters SET paused_at = ?, pause_reason = ?, version = version + 1, updated_at = ? WHERE id = ?",
			pausedAt, reason, col.MS(p.Now), p.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", p.ID)
		}
		if err := t.audit(p.Audit); err != nil {
			return err
		}
		out, err = t.clusterByID(p.ID)
		return err
	})
	return out, err
}

func (s *Store) ClusterDelete(ctx context.Context, p registry.ClusterDeleteParams) error {
	return s.write(ctx, func(t *txn) error {
		res, err := t.exec("DELETE FROM clusters WHERE id = ?", p.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", p.ID)
		}
		return t.audit(p.Audit)
	})
}
