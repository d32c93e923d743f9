package registry

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// tether as a small CA (seed 003): `tether ca init` creates it; an agent that
// sends a CSR at register or rotate gets a short-lived client certificate
// naming its cluster (URI SAN spiffe://tether/cluster/<id>), which the server
// then takes as the agent's identity (mTLS).
const (
	// DefaultCALifetime is how long the CA certificate is valid.
	DefaultCALifetime = 5 * 365 * 24 * time.Hour
	// certBackdate covers agents whose clock is a little behind the server's.
	certBackdate = 5 * time.Minute
	// SPIFFEClusterPrefix is the URI SAN that names a cluster.
	SPIFFEClusterPrefix = "spiffe://tether/cluster/"

	AuditCAInit    = "ca.init"
	AuditCAReplace = "ca.replace"
)

// CodeNoCA: an agent sent a CSR, and this tether has no CA to sign it with
// (400: the agent registers again without csr). Kept here, with the CA, like
// the other codes of one feature.
const CodeNoCA Code = "no_certificate_authority"

func newCAID() string { return "ca-" + newULID() }

// InitCA creates tether's CA: an ECDSA P-256 key and a self-signed
// certificate valid DefaultCALifetime, that may only issue client
// certificates (extended key usage clientAuth, no intermediate CAs) naming
// spiffe://tether/... URIs (a name constraint). Its private key is sealed
// with the key file and kept in the store, so every replica shares it.
//
// An existing CA is never replaced silently: CodeConflict, unless replace.
// A replaced CA stays trusted until the last certificate it issued expires
// (the credential lifetime), so agents keep working until their next
// rotation gives them a certificate from the new one. Admin only, audited.
func (r *Registry) InitCA(ctx context.Context, replace bool) (*CertificateAuthority, error) {
	if err := authorizeFleet(ctx, "tether's CA"); err != nil {
		return nil, err
	}
	if r.cfg.Keyring == nil {
		return nil, Errorf(CodeUnavailable, "this tether has no key file, so it cannot keep a CA's private key; start it with --key-file (tether keys init creates one)")
	}
	now := r.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, Internal(err, "generate the CA key")
	}
	id := newCAID()
	tmpl := &x509.Certificate{
		SerialNumber:                randomSerial(),
		Subject:                     pkix.Name{CommonName: "tether client CA " + id, Organization: []string{"tether"}},
		NotBefore:                   now.Add(-certBackdate),
		NotAfter:                    now.Add(DefaultCALifetime),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:                 []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedURIDomains:         []string{"tether"},
		PermittedDNSDomainsCritical: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, Internal(err, "create the CA certificate")
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, Internal(err, "encode the CA key")
	}
	sealed, err := r.cfg.Keyring.Seal(pkcs8, []byte(id))
	if err != nil {
		return nil, err
	}
	ca := CertificateAuthority{ID: id, CertDER: der, SealedKey: sealed, CreatedAt: now, NotAfter: tmpl.NotAfter}
	action, reason := AuditCAInit, "valid until "+ca.NotAfter.UTC().Format(time.RFC3339)
	trustUntil := now.Add(r.cfg.CredentialTTL + r.cfg.RotationGrace)
	if replace {
		action = AuditCAReplace
		reason += "; the previous CA stays trusted until " + trustUntil.UTC().Format(time.RFC3339)
	}
	err = r.store.CACreate(ctx, CACreateParams{New: ca, Replace: replace, Now: now, TrustUntil: trustUntil,
		Audit: r.auditEntry(ctx, action, "", "ca", id, reason)})
	if ErrorCode(err) == CodeConflict {
		return nil, Errorf(CodeConflict, "tether already has a CA, and never replaces one silently (agents' certificates chain to it); "+
			"to replace it run: tether ca init --replace (certificates of the old CA stay trusted until they expire, and agents get new ones at their next rotation)")
	}
	if err != nil {
		return nil, err
	}
	return &ca, nil
}

