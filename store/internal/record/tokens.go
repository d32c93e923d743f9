package record

import (
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// TokenCols are a registration token's columns, as ScanToken reads them.
const TokenCols = `id, cluster_id, hash, created_at, expires_at, created_by, used_at, credential_id, revoked_at, revoke_reason`

// ScanToken reads a row of TokenCols.
func ScanToken(row Scanner) (*registry.RegistrationToken, error) {
	var tk registry.RegistrationToken
	err := row.Scan(&tk.ID, &tk.ClusterID, col.Bytes(&tk.Hash), col.Time(&tk.CreatedAt), col.Time(&tk.ExpiresAt), &tk.CreatedBy,
		col.Time(&tk.UsedAt), &tk.CredentialID, col.Time(&tk.RevokedAt), &tk.RevokeReason)
	return &tk, err
}
