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

func (s *Store) SealedSecretsExist(ctx context.Context) (bool, error) {
	var exists bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM credentials WHERE sealed_hmac IS NOT NULL AND revoked_at IS NULL)
		OR EXISTS (SELECT 1 FROM webhooks) OR EXISTS (SELECT 1 FROM cluster_signing_keys)
		OR EXISTS (SELECT 1 FROM jobs WHERE payload_sealed)
		OR EXISTS (SELECT 1 FROM certificate_authorities)`).Scan(&exists)
	if err != nil {
		return false, s.wrap(err, "look for sealed secrets")
	}
	return exists, nil
}

func (s *Store) SignatureRecord(ctx context.Context, key []byte, expiresAt, now time.Time) (bool, error) {
	fresh := false
	err := s.stmt(ctx, "remember a signature", func(ctx context.Context, q db) error {
		tag, err := q.Exec(ctx, `INSERT INTO seen_signatures (key, expires_at) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE seen_signatures.expires_at < $3`,
			key, col.MS(expiresAt), col.MS(now))
		fresh = tag.RowsAffected() == 1
		return err
	})
	return fresh, err
}

func (s *Store) SignaturesPrune(ctx context.Context, before time.Time) (int, error) {
	var n int
	err := s.stmt(ctx, "forget expired signatures", func(ctx context.Context, q db) error {
		tag, err := q.Exec(ctx, "DELETE FROM seen_signatures WHERE expires_at < $1", col.MS(before))
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

func (s *Store) SigningKeyEnsure(ctx context.Context, key registry.SigningKey) (*registry.SigningKey, error) {
	var out *registry.SigningKey
	err := s.write(ctx, "ensure a signing key", func(ctx context.Context, q db) error {
		_, err := q.Exec(ctx, `INSERT INTO cluster_signing_keys (id, cluster_id, public_key, sealed_private, created_at)
			SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM clusters WHERE id = $2)
			ON CONFLICT (cluster_id) WHERE retired_at IS NULL DO NOTHING`,
			key.ID, key.ClusterID, key.PublicKey, key.SealedPrivate, col.MS(key.CreatedAt))
		if err != nil {
			return err
		}
		out, err = record.ScanSigningKey(q.QueryRow(ctx, `SELECT `+record.SigningKeyCols+` FROM cluster_signing_keys WHERE cluster_id = $1 AND retired_at IS NULL`, key.ClusterID))
		if errors.Is(err, pgx.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "cluster %s not found", key.ClusterID)
		}
		return err
	})
	return out, err
}

func (s *Store) SigningKeyRotate(ctx context.Context, p registry.SigningKeyRotateParams) error {
	return s.write(ctx, "rotate a signing key", func(ctx context.Context, q db) error {
		var exists bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM clusters WHERE id = $1)`, p.New.ClusterID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return registry.Errorf(registry.CodeNotFound, "cluster %s not found", p.New.ClusterID)
		}
		conflict := registry.Errorf(registry.CodeConflict, "cluster %s's signing key was rotated by someone else at the same time; look at its keys and rotate again if needed", p.New.ClusterID)
		// p.New is endorsed by p.Retire: retire exactly that key. The row
		// lock makes a concurrent rotation wait, then find it retired.
		var current string
		err := q.QueryRow(ctx, `SELECT id FROM cluster_signing_keys WHERE cluster_id = $1 AND retired_at IS NULL FOR UPDATE`, p.New.ClusterID).Scan(&current)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if current != p.Retire {
			return conflict
		}
		if _, err := q.Exec(ctx, `UPDATE cluster_signing_keys SET retired_at = $1, expires_at = $2 WHERE cluster_id = $3 AND retired_at IS NULL`,
			col.MS(p.Now), col.MS(p.OverlapUntil), p.New.ClusterID); err != nil {
			return err
		}
		_, err = q.Exec(ctx, `INSERT INTO cluster_signing_keys (id, cluster_id, public_key, sealed_private, created_at, endorsed_by, endorsement) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			p.New.ID, p.New.ClusterID, p.New.PublicKey, p.New.SealedPrivate, col.MS(p.New.CreatedAt),
			col.NullIfEmpty(p.New.EndorsedBy), col.NullIfEmpty(p.New.Endorsement))
		if isUniqueViolation(err, "cluster_signing_keys_current") {
			return conflict
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

func (s *Store) SigningKeys(ctx context.Context, clusterID string, now time.Time) ([]registry.SigningKey, error) {
	rows, err := s.query(ctx, "read signing keys", `SELECT `+record.SigningKeyCols+` FROM cluster_signing_keys
		WHERE cluster_id = $1 AND (retired_at IS NULL OR expires_at > $2)
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
