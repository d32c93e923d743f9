package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

const adminTokenCols = `id, name, role, organization, created_at, created_by, expires_at, revoked_at, revoke_reason, hash, ssh_keys`

func scanAdminToken(row pgx.Row) (*registry.AdminToken, error) {
	var t registry.AdminToken
	var sshKeys string
	var role string
	err := row.Scan(&t.ID, &t.Name, &role, &t.Org, col.Time(&t.CreatedAt), &t.CreatedBy, col.Time(&t.ExpiresAt),
		col.Time(&t.RevokedAt), &t.RevokeReason, &t.Hash, &sshKeys)
	if err == nil {
		t.SSHKeys, err = registry.SSHKeysFromLines(sshKeys)
	}
	t.Role = registry.Role(role)
	return &t, err
}

func (s *Store) AdminTokenCreate(ctx context.Context, p registry.AdminTokenCreateParams) error {
	return s.write(ctx, "create an admin token", func(ctx context.Context, q db) error {
		a := &p.Token
		_, err := q.Exec(ctx, `INSERT INTO admin_tokens (`+adminTokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			a.ID, a.Name, string(a.Role), a.Org, col.MS(a.CreatedAt), a.CreatedBy, col.MS(a.ExpiresAt), col.MS(a.RevokedAt), a.RevokeReason, a.Hash, registry.SSHKeyLines(a.SSHKeys))
		if isUniqueViolation(err, "admin_tokens_live_name") {
			return registry.Errorf(registry.CodeConflict, "an admin token named %q already exists; revoke it first or choose another name", a.Name)
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

func (s *Store) AdminTokenGet(ctx context.Context, id string) (*registry.AdminToken, error) {
	t, err := scanAdminToken(s.queryRow(ctx, "SELECT "+adminTokenCols+" FROM admin_tokens WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "admin token %s does not exist", id)
	}
	if err != nil {
		return nil, s.wrap(err, "read an admin token")
	}
	return t, nil
}

func (s *Store) AdminTokenList(ctx context.Context) ([]registry.AdminToken, error) {
	rows, err := s.query(ctx, "read admin tokens", "SELECT "+adminTokenCols+" FROM admin_tokens ORDER BY created_at DESC, id DESC")
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read admin tokens", func(r pgx.Rows) (registry.AdminToken, error) {
		t, err := scanAdminToken(r)
		return *t, err
	})
}

func (s *Store) AdminTokenRevoke(ctx context.Context, p registry.AdminTokenRevokeParams) (*registry.AdminToken, error) {
	var out *registry.AdminToken
	err := s.write(ctx, "revoke an admin token", func(ctx context.Context, q db) error {
		tok, err := scanAdminToken(q.QueryRow(ctx, `UPDATE admin_tokens SET revoked_at = $1, revoke_reason = $2
			WHERE id = $3 AND revoked_at IS NULL RETURNING `+adminTokenCols, col.MS(p.Now), p.Reason, p.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return registry.Errorf(registry.CodeConflict, "admin token %s does not exist or is already revoked", p.ID)
		}
		if err != nil {
			return err
		}
		out = tok
		return insertAudit(ctx, q, p.Audit)
	})
	return out, err
}

func (s *Store) AdminTokenSetSSHKeys(ctx context.Context, p registry.AdminTokenSSHKeysParams) (*registry.AdminToken, error) {
	var out *registry.AdminToken
	err := s.write(ctx, "set an admin token's SSH keys", func(ctx context.Context, q db) error {
		tok, err := scanAdminToken(q.QueryRow(ctx, `UPDATE admin_tokens SET ssh_keys = $1
			WHERE id = $2 AND revoked_at IS NULL RETURNING `+adminTokenCols, registry.SSHKeyLines(p.Keys), p.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return registry.Errorf(registry.CodeConflict, "admin token %s does not exist or is revoked", p.ID)
		}
		if err != nil {
			return err
		}
		out = tok
		return insertAudit(ctx, q, p.Audit)
	})
	return out, err
}