// CAs returns the CAs that client certificates may chain to: the current
// one first, then replaced ones still trusted. Empty when tether has none.
func (r *Registry) CAs(ctx context.Context) ([]CertificateAuthority, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	return r.store.CAList(ctx, r.Now())
}

// CABundle is the PEM bundle of the CAs client certificates may chain to
// (nil when tether has none). Certificates are public: no role is needed.
func (r *Registry) CABundle(ctx context.Context) ([]byte, error) {
	cas, err := r.store.CAList(ctx, r.Now())
	if err != nil {
		return nil, err
	}
	return caBundle(cas), nil
}

func caBundle(cas []CertificateAuthority) []byte {
	var buf bytes.Buffer
	for _, ca := range cas {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: ca.CertDER})
	}
	return buf.Bytes()
}

// ClientCertificates returns the certificates issued to a cluster's agents,
// newest first.
func (r *Registry) ClientCertificates(ctx context.Context, clusterIDOrName string) ([]ClientCertificate, error) {
	c, err := r.GetCluster(ctx, clusterIDOrName)
	if err != nil {
		return nil, err
	}
	return r.store.ClientCertificateList(ctx, c.ID)
}

// issuedCert is a certificate issued for a credential, before the credential
// (and with it the record) is stored.
type issuedCert struct {
	record ClientCertificate
	pem    []byte
	bundle []byte
}

// ParseCSR checks a certificate signing request (PEM) as the agent sent it:
// one CERTIFICATE REQUEST block, a valid self-signature, and a key tether
// accepts (ECDSA P-256 or P-384, Ed25519, RSA of 2048 bits or more). The
// names it asks for are ignored: tether decides the identity.
func ParseCSR(csrPEM string) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode([]byte(csrPEM))
	if block == nil || (block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST") {
		return nil, Errorf(CodeInvalid, "field csr must be a PEM \"CERTIFICATE REQUEST\" block (openssl req -new, or x509.CreateCertificateRequest)")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, Errorf(CodeInvalid, "field csr must hold exactly one PEM block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, Errorf(CodeInvalid, "field csr is not a valid certificate request: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, Errorf(CodeInvalid, "field csr: its signature does not verify (%v); sign the request with the key it carries", err)
	}
	switch k := req.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return nil, Errorf(CodeInvalid, "field csr: ECDSA keys must be on P-256 or P-384, not %s", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return nil, Errorf(CodeInvalid, "field csr: an RSA key of %d bits is too small; use 2048 bits or more (or ECDSA P-256)", k.N.BitLen())
		}
	default:
		return nil, Errorf(CodeInvalid, "field csr: the key type %T is not accepted; use ECDSA P-256, Ed25519 or RSA 2048+", req.PublicKey)
	}
	return req, nil
}

