package record

import (
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// SigningKeyCols are a signing key's columns, as ScanSigningKey reads them.
const SigningKeyCols = `id, cluster_id, public_key, sealed_private, created_at, retired_at, expires_at, endorsed_by, endorsement`

// ScanSigningKey reads a row of SigningKeyCols.
func ScanSigningKey(row Scanner) (*registry.SigningKey, error) {
	var k registry.SigningKey
	err := row.Scan(&k.ID, &k.ClusterID, &k.PublicKey, &k.SealedPrivate, col.Time(&k.CreatedAt), col.Time(&k.RetiredAt), col.Time(&k.ExpiresAt),
		col.String(&k.EndorsedBy), col.String(&k.Endorsement))
	if err != nil {
		return nil, err
	}
	return &k, nil
}
