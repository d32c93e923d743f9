package sqlite

import (
	"context"
)

func (s *Store) SealedSecretsExist(ctx context.Context) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM credentials WHERE sealed_hmac IS NOT NULL AND revoked_at IS NULL LIMIT 1))
		+ (SELECT count(*) FROM (SELECT 1 FROM webhooks LIMIT 1))`).Scan(&n)
	return n > 0, s.wrap(err, "look for sealed secrets")
}
