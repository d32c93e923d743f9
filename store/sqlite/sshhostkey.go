package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

func (s *Store) SSHHostKeyEnsure(ctx context.Context, k registry.SSHHostKey) (*registry.SSHHostKey, error) {
	err := s.write(ctx, func(t *txn) error {
		_, err := t.exec(`INSERT INTO ssh_host_keys (id, public_key, sealed_private, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (one) DO NOTHING`, k.ID, k.PublicKey, k.SealedPrivate, col.MS(k.CreatedAt))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.SSHHostKeyGet(ctx)
}

func (s *Store) SSHHostKeyGet(ctx context.Context) (*registry.SSHHostKey, error) {
	var k registry.SSHHostKey
	err := s.queryRow(ctx, `SELECT id, public_key, sealed_private, created_at FROM ssh_host_keys`).
		Scan(&k.ID, &k.PublicKey, &k.SealedPrivate, col.Time(&k.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "no SSH host key is stored")
	}
	if err != nil {
		return nil, s.wrap(err, "read the SSH host key")
	}
	return &k, nil
}
