package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func (s *Store) CACreate(ctx context.Context, p registry.CACreateParams) error {
	return s.write(ctx, "create a certificate authority", func(ctx context.Context, q db) error {
		if p.Replace {
			if _, err := q.Exec(ctx, `UPDATE certificate_authorities SET retired_at = $1, trusted_until = $2 WHERE retired_at IS NULL`,
				col.MS(p.Now), col.MS(p.TrustUntil)); err != nil {
				return err
			}
		}
		_, err := q.Exec(ctx, `INSERT INTO certificate_authorities (id, cert_der, sealed_key, created_at, not_after) VALUES ($1, $2, $3, $4, $5)`,
			p.New.ID, p.New.CertDER, p.New.SealedKey, col.MS(p.New.CreatedAt), col.MS(p.New.NotAfter))
		if isUniqueViolation(err, "certificate_authorities_current") {
			return registry.Errorf(registry.CodeConflict, "a certificate authority already exists")
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit)
	})
}

func (s *Store) CAList(ctx context.Context, now time.Time) ([]registry.CertificateAuthority, error) {
	rows, err := s.query(ctx, "read certificate authorities", `SELECT `+record.CACols+` FROM certificate_authorities
		WHERE retired_at IS NULL OR trusted_until > $1 ORDER BY retired_at IS NOT NULL, created_at DESC, id DESC`, col.MS(now))
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read certificate authorities", func(r pgx.Rows) (registry.CertificateAuthority, error) {
		var ca registry.CertificateAuthority
		err := r.Scan(&ca.ID, &ca.CertDER, &ca.SealedKey, col.Time(&ca.CreatedAt), col.Time(&ca.NotAfter), col.Time(&ca.RetiredAt), col.Time(&ca.TrustedUntil))
		return ca, err
	})
}

func (s *Store) ClientCertificateList(ctx context.Context, clusterID string) ([]registry.ClientCertificate, error) {
	rows, err := s.query(ctx, "read client certificates", `SELECT serial, cluster_id, credential_id, ca_id, not_before, not_after FROM client_certificates
		WHERE cluster_id = $1 ORDER BY not_before DESC, serial`, clusterID)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read client certificates", func(r pgx.Rows) (registry.ClientCertificate, error) {
		var c registry.ClientCertificate
		err := r.Scan(&c.Serial, &c.ClusterID, &c.CredentialID, &c.CAID, col.Time(&c.NotBefore), col.Time(&c.NotAfter))
		return c, err
	})
}

// insertClientCertificate records the certificate issued with a credential
// (in the credential's transaction).
func insertClientCertificate(ctx context.Context, q db, c *registry.Credential) error {
	cc := c.ClientCertificate
	if cc == nil {
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO client_certificates (serial, cluster_id, credential_id, ca_id, not_before, not_after) VALUES ($1, $2, $3, $4, $5, $6)`,
		cc.Serial, c.ClusterID, c.ID, cc.CAID, col.MS(cc.NotBefore), col.MS(cc.NotAfter))
	return err
}
