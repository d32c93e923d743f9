package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func insertCredential(ctx context.Context, q db, c *registry.Credential) error {
	_, err := q.Exec(ctx, `INSERT INTO credentials (id, cluster_id, hash, sealed_hmac, capabilities, created_at, expires_at,
		rotate_after, rotate_until, rotated_from) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ID, c.ClusterID, c.Hash, bytesOrNil(c.SealedHMAC), col.JSONText(c.Capabilities), col.MS(c.CreatedAt), col.MS(c.ExpiresAt),
		col.MS(c.RotateAfter), col.MS(c.RotateUntil), c.RotatedFrom)
	if err != nil {
		return err
	}
	return insertClientCertificate(ctx, q, c)
}

func (s *Store) CredentialGet(ctx context.Context, id string) (*registry.Credential, error) {
	c, err := record.ScanCredential(s.queryRow(ctx, "SELECT "+record.CredentialCols+" FROM credentials WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "credential %s does not exist", id)
	}
	if err != nil {
		return nil, s.wrap(err, "read a credential")
	}
	return c, nil
}

func (s *Store) CredentialList(ctx context.Context, clusterID string) ([]registry.Credential, error) {
	rows, err := s.query(ctx, "read credentials", "SELECT "+record.CredentialCols+
		" FROM credentials WHERE cluster_id = $1 ORDER BY created_at DESC, id DESC", clusterID)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read credentials", func(r pgx.Rows) (registry.Credential, error) {
		c, err := record.ScanCredential(r)
		return *c, err
	})
}

func (s *Store) CredentialRotate(ctx context.Context, p registry.CredentialRotateParams) error {
	refused := registry.Errorf(registry.CodeUnauthorized, "credential %s can no longer be rotated (revoked or past its grace)", p.OldID)
	return s.write(ctx, "rotate a credential", func(ctx context.Context, q db) error {
		if err := lockCluster(ctx, q, p.New.ClusterID); registry.ErrorCode(err) == registry.CodeNotFound {
			return refused // its cluster, and with it the old credential, is gone
		} else if err != nil {
			return err
		}
		tag, err := q.Exec(ctx, `UPDATE credentials SET superseded_at = $1, expires_at = LEAST(expires_at, $2)
			WHERE id = $3 AND revoked_at IS NULL AND superseded_at IS NULL AND rotate_until > $1`, col.MS(p.Now), col.MS(p.OldExpiresAt), p.OldID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var superseded *int64
			_ = q.QueryRow(ctx, `SELECT superseded_at FROM credentials WHERE id = $1 AND revoked_at IS NULL`, p.OldID).Scan(&superseded)
			if superseded != nil {
				return registry.ErrRotatedOnce(p.OldID, time.UnixMilli(*superseded))
			}
			return refused
		}
		if err := insertCredential(ctx, q, &p.New); err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

// CredentialRestrict is one statement: the update and its audit entry.
func (s *Store) CredentialRestrict(ctx context.Context, p registry.CredentialRestrictParams) (int, error) {
	var n int
	err := s.stmt(ctx, "restrict credentials", func(ctx context.Context, q db) error {
		var a args
		set := `expires_at = LEAST(expires_at, ` + a.add(col.MS(p.ExpiresAt)) + `), rotate_until = LEAST(rotate_until, ` + a.add(col.MS(p.RotateUntil)) + `)`
		if !p.RotateAfter.IsZero() {
			set += `, rotate_after = LEAST(rotate_after, ` + a.add(col.MS(p.RotateAfter)) + `)`
		}
		if p.Revoke {
			set += `, revoked_at = ` + a.add(col.MS(p.Now)) + `, revoke_reason = ` + a.add(p.Reason)
		}
		cred := a.add(p.CredentialID)
		sql := `WITH u AS (UPDATE credentials SET ` + set + ` WHERE cluster_id = ` + a.add(p.ClusterID) +
			` AND revoked_at IS NULL AND rotate_until > ` + a.add(col.MS(p.Now)) + ` AND (` + cred + ` = '' OR id = ` + cred + `) RETURNING 1),
			a AS (` + auditFrom(&a, p.Audit, "", "") + `)
			SELECT count(*) FROM u`
		return q.QueryRow(ctx, sql, a...).Scan(&n)
	})
	return n, err
}
