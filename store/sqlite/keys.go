package sqlite

import (
	"context"
	"time"

	"github.com/tetherhq/tether/store/internal/col"
)

func (s *Store) SealedSecretsExist(ctx context.Context) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM credentials WHERE sealed_hmac IS NOT NULL AND revoked_at IS NULL LIMIT 1))
		+ (SELECT count(*) FROM (SELECT 1 FROM webhooks LIMIT 1))`).Scan(&n)
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
