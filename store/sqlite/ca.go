package sqlite

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func (s *Store) CACreate(ctx context.Context, p registry.CACreateParams) error {
	return s.write(ctx, func(t *txn) error {
		if p.Replace {
			if _, err := t.exec(`UPDATE certificate_authorities SET retired_at = ?, trusted_until = ? WHERE retired_at IS NULL`,
				col.MS(p.Now), col.MS(p.TrustUntil)); err != nil {
				return err
			}
		}
		_, err := t.exec(`INSERT INTO certificate_authorities (id, cert_der, sealed_key, created_at, not_after) VALUES (?, ?, ?, ?, ?)`,
			p.New.ID, p.New.CertDER, p.New.SealedKey, col.MS(p.New.CreatedAt), col.MS(p.New.NotAfter))
		if isUniqueViolation(err) {
			return registry.Errorf(registry.CodeConflict, "a certificate authority already exists")
		}
		if err != nil {
			return err
		}
		return t.audit(p.Audit)
	})
}

func (s *Store) CAList(ctx context.Context, now time.Time) ([]registry.CertificateAuthority, error) {
	rows, err := s.query(ctx, `SELECT `+record.CACols+` FROM certificate_authorities
		WHERE retired_at IS NULL OR trusted_until > ? ORDER BY retired_at IS NOT NULL, created_at DESC, id DESC`, col.MS(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.CertificateAuthority{}
	for rows.Next() {
		var ca registry.CertificateAuthority
		if err := rows.Scan(&ca.ID, &ca.CertDER, &ca.SealedKey, col.Time(&ca.CreatedAt), col.Time(&ca.NotAfter), col.Time(&ca.RetiredAt), col.Time(&ca.TrustedUntil)); err != nil {
			return nil, s.wrap(err, "read certificate authorities")
		}
		out = append(out, ca)
	}
	return out, s.wrap(rows.Err(), "read certificate authorities")
}

func (s *Store) ClientCertificateList(ctx context.Context, clusterID string) ([]registry.ClientCertificate, error) {
	rows, err := s.query(ctx, `SELECT serial, cluster_id, credential_id, ca_id, not_before, not_after FROM client_certificates
		WHERE cluster_id = ? ORDER BY not_before DESC, serial`, clusterID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.ClientCertificate{}
	for rows.Next() {
		var c registry.ClientCertificate
		if err := rows.Scan(&c.Serial, &c.ClusterID, &c.CredentialID, &c.CAID, col.Time(&c.NotBefore), col.Time(&c.NotAfter)); err != nil {
			return nil, s.wrap(err, "read client certificates")
		}
		out = append(out, c)
	}
	return out, s.wrap(rows.Err(), "read client certificates")
}

// insertClientCertificate records the certificate issued with a credential
// (in the credential's transaction).
func (t *txn) insertClientCertificate(c *registry.Credential) error {
	cc := c.ClientCertificate
	if cc == nil {
		return nil
	}
	_, err := t.exec(`INSERT INTO client_certificates (serial, cluster_id, credential_id, ca_id, not_before, not_after) VALUES (?, ?, ?, ?, ?, ?)`,
		cc.Serial, c.ClusterID, c.ID, cc.CAID, col.MS(cc.NotBefore), col.MS(cc.NotAfter))
	return err
}
