package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func errNoCluster(id string) error {
	return registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", id)
}

func (s *Store) clusterByID(ctx context.Context, q db, id string) (*registry.Cluster, error) {
	c, err := record.ScanCluster(q.QueryRow(ctx, "SELECT "+record.ClusterCols+record.ClusterFrom+" WHERE c.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoCluster(id)
	}
	return c, s.wrap(err, "read a cluster")
}

func (s *Store) ClusterGet(ctx context.Context, id string) (*registry.Cluster, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	return s.clusterByID(ctx, s.pool, id)
}

func (s *Store) ClusterGetByName(ctx context.Context, name string) (*registry.Cluster, error) {
	c, err := record.ScanCluster(s.queryRow(ctx, "SELECT "+record.ClusterCols+record.ClusterFrom+` WHERE lower(c.name) = lower($1::TEXT COLLATE "C")`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "no cluster is named %q", name)
	}
	return c, s.wrap(err, "read a cluster")
}

func (s *Store) ClusterList(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error) {
	// Under the "C" collation lower() folds ASCII letters only and text
	// compares byte by byte: SQLite's NOCASE, the order
	// registry.ClusterListParams defines, whatever the database's locale.
	a := args{string(p.State), p.Organization}
	q := "SELECT " + record.ClusterCols + record.ClusterFrom + " WHERE ($1 = '' OR c.state = $1) AND ($2 = '' OR c.organization = $2)"
	if c := p.After; c != nil {
		name := "lower(" + a.add(c.Name) + ` COLLATE "C")`
		q += ` AND (lower(c.name COLLATE "C") > ` + name + ` OR (lower(c.name COLLATE "C") = ` + name + ` AND c.id COLLATE "C" > ` + a.add(c.ID) + "))"
	}
	q += ` ORDER BY lower(c.name COLLATE "C"), c.id COLLATE "C"`
	if p.Limit > 0 {
		q += " LIMIT " + a.add(p.Limit)
	}
	rows, err := s.query(ctx, "read clusters", q, a...)
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

func errNameTaken(name string) error {
	return registry.Errorf(registry.CodeConflict, "a cluster named %q already exists; choose another name", name)
}

func (s *Store) ClusterCreate(ctx context.Context, p registry.ClusterCreateParams) error {
	return s.write(ctx, "create a cluster", func(ctx context.Context, q db) error {
		c := &p.Cluster
		_, err := q.Exec(ctx, `INSERT INTO clusters (id, name, organization, public_key, allowed_namespaces, allowed_catalog_entries,
			allowed_operation_templates, mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at, labels, require_client_cert, require_signed_payloads, require_encrypted_payloads, allow_legacy_payload_signatures)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
			c.ID, c.Name, c.Organization, string(c.PublicKey), col.JSONText(c.AllowedNamespaces), col.JSONText(c.AllowedCatalogEntries),
			col.JSONText(c.AllowedOperationTemplates), string(c.Mode), string(c.State), c.Policy.LeaseSeconds, c.Policy.MaxAttempts,
			col.JSONText(c.Policy.RequiredCapabilities), c.Version, col.MS(c.CreatedAt), col.MS(c.UpdatedAt), col.MS(c.RegisteredAt), col.JSONObject(c.Labels),
			c.Policy.RequireClientCertificate, c.Policy.RequireSignedPayloads, c.Policy.RequireEncryptedPayloads, c.Policy.AllowLegacyPayloadSignatures)
		if isUniqueViolation(err, "clusters_name") {
			return errNameTaken(c.Name)
		}
		if err != nil {
			return err
		}
		if p.Token != nil {
			if err := insertToken(ctx, q, p.Token); err != nil {
				return err
			}
		}
		return insertAudit(ctx, q, p.Audit...)
	})
}

// ClusterUpdate is one statement: the compare-and-swap, its audit entry, and
// the cluster as updated.
func (s *Store) ClusterUpdate(ctx context.Context, p registry.ClusterUpdateParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.stmt(ctx, "update a cluster", func(ctx context.Context, q db) error {
		sp := &p.Spec
		var a args
		sql := `WITH c AS (UPDATE clusters SET name = ` + a.add(sp.Name) + `, organization = ` + a.add(sp.Organization) +
			`, public_key = ` + a.add(string(sp.PublicKey)) + `, allowed_namespaces = ` + a.add(col.JSONText(sp.AllowedNamespaces)) +
			`, allowed_catalog_entries = ` + a.add(col.JSONText(sp.AllowedCatalogEntries)) +
			`, allowed_operation_templates = ` + a.add(col.JSONText(sp.AllowedOperationTemplates)) + `, mode = ` + a.add(string(sp.Mode)) +
			`, lease_seconds = ` + a.add(sp.Policy.LeaseSeconds) + `, max_attempts = ` + a.add(sp.Policy.MaxAttempts) +
			`, required_capabilities = ` + a.add(col.JSONText(sp.Policy.RequiredCapabilities)) +
			`, labels = ` + a.add(col.JSONObject(sp.Labels)) +
			`, require_client_cert = ` + a.add(sp.Policy.RequireClientCertificate) +
			`, require_signed_payloads = ` + a.add(sp.Policy.RequireSignedPayloads) +
			`, require_encrypted_payloads = ` + a.add(sp.Policy.RequireEncryptedPayloads) +
			`, allow_legacy_payload_signatures = ` + a.add(sp.Policy.AllowLegacyPayloadSignatures) +
			`, version = version + 1, updated_at = ` + a.add(col.MS(p.Now)) +
			` WHERE id = ` + a.add(p.ID) + ` AND version = ` + a.add(p.Version) + ` RETURNING *),
			a AS (` + auditFrom(&a, p.Audit, "c", "") + `)
			SELECT ` + record.ClusterCols + ` FROM c LEFT JOIN cluster_status s ON s.cluster_id = c.id`
		c, err := record.ScanCluster(q.QueryRow(ctx, sql, a...))
		if isUniqueViolation(err, "clusters_name") {
			return errNameTaken(sp.Name)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			cur, err := s.clusterByID(ctx, q, p.ID)
			if err != nil {
				return err
			}
			return registry.Errorf(registry.CodeConflict,
				"cluster %s was changed by someone else: you edited version %d, it is now at version %d; reload it and apply your change again",
				p.ID, p.Version, cur.Version)
		}
		out = c
		return err
	})
	return out, err
}

func (s *Store) ClusterSetEnabled(ctx context.Context, p registry.ClusterSetEnabledParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.stmt(ctx, "enable or disable a cluster", func(ctx context.Context, q db) error {
		state := "'disabled'"
		if p.Enabled {
			state = "CASE WHEN registered_at IS NULL THEN 'pending' ELSE 'active' END"
		}
		var a args
		sql := `WITH c AS (UPDATE clusters SET state = ` + state + `, version = version + 1, updated_at = ` + a.add(col.MS(p.Now)) +
			` WHERE id = ` + a.add(p.ID) + ` RETURNING *),
			a AS (` + auditFrom(&a, p.Audit, "c", "") + `)
			SELECT ` + record.ClusterCols + ` FROM c LEFT JOIN cluster_status s ON s.cluster_id = c.id`
		c, err := record.ScanCluster(q.QueryRow(ctx, sql, a...))
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoCluster(p.ID)
		}
		out = c
		return err
	})
	return out, err
}

func (s *Store) ClusterSetPaused(ctx context.Context, p registry.ClusterSetPausedParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.stmt(ctx, "pause or resume a cluster's queue", func(ctx context.Context, q db) error {
		var pausedAt any
		reason := ""
		if p.Paused {
			pausedAt, reason = col.MS(p.Now), p.Reason
		}
		var a args
		sql := `WITH c AS (UPDATE clusters SET paused_at = ` + a.add(pausedAt) + `::BIGINT, pause_reason = ` + a.add(reason) +
			`, version = version + 1, updated_at = ` + a.add(col.MS(p.Now)) + ` WHERE id = ` + a.add(p.ID) + ` RETURNING *),
			a AS (` + auditFrom(&a, p.Audit, "c", "") + `)
			SELECT ` + record.ClusterCols + ` FROM c LEFT JOIN cluster_status s ON s.cluster_id = c.id`
		c, err := record.ScanCluster(q.QueryRow(ctx, sql, a...))
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoCluster(p.ID)
		}
		out = c
		return err
	})
	return out, err
}

func (s *Store) ClusterDelete(ctx context.Context, p registry.ClusterDeleteParams) error {
	return s.write(ctx, "delete a cluster", func(ctx context.Context, q db) error {
		// The cascade locks what it deletes before the cluster's feed
		// trigger takes the feed lock to drop its counts (migration 0018):
		// one statement, then the audit entry.
		tag, err := q.Exec(ctx, "DELETE FROM clusters WHERE id = $1", p.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errNoCluster(p.ID)
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

// lockCluster takes a key-share lock on a cluster (what a foreign key check
// takes) before a transaction inserts rows that reference it, so that a
// concurrent delete of the cluster waits for it instead of deadlocking with it.
func lockCluster(ctx context.Context, q db, id string) error {
	var one int
	err := q.QueryRow(ctx, "SELECT 1 FROM clusters WHERE id = $1 FOR KEY SHARE", id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoCluster(id)
	}
	return err
}