// issueClientCertificate signs a certificate for credentialID of clusterID,
// valid until notAfter (the credential's expiry, so a certificate never
// outlives the credential it came with), with the current CA. CodeInvalid
// for a bad CSR; CodeNoCA when tether has no CA.
func (r *Registry) issueClientCertificate(ctx context.Context, csrPEM, clusterID, credentialID string, notAfter time.Time) (*issuedCert, error) {
	req, err := ParseCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	cas, err := r.store.CAList(ctx, r.Now())
	if err != nil {
		return nil, err
	}
	if len(cas) == 0 || !cas[0].RetiredAt.IsZero() {
		return nil, errNoCA()
	}
	ca := cas[0]
	caCert, err := x509.ParseCertificate(ca.CertDER)
	if err != nil {
		return nil, Internal(err, "parse the CA certificate")
	}
	if r.cfg.Keyring == nil {
		return nil, Errorf(CodeUnavailable, "this server has no key file, so it cannot use the CA's key")
	}
	pkcs8, err := r.cfg.Keyring.Open(ca.SealedKey, []byte(ca.ID))
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(pkcs8)
	if err != nil {
		return nil, Internal(err, "parse the CA key")
	}
	now := r.Now()
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	if !notAfter.After(now) {
		return nil, Errorf(CodeUnavailable, "tether's CA %s has expired; an admin must replace it (tether ca init --replace)", ca.ID)
	}
	uri, _ := url.Parse(SPIFFEClusterPrefix + clusterID)
	usage := x509.KeyUsageDigitalSignature
	if _, isRSA := req.PublicKey.(*rsa.PublicKey); isRSA {
		usage |= x509.KeyUsageKeyEncipherment
	}
	serial := randomSerial()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: clusterID},
		URIs:                  []*url.URL{uri},
		NotBefore:             now.Add(-certBackdate),
		NotAfter:              notAfter,
		KeyUsage:              usage,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, req.PublicKey, key.(crypto.Signer))
	if err != nil {
		return nil, Internal(err, "sign the client certificate")
	}
	return &issuedCert{
		record: ClientCertificate{Serial: hex.EncodeToString(serial.Bytes()), ClusterID: clusterID, CredentialID: credentialID, CAID: ca.ID,
			NotBefore: tmpl.NotBefore.UTC(), NotAfter: notAfter.UTC()},
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		bundle: caBundle(cas),
	}, nil
}

func errNoCA() error {
	return Errorf(CodeNoCA, "field csr: this tether has no certificate authority, so it cannot issue client certificates; "+
		"register without csr, or ask its admin to create one (tether ca init)")
}

// randomSerial is a positive 128-bit serial number (RFC 5280 allows 20 octets).
func randomSerial() *big.Int {
	b := randomBytes(16)
	b[0] &= 0x7f
	b[0] |= 0x40 // never a leading zero byte: every serial is 16 bytes, 32 hex digits
	return new(big.Int).SetBytes(b)
}

// certificateForRegister issues the certificate a registration asks for
// (none without a CSR) and attaches its record to cred, so that the store
// inserts it with the credential. The token names its cluster for good, so
// the cluster read here is the one the redemption will bind the credential
// to. A CSR refused (bad, or no CA) leaves the token unused.
func (r *Registry) certificateForRegister(ctx context.Context, csr, tokenID string, cred *Credential) (*issuedCert, error) {
	if csr == "" {
		return nil, nil
	}
	if _, err := ParseCSR(csr); err != nil {
		return nil, err // before the token: a bad request says so whatever the token
	}
	tk, err := r.store.TokenGet(ctx, tokenID)
	if ErrorCode(err) == CodeNotFound {
		return nil, errTokenInvalid("unknown token id")
	}
	if err != nil {
		return nil, err
	}
	cert, err := r.issueClientCertificate(ctx, csr, tk.ClusterID, cred.ID, cred.ExpiresAt)
	if err != nil {
		return nil, err
	}
	cred.ClientCertificate = &cert.record
	return cert, nil
}

// attach puts the certificate and the CA bundle in the answer to the agent.
func (c *issuedCert) attach(ic *IssuedCredential) {
	if c == nil {
		return
	}
	ic.ClientCertificate, ic.CABundle = c.pem, c.bundle
}

// withClientCertificates fills in each credential's client certificate.
func (r *Registry) withClientCertificates(ctx context.Context, clusterID string, creds []Credential) error {
	certs, err := r.store.ClientCertificateList(ctx, clusterID)
	if err != nil || len(certs) == 0 {
		return err
	}
	byCred := make(map[string]*ClientCertificate, len(certs))
	for i := range certs {
		byCred[certs[i].CredentialID] = &certs[i]
	}
	for i := range creds {
		creds[i].ClientCertificate = byCred[creds[i].ID]
	}
	return nil
}

