package postgres

import (
	"context"
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
