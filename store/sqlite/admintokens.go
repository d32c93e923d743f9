package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

const adminTokenCols = `id, name, role, organization, created_at, created_by, expires_at, revoked_at, revoke_reason, hash, ssh_keys`

func scanAdminToken(row scanner) (*registry.AdminToken, error) {
	var t registry.AdminToken
	var sshKeys string
	err := row.Scan(&t.ID, &t.Name, &t.Role, &t.Org, col.Time(&t.CreatedAt), &t.CreatedBy, col.Time(&t.ExpiresAt),
		col.Time(&t.RevokedAt), &t.RevokeReason, &t.Hash, &sshKeys)
	if err == nil {
		t.SSHKeys, err = registry.SSHKeysFromLines(sshKeys)
	}
	return &t, err
}

func (s *Store) AdminTokenCreate(ctx context.Context, p registry.AdminTokenCreateParams) error {
	return s.write(ctx, func(t *txn) error {
		a := &p.Token
		_, err := t.exec(`INSERT INTO admin_tokens (`+adminTokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.Name, a.Role, a.Org, col.MS(a.CreatedAt), a.CreatedBy, col.MS(a.ExpiresAt), col.MS(a.RevokedAt), a.RevokeReason, a.Hash, registry.SSHKeyLines(a.SSHKeys))
		if isUniqueViolation(err) {
			return registry.Errorf(registry.CodeConflict, "an admin token named %q already exists; revoke it first or choose another name", a.Name)
		}
		if err != nil {
			return err
		}
		return t.audit(p.Audit)
	})
}

func (s *Store) AdminTokenGet(ctx context.Context, id string) (*registry.AdminToken, error) {
	t, err := scanAdminToken(s.queryRow(ctx, "SELECT "+adminTokenCols+" FROM admin_tokens WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "admin token %s does not exist", id)
	}
	return t, s.wrap(err, "read an admin token")
}

func (s *Store) AdminTokenList(ctx context.Context) ([]registry.AdminToken, error) {
	rows, err := s.query(ctx, "SELECT "+adminTokenCols+" FROM admin_tokens ORDER BY created_at DESC, id DESC")
	if err != nil {
		return nil, s.wrap(err, "read admin tokens")
	}
	defer rows.Close()
	out := []registry.AdminToken{}
	for rows.Next() {
		t, err := scanAdminToken(rows)
		if err != nil {
			return nil, s.wrap(err, "read admin tokens")
		}
		out = append(out, *t)
	}
	return out, s.wrap(rows.Err(), "read admin tokens")
}

func (s *Store) AdminTokenRevoke(ctx context.Context, p registry.AdminTokenRevokeParams) (*registry.AdminToken, error) {
	var out *registry.AdminToken
	err := s.write(ctx, func(t *txn) error {
		tok, err := scanAdminToken(t.queryRow(`UPDATE admin_tokens SET revoked_at = ?, revoke_reason = ?
			WHERE id = ? AND revoked_at IS NULL RETURNING `+adminTokenCols, col.MS(p.Now), p.Reason, p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeConflict, "admin token %s does not exist or is already revoked", p.ID)
		}
		if err != nil {
			return err
		}
		out = tok
		return t.audit(p.Audit)
	})
	return out, err
}

func (s *Store) AdminTokenSetSSHKeys(ctx context.Context, p registry.AdminTokenSSHKeysParams) (*registry.AdminToken, error) {
	var out *registry.AdminToken
	err := s.write(ctx, func(t *txn) error {
		tok, err := scanAdminToken(t.queryRow(`UPDATE admin_tokens SET ssh_keys = ?
			WHERE id = ? AND revoked_at IS NULL RETURNING `+adminTokenCols, registry.SSHKeyLines(p.Keys), p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeConflict, "admin token %s does not exist or is revoked", p.ID)
		}
		if err != nil {
			return err
		}
		out = tok
		return t.audit(p.Audit)
	})
	return out, err
}
