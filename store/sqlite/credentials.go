package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func (t *txn) insertCredential(c *registry.Credential) error {
	_, err := t.exec(`INSERT INTO credentials (id, cluster_id, hash, sealed_hmac, capabilities, created_at, expires_at,
		rotate_after, rotate_until, rotated_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.ClusterID, c.Hash, c.SealedHMAC, col.JSONText(c.Capabilities), col.MS(c.CreatedAt), col.MS(c.ExpiresAt),
		col.MS(c.RotateAfter), col.MS(c.RotateUntil), c.RotatedFrom)
	if err != nil {
		return err
	}
	return t.insertClientCertificate(c)
}

func (s *Store) CredentialGet(ctx context.Context, id string) (*registry.Credential, error) {
	c, err := record.ScanCredential(s.queryRow(ctx, "SELECT "+record.CredentialCols+" FROM credentials WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "credential %s does not exist", id)
	}
	return c, s.wrap(err, "read a credential")
}

func (s *Store) CredentialList(ctx context.Context, clusterID string) ([]registry.Credential, error) {
	rows, err := s.query(ctx, "SELECT "+record.CredentialCols+" FROM credentials WHERE cluster_id = ? ORDER BY created_at DESC, id DESC", clusterID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.Credential{}
	for rows.Next() {
		c, err := record.ScanCredential(rows)
		if err != nil {
			return nil, s.wrap(err, "read credentials")
		}
		out = append(out, *c)
	}
	return out, s.wrap(rows.Err(), "read credentials")
}

func (s *Store) CredentialRotate(ctx context.Context, p registry.CredentialRotateParams) error {
	return s.write(ctx, func(t *txn) error {
		res, err := t.exec(`UPDATE credentials SET superseded_at = ?, expires_at = MIN(expires_at, ?)
			WHERE id = ? AND revoked_at IS NULL AND superseded_at IS NULL AND rotate_until > ?`, col.MS(p.Now), col.MS(p.OldExpiresAt), p.OldID, col.MS(p.Now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var superseded sql.NullInt64
			_ = t.selectRow(`SELECT superseded_at FROM credentials WHERE id = ? AND revoked_at IS NULL`, p.OldID).Scan(&superseded)
			if superseded.Valid {
				return registry.ErrRotatedOnce(p.OldID, time.UnixMilli(superseded.Int64))
			}
			return registry.Errorf(registry.CodeUnauthorized, "credential %s can no longer be rotated (revoked or past its grace)", p.OldID)
		}
		if err := t.insertCredential(&p.New); err != nil {
			return err
		}
		return t.audit(p.Audit)
	})
}

func (s *Store) CredentialRestrict(ctx context.Context, p registry.CredentialRestrictParams) (int, error) {
	var n int64
	err := s.write(ctx, func(t *txn) error {
		q := `UPDATE credentials SET expires_at = MIN(expires_at, ?), rotate_until = MIN(rotate_until, ?)`
		args := []any{col.MS(p.ExpiresAt), col.MS(p.RotateUntil)}
		if !p.RotateAfter.IsZero() {
			q += `, rotate_after = MIN(rotate_after, ?)`
			args = append(args, col.MS(p.RotateAfter))
		}
		if p.Revoke {
			q += `, revoked_at = ?, revoke_reason = ?`
			args = append(args, col.MS(p.Now), p.Reason)
		}
		q += ` WHERE cluster_id = ? AND revoked_at IS NULL AND rotate_until > ? AND (? = '' OR id = ?)`
		args = append(args, p.ClusterID, col.MS(p.Now), p.CredentialID, p.CredentialID)
		res, err := t.exec(q, args...)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return t.audit(p.Audit)
	})
	return int(n), err
}
