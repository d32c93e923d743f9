package record

import (
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// CredentialCols are a credential's columns, as ScanCredential reads them.
const CredentialCols = `id, cluster_id, hash, sealed_hmac, capabilities, created_at, expires_at, rotate_after, rotate_until,
	rotated_from, superseded_at, revoked_at, revoke_reason`

// ScanCredential reads a row of CredentialCols.
func ScanCredential(row Scanner) (*registry.Credential, error) {
	var c registry.Credential
	c.Capabilities = []string{}
	err := row.Scan(&c.ID, &c.ClusterID, col.Bytes(&c.Hash), col.Bytes(&c.SealedHMAC), col.JSON(&c.Capabilities), col.Time(&c.CreatedAt),
		col.Time(&c.ExpiresAt), col.Time(&c.RotateAfter), col.Time(&c.RotateUntil), &c.RotatedFrom, col.Time(&c.SupersededAt), col.Time(&c.RevokedAt), &c.RevokeReason)
	return &c, err
}
