package tui

import (
	"context"
	"encoding/pem"
	"net/http"

	"github.com/tetherhq/tether/registry"
)

// caBackend is tether's CA as the console reaches it: the same registry
// operations as `tether ca show` and `tether ca init`, locally or over the
// admin API's GET and POST /ca.
type caBackend interface {
	// CAs is the current CA first, then replaced ones still trusted; empty
	// when tether has none (registry.Registry.CAs).
	CAs(ctx context.Context) ([]registry.CertificateAuthority, error)
	// InitCA creates tether's CA; admin only, audited as the console's
	// person (registry.Registry.InitCA, never replacing one).
	InitCA(ctx context.Context) (*registry.CertificateAuthority, error)
}

func (l *Local) CAs(ctx context.Context) ([]registry.CertificateAuthority, error) {
	return l.Reg.CAs(l.as(ctx))
}

func (l *Local) InitCA(ctx context.Context) (*registry.CertificateAuthority, error) {
	return l.Reg.InitCA(l.as(ctx), false)
}

// remoteCA is a CA as GET and POST /ca answer it: the record, with its
// certificate as PEM.
type remoteCA struct {
	registry.CertificateAuthority
	Certificate string `json:"certificate"`
}

func (c remoteCA) record() (registry.CertificateAuthority, error) {
	ca := c.CertificateAuthority
	block, _ := pem.Decode([]byte(c.Certificate))
	if block == nil || block.Type != "CERTIFICATE" {
		return ca, registry.Errorf(registry.CodeInternal, "tether answered CA %s without a PEM certificate", ca.ID)
	}
	ca.CertDER = block.Bytes
	return ca, nil
}

func (r *Remote) CAs(ctx context.Context) ([]registry.CertificateAuthority, error) {
	var out struct {
		Items []remoteCA `json:"items"`
	}
	if err := r.call(ctx, http.MethodGet, "/ca", nil, nil, &out); err != nil {
		return nil, err
	}
	cas := make([]registry.CertificateAuthority, len(out.Items))
	for i, c := range out.Items {
		var err error
		if cas[i], err = c.record(); err != nil {
			return nil, err
		}
	}
	return cas, nil
}

func (r *Remote) InitCA(ctx context.Context) (*registry.CertificateAuthority, error) {
	var out remoteCA
	if err := r.call(ctx, http.MethodPost, "/ca", nil, map[string]bool{"replace": false}, &out); err != nil {
		return nil, err
	}
	ca, err := out.record()
	return &ca, err
}

func (readOnly) InitCA(context.Context) (*registry.CertificateAuthority, error) {
	return nil, errReadOnly
}

// canAdmin reports whether the console's person may do what only an admin
// may (create the CA): never in a read-only console, and over the admin API
// only with an admin token (an operator's would be refused with 403).
func canAdmin(ctx *Context) bool { return ctx.allows(registry.PermAdmin, true) }