// CheckClientCertificate applies the registry's rule to the verified client
// certificate an agent request came with (chains as crypto/tls verified
// them): a certificate tether's CA issued is good only while the credential
// it was issued with is: not revoked, not expired, not superseded past its
// rotation grace. A credential that may only rotate (expired or
// force-rotated, within RotateUntil, and not superseded) lends its
// certificate to a rotation only, as it does its token. Refused:
// CodeUnauthorized, as an invalid credential is. A certificate from another
// CA (serve --tls-client-ca), or none, is not tether's to revoke: nil.
//
// It runs on every agent request, so it is served from the record cache:
// which roots are tether's CAs and which credential each serial was issued
// with never change once known, and the credential itself is cached and
// evicted through the change feed (revocations on any replica reach it).
func (r *Registry) CheckClientCertificate(ctx context.Context, chains [][]*x509.Certificate, purpose AuthPurpose) error {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return nil
	}
	ours := false
	for _, chain := range chains {
		if len(chain) == 0 {
			continue
		}
		isCA, err := r.isTetherCA(ctx, chain[len(chain)-1])
		if err != nil {
			return err
		}
		if isCA {
			ours = true
			break
		}
	}
	if !ours {
		return nil
	}
	leaf := chains[0][0]
	rec, err := r.issuedCertificate(ctx, leaf)
	if err != nil {
		return err
	}
	if rec == nil {
		return errCertUnauthorized
	}
	if err := r.hub.start(); err != nil {
		return err
	}
	cred, err := r.cache.credential(ctx, r.store, rec.CredentialID)
	if ErrorCode(err) == CodeNotFound {
		return errCertUnauthorized
	}
	if err != nil {
		return err
	}
	switch cred.State(r.Now()) {
	case CredentialActive, CredentialGrace:
		return nil
	case CredentialRotateOnly:
		// Superseded past its grace, it can never rotate again (409) and
		// neither can its certificate.
		if purpose == AuthRotate && cred.SupersededAt.IsZero() {
			return nil
		}
	}
	return errCertUnauthorized
}

// errCertUnauthorized refuses a certificate of tether's CA whose credential
// no longer works: the code an invalid credential gets (401 unauthorized).
var errCertUnauthorized = Errorf(CodeUnauthorized, "the client certificate was issued with a credential that is unknown, expired or revoked; "+
	"connect with the certificate issued with the current credential (at its registration or rotation)")

// isTetherCA reports whether root is one of tether's CAs. Known roots are
// remembered: a CA's certificate is tether's for good, or never.
func (r *Registry) isTetherCA(ctx context.Context, root *x509.Certificate) (bool, error) {
	key := string(root.Raw)
	if ours, known := r.cache.rootKnown(key); known {
		return ours, nil
	}
	cas, err := r.store.CAList(ctx, r.Now())
	if err != nil {
		return false, err
	}
	ours := false
	for _, ca := range cas {
		if bytes.Equal(ca.CertDER, root.Raw) {
			ours = true
		}
	}
	r.cache.rememberRoot(key, ours)
	return ours, nil
}

// issuedCertificate returns the record of a certificate tether's CA issued
// (nil: there is none, as when its cluster was deleted). The records of the
// cluster the certificate names are read once and remembered: a serial is
// issued with one credential for good.
func (r *Registry) issuedCertificate(ctx context.Context, leaf *x509.Certificate) (*ClientCertificate, error) {
	serial := hex.EncodeToString(leaf.SerialNumber.Bytes())
	if rec, ok := r.cache.issuedCert(serial); ok {
		return &rec, nil
	}
	clusterID := ""
	for _, u := range leaf.URIs {
		if id, ok := strings.CutPrefix(u.String(), SPIFFEClusterPrefix); ok && id != "" {
			clusterID = id
			break
		}
	}
	if clusterID == "" {
		return nil, nil
	}
	certs, err := r.store.ClientCertificateList(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	r.cache.rememberIssuedCerts(certs)
	for i := range certs {
		if certs[i].Serial == serial {
			return &certs[i], nil
		}
	}
	return nil, nil
}
