package postgres

import (
	"context"
	"time"

	"github.com/tetherhq/tether/store/internal/col"
)

func (s *Store) SealedSecretsExist(ctx context.Context) (bool, error) {
	var exists bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM credentials WHERE sealed_hmac IS NOT NULL AND revoked_at IS NULL)
		OR EXISTS (SELECT 1 FROM webhooks)`).Scan(&exists)
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
