package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func (t *txn) insertToken(tk *registry.RegistrationToken) error {
	// Issuing a token voids the cluster's older unused ones.
	if _, err := t.exec(`UPDATE registration_tokens SET revoked_at = ?, revoke_reason = ?
		WHERE cluster_id = ? AND used_at IS NULL AND revoked_at IS NULL`,
		col.MS(tk.CreatedAt), registry.TokenRevokedSuperseded, tk.ClusterID); err != nil {
		return err
	}
	_, err := t.exec(`INSERT INTO registration_tokens (id, cluster_id, hash, created_at, expires_at, created_by)
		VALUES (?, ?, ?, ?, ?, ?)`, tk.ID, tk.ClusterID, tk.Hash, col.MS(tk.CreatedAt), col.MS(tk.ExpiresAt), tk.CreatedBy)
	return err
}

func (s *Store) TokenCreate(ctx context.Context, p registry.TokenCreateParams) error {
	return s.write(ctx, func(t *txn) error {
		var one int
		if err := t.selectRow("SELECT 1 FROM clusters WHERE id = ?", p.Token.ClusterID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", p.Token.ClusterID)
		}
		if err := t.insertToken(&p.Token); err != nil {
			return err
		}
		return t.audit(p.Audit)
	})
}

func (s *Store) TokenGet(ctx context.Context, id string) (*registry.RegistrationToken, error) {
	tk, err := record.ScanToken(s.queryRow(ctx, "SELECT "+record.TokenCols+" FROM registration_tokens WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "registration token %s does not exist", id)
	}
	return tk, s.wrap(err, "read a registration token")
}

func (s *Store) TokenList(ctx context.Context, clusterID string) ([]registry.RegistrationToken, error) {
	rows, err := s.query(ctx, "SELECT "+record.TokenCols+" FROM registration_tokens WHERE (? = '' OR cluster_id = ?) ORDER BY created_at DESC, id DESC", clusterID, clusterID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.RegistrationToken{}
	for rows.Next() {
		tk, err := record.ScanToken(rows)
		if err != nil {
			return nil, s.wrap(err, "read registration tokens")
		}
		out = append(out, *tk)
	}
	return out, s.wrap(rows.Err(), "read registration tokens")
}

func (s *Store) TokenRevoke(ctx context.Context, p registry.TokenRevokeParams) (*registry.RegistrationToken, error) {
	var out *registry.RegistrationToken
	err := s.write(ctx, func(t *txn) error {
		res, err := t.exec(`UPDATE registration_tokens SET revoked_at = ?, revoke_reason = ?
			WHERE id = ? AND used_at IS NULL AND revoked_at IS NULL`, col.MS(p.Now), registry.TokenRevokedByAdmin, p.ID)
		if err != nil {
			return err
		}
		tk, err := record.ScanToken(t.selectRow("SELECT "+record.TokenCols+" FROM registration_tokens WHERE id = ?", p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "registration token %s does not exist", p.ID)
		}
		if err != nil {
			return t.s.wrap(err, "read a registration token")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if !tk.UsedAt.IsZero() {
				return registry.Errorf(registry.CodeConflict, "registration token %s was already used; revoke the credential it issued instead (tether credential revoke %s)", p.ID, tk.ClusterID)
			}
			return registry.Errorf(registry.CodeConflict, "registration token %s is already revoked (%s)", p.ID, tk.RevokeReason)
		}
		out = tk
		p.Audit.ClusterID = tk.ClusterID
		return t.audit(p.Audit)
	})
	return out, err
}

func (s *Store) TokenRedeem(ctx context.Context, p registry.TokenRedeemParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.write(ctx, func(t *txn) error {
		tk, err := record.ScanToken(t.selectRow("SELECT "+record.TokenCols+" FROM registration_tokens WHERE id = ?", p.TokenID))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "registration token %s does not exist", p.TokenID)
		}
		if err != nil {
			return t.s.wrap(err, "read a registration token")
		}
		c, err := t.clusterByID(tk.ClusterID)
		if err != nil {
			return err
		}
		if err := p.Check(tk, c); err != nil {
			return err
		}
		cred := p.Credential
		cred.ClusterID = c.ID
		res, err := t.exec(`UPDATE registration_tokens SET used_at = ?, credential_id = ?
			WHERE id = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?`, col.MS(p.Now), cred.ID, tk.ID, col.MS(p.Now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Unreachable with one writer, but the statement is the guard.
			tk.UsedAt = p.Now
			return p.Check(tk, c)
		}
		if err := t.insertCredential(&cred); err != nil {
			return err
		}
		if _, err := t.exec(`UPDATE clusters SET state = CASE WHEN state = 'pending' THEN 'active' ELSE state END,
			registered_at = COALESCE(registered_at, ?), updated_at = ? WHERE id = ?`, col.MS(p.Now), col.MS(p.Now), c.ID); err != nil {
			return err
		}
		if p.PublicKey != "" && p.PublicKey != c.PublicKey {
			if _, err := t.exec(`UPDATE clusters SET public_key = ?, version = version + 1 WHERE id = ?`, string(p.PublicKey), c.ID); err != nil {
				return err
			}
		}
		if _, err := t.exec(`INSERT INTO cluster_status (cluster_id, capabilities, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (cluster_id) DO UPDATE SET capabilities = excluded.capabilities, updated_at = excluded.updated_at`,
			c.ID, col.JSONText(cred.Capabilities), col.MS(p.Now)); err != nil {
			return err
		}
		p.Audit.ClusterID = c.ID
		if err := t.audit(p.Audit); err != nil {
			return err
		}
		out, err = t.clusterByID(c.ID)
		return err
	})
	return out, err
}
