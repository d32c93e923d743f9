package registry

import (
	"context"
	"time"
)

// CAStore is the part of Store that keeps tether's own certificate authority
// (seed 003's "small PKI") and the client certificates it issued. The CA's
// private key is sealed by the Keyring; the certificates are public.
//
// Issued certificates are written with the credential they belong to
// (Credential.ClientCertificate, inserted by TokenRedeem and
// CredentialRotate in the same transaction).
type CAStore interface {
	// CACreate stores p.New as the current CA. When a current CA exists it is
	// CodeConflict, unless p.Replace: then the current one is retired
	// (RetiredAt p.Now, still trusted until p.TrustUntil) in the same
	// transaction. With its audit entry. Of concurrent creations one wins.
	CACreate(ctx context.Context, p CACreateParams) error
	// CAList returns the current CA first, then retired ones still trusted
	// at now (TrustedUntil after now), newest first. Empty: no CA.
	CAList(ctx context.Context, now time.Time) ([]CertificateAuthority, error)
	// ClientCertificateList returns the certificates issued to a cluster's
	// agents, newest first.
	ClientCertificateList(ctx context.Context, clusterID string) ([]ClientCertificate, error)
}

// CertificateAuthority is tether's CA: a self-signed ECDSA P-256 certificate
// and its private key (PKCS #8, sealed and bound to the CA's id).
type CertificateAuthority struct {
	ID           string    `json:"id"`
	CertDER      []byte    `json:"-"`
	SealedKey    []byte    `json:"-"`
	CreatedAt    time.Time `json:"createdAt"`
	NotAfter     time.Time `json:"notAfter"`
	RetiredAt    time.Time `json:"retiredAt,omitzero"`
	TrustedUntil time.Time `json:"trustedUntil,omitzero"` // retired CAs: until their last certificate expires
}

// ClientCertificate records a certificate tether's CA issued to an agent:
// who it names and until when (the certificate itself went to the agent).
type ClientCertificate struct {
	Serial       string    `json:"serial"` // hex
	ClusterID    string    `json:"clusterId"`
	CredentialID string    `json:"credentialId"`
	CAID         string    `json:"caId"`
	NotBefore    time.Time `json:"notBefore"`
	NotAfter     time.Time `json:"notAfter"`
}

// CACreateParams is CACreate's input.
type CACreateParams struct {
	New        CertificateAuthority
	Replace    bool
	Now        time.Time
	TrustUntil time.Time
	Audit      AuditEntry
}
