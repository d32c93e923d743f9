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

func (s *Store) SealedSecretsExist(ctx context.Context) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM credentials WHERE sealed_hmac IS NOT NULL AND revoked_at IS NULL LIMIT 1))
		+ (SELECT count(*) FROM (SELECT 1 FROM webhooks LIMIT 1))
		+ (SELECT count(*) FROM (SELECT 1 FROM cluster_signing_keys LIMIT 1))
		+ (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE payload_sealed LIMIT 1))
		+ (SELECT count(*) FROM (SELECT 1 FROM certificate_authorities LIMIT 1))`).Scan(&n)
	return n > 0, s.wrap(err, "look for sealed secrets")
}

func (s *Store) SignatureRecord(ctx context.Context, key []byte, expiresAt, now time.Time) (bool, error) {
	fresh := false
	err := s.write(ctx, func(t *txn) error {
		// A remembered signature that has expired is taken over: the
		// timestamp check refuses such an old request anyway.
		res, err := t.exec(`INSERT INTO seen_signatures (key, expires_at) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE seen_signatures.expires_at < ?`,
			key, col.MS(expiresAt), col.MS(now))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		fresh = n == 1
		return nil
	})
	return fresh, err
}

func (s *Store) SignaturesPrune(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(t *txn) error {
		res, err := t.exec("DELETE FROM seen_signatures WHERE expires_at < ?", col.MS(before))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

func (s *Store) SigningKeyEnsure(ctx context.Context, key registry.SigningKey) (*registry.SigningKey, error) {
	var out *registry.SigningKey
	err := s.write(ctx, func(t *txn) error {
		_, err := t.exec(`INSERT INTO cluster_signing_keys (id, cluster_id, public_key, sealed_private, created_at)
			SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM clusters WHERE id = ?)
			ON CONFLICT (cluster_id) WHERE retired_at IS NULL DO NOTHING`,
			key.ID, key.ClusterID, key.PublicKey, key.SealedPrivate, col.MS(key.CreatedAt), key.ClusterID)
		if err != nil {
			return err
		}
		out, err = record.ScanSigningKey(t.selectRow(`SELECT `+record.SigningKeyCols+` FROM cluster_signing_keys WHERE cluster_id = ? AND retired_at IS NULL`, key.ClusterID))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "cluster %s not found", key.ClusterID)
		}
		return err
	})
	return out, err
}

func (s *Store) SigningKeyRotate(ctx context.Context, p registry.SigningKeyRotateParams) error {
	return s.write(ctx, func(t *txn) error {
		var exists int
		if err := t.selectRow(`SELECT count(*) FROM clusters WHERE id = ?`, p.New.ClusterID).Scan(&exists); err != nil {
			return err
		}
		if exists == 0 {
			return registry.Errorf(registry.CodeNotFound, "cluster %s not found", p.New.ClusterID)
		}
		var current string
		err := t.selectRow(`SELECT id FROM cluster_signing_keys WHERE cluster_id = ? AND retired_at IS NULL`, p.New.ClusterID).Scan(&current)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if current != p.Retire {
			return registry.Errorf(registry.CodeConflict, "cluster %s's signing key was rotated by someone else at the same time; look at its keys and rotate again if needed", p.New.ClusterID)
		}
		if _, err := t.exec(`UPDATE cluster_signing_keys SET retired_at = ?, expires_at = ? WHERE cluster_id = ? AND retired_at IS NULL`,
			col.MS(p.Now), col.MS(p.OverlapUntil), p.New.ClusterID); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO cluster_signing_keys (id, cluster_id, public_key, sealed_private, created_at, endorsed_by, endorsement) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			p.New.ID, p.New.ClusterID, p.New.PublicKey, p.New.SealedPrivate, col.MS(p.New.CreatedAt),
			col.NullIfEmpty(p.New.EndorsedBy), col.NullIfEmpty(p.New.Endorsement)); err != nil {
			return err
		}
		return t.audit(p.Audit)
	})
}

func (s *Store) SigningKeys(ctx context.Context, clusterID string, now time.Time) ([]registry.SigningKey, error) {
	rows, err := s.query(ctx, `SELECT `+record.SigningKeyCols+` FROM cluster_signing_keys
		WHERE cluster_id = ? AND (retired_at IS NULL OR expires_at > ?)
		ORDER BY retired_at IS NOT NULL, created_at DESC, id DESC`, clusterID, col.MS(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.SigningKey{}
	for rows.Next() {
		k, err := record.ScanSigningKey(rows)
		if err != nil {
			return nil, s.wrap(err, "read signing keys")
		}
		out = append(out, *k)
	}
	return out, s.wrap(rows.Err(), "read signing keys")
}
