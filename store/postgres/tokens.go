package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func errNoToken(id string) error {
	return registry.Errorf(registry.CodeNotFound, "registration token %s does not exist", id)
}

// insertToken inserts a token and voids the cluster's older unused ones, in
// one statement.
func insertToken(ctx context.Context, q db, tk *registry.RegistrationToken) error {
	_, err := q.Exec(ctx, `WITH voided AS (
			UPDATE registration_tokens SET revoked_at = $5, revoke_reason = $7
			WHERE cluster_id = $2 AND used_at IS NULL AND revoked_at IS NULL)
		INSERT INTO registration_tokens (id, cluster_id, hash, created_at, expires_at, created_by)
		VALUES ($1, $2, $3, $4, $6, $8)`,
		tk.ID, tk.ClusterID, tk.Hash, col.MS(tk.CreatedAt), col.MS(tk.CreatedAt), col.MS(tk.ExpiresAt), registry.TokenRevokedSuperseded, tk.CreatedBy)
	return err
}

func (s *Store) TokenCreate(ctx context.Context, p registry.TokenCreateParams) error {
	return s.write(ctx, "issue a registration token", func(ctx context.Context, q db) error {
		if err := lockCluster(ctx, q, p.Token.ClusterID); err != nil {
			return err
		}
		if err := insertToken(ctx, q, &p.Token); err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

func (s *Store) TokenGet(ctx context.Context, id string) (*registry.RegistrationToken, error) {
	tk, err := record.ScanToken(s.queryRow(ctx, "SELECT "+record.TokenCols+" FROM registration_tokens WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoToken(id)
	}
	if err != nil {
		return nil, s.wrap(err, "read a registration token")
	}
	return tk, nil
}

func (s *Store) TokenList(ctx context.Context, clusterID string) ([]registry.RegistrationToken, error) {
	rows, err := s.query(ctx, "read registration tokens", "SELECT "+record.TokenCols+
		" FROM registration_tokens WHERE ($1 = '' OR cluster_id = $1) ORDER BY created_at DESC, id DESC", clusterID)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read registration tokens", func(r pgx.Rows) (registry.RegistrationToken, error) {
		tk, err := record.ScanToken(r)
		return *tk, err
	})
}

func (s *Store) TokenRevoke(ctx context.Context, p registry.TokenRevokeParams) (*registry.RegistrationToken, error) {
	var out *registry.RegistrationToken
	err := s.write(ctx, "revoke a registration token", func(ctx context.Context, q db) error {
		tk, err := record.ScanToken(q.QueryRow(ctx, `UPDATE registration_tokens SET revoked_at = $1, revoke_reason = $2
			WHERE id = $3 AND used_at IS NULL AND revoked_at IS NULL RETURNING `+record.TokenCols, col.MS(p.Now), registry.TokenRevokedByAdmin, p.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			tk, err := record.ScanToken(q.QueryRow(ctx, "SELECT "+record.TokenCols+" FROM registration_tokens WHERE id = $1", p.ID))
			if errors.Is(err, pgx.ErrNoRows) {
				return errNoToken(p.ID)
			}
			if err != nil {
				return err
			}
			if !tk.UsedAt.IsZero() {
				return registry.Errorf(registry.CodeConflict, "registration token %s was already used; revoke the credential it issued instead (tether credential revoke %s)", p.ID, tk.ClusterID)
			}
			return registry.Errorf(registry.CodeConflict, "registration token %s is already revoked (%s)", p.ID, tk.RevokeReason)
		}
		if err != nil {
			return err
		}
		out = tk
		p.Audit.ClusterID = tk.ClusterID
		return insertAudit(ctx, q, p.Audit)
	})
	return out, err
}

// checkError carries the error of a caller's check through a transaction, to
// be returned as is.
type checkError struct{ err error }

func (e checkError) Error() string { return e.err.Error() }

// TokenRedeem locks the token's cluster and then the token (the order a
// cluster's delete takes them in), runs p.Check, and then writes. Concurrent
// redemptions queue on the token's lock; each one after the first reads the
// token as used, and Check refuses it.
func (s *Store) TokenRedeem(ctx context.Context, p registry.TokenRedeemParams) (*registry.Cluster, error) {
	var out *registry.Cluster
	err := s.write(ctx, "redeem a registration token", func(ctx context.Context, q db) error {
		var clusterID string
		err := q.QueryRow(ctx, "SELECT cluster_id FROM registration_tokens WHERE id = $1", p.TokenID).Scan(&clusterID)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoToken(p.TokenID)
		}
		if err != nil {
			return err
		}
		c, err := record.ScanCluster(q.QueryRow(ctx, "SELECT "+record.ClusterCols+record.ClusterFrom+" WHERE c.id = $1 FOR NO KEY UPDATE OF c", clusterID))
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoCluster(clusterID)
		}
		if err != nil {
			return err
		}
		tk, err := record.ScanToken(q.QueryRow(ctx, "SELECT "+record.TokenCols+" FROM registration_tokens WHERE id = $1 FOR UPDATE", p.TokenID))
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoToken(p.TokenID)
		}
		if err != nil {
			return err
		}
		if err := p.Check(tk, c); err != nil {
			return checkError{err}
		}
		cred := p.Credential
		cred.ClusterID = c.ID
		// Every row this writes is locked already but the status row,
		// which is written first.
		if _, err := q.Exec(ctx, `INSERT INTO cluster_status (cluster_id, capabilities, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (cluster_id) DO UPDATE SET capabilities = excluded.capabilities, updated_at = excluded.updated_at`,
			c.ID, col.JSONText(cred.Capabilities), col.MS(p.Now)); err != nil {
			return err
		}
		tag, err := q.Exec(ctx, `UPDATE registration_tokens SET used_at = $1, credential_id = $2
			WHERE id = $3 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $1`, col.MS(p.Now), cred.ID, tk.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// Unreachable under the token's lock, but the statement is the guard.
			tk.UsedAt = p.Now
			return checkError{p.Check(tk, c)}
		}
		if err := insertCredential(ctx, q, &cred); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `UPDATE clusters SET state = CASE WHEN state = 'pending' THEN 'active' ELSE state END,
			registered_at = COALESCE(registered_at, $1), updated_at = $1 WHERE id = $2`, col.MS(p.Now), c.ID); err != nil {
			return err
		}
		if p.PublicKey != "" && p.PublicKey != c.PublicKey {
			if _, err := q.Exec(ctx, `UPDATE clusters SET public_key = $1, version = version + 1 WHERE id = $2`, string(p.PublicKey), c.ID); err != nil {
				return err
			}
		}
		p.Audit.ClusterID = c.ID
		if err := insertAudit(ctx, q, p.Audit); err != nil {
			return err
		}
		out, err = s.clusterByID(ctx, q, c.ID)
		return err
	})
	var ce checkError
	if errors.As(err, &ce) {
		return nil, ce.err
	}
	return out, err
}
