package tui

import (
	"context"
	"crypto/x509"
	_ "embed"
	"encoding/pem"

	"github.com/tetherhq/tether/registry"
)

// The CA's key and certificate are random; golden frames show a fixed
// ECDSA P-256 CA certificate instead (testdata/golden-ca.pem, made once
// like tether ca init makes one, at the fixture's 10:30), and a fixed
// serial for client certificates.

//go:embed testdata/golden-ca.pem
var goldenCAPEM []byte

const goldenCAID = "ca-golden00000000000000000000"

func goldenCA(real registry.CertificateAuthority, i int) registry.CertificateAuthority {
	block, _ := pem.Decode(goldenCAPEM)
	cert := must(x509.ParseCertificate(block.Bytes))
	real.ID = goldenCAID
	if i > 0 {
		real.ID = goldenCAID[:len(goldenCAID)-1] + string(rune('0'+i))
	}
	real.CertDER, real.NotAfter = block.Bytes, cert.NotAfter
	return real
}

func stableCert(cc *registry.ClientCertificate) {
	if cc != nil {
		cc.Serial, cc.CAID = "5e71a1c0ffee00000000000000000001", goldenCAID
	}
}

func (s *stableIDs) CAs(ctx context.Context) ([]registry.CertificateAuthority, error) {
	cas, err := s.inner.CAs(ctx)
	for i := range cas {
		cas[i] = goldenCA(cas[i], i)
	}
	return cas, s.err(err)
}

func (s *stableIDs) InitCA(ctx context.Context, replace bool) (*registry.CertificateAuthority, error) {
	ca, err := s.inner.InitCA(ctx, replace)
	if err != nil {
		return nil, s.err(err)
	}
	return ptr(goldenCA(*ca, 0)), nil
}
