package server

import (
	"encoding/pem"
	"net/http"
	"time"

	"github.com/tetherhq/tether/registry"
)

// tether's CA on the admin API: GET /ca shows it (and the bundle agents'
// certificates chain to), POST /ca creates it ({"replace": true} replaces
// one). The private key never leaves the store, sealed.

type caJSON struct {
	ID           string    `json:"id"`
	CreatedAt    time.Time `json:"createdAt"`
	NotAfter     time.Time `json:"notAfter"`
	RetiredAt    time.Time `json:"retiredAt,omitzero"`
	TrustedUntil time.Time `json:"trustedUntil,omitzero"`
	Certificate  string    `json:"certificate"` // PEM
}

type caListJSON struct {
	Items  []caJSON `json:"items"`
	Bundle string   `json:"bundle"` // PEM: every certificate in items
}

func caView(ca registry.CertificateAuthority) caJSON {
	return caJSON{ID: ca.ID, CreatedAt: ca.CreatedAt.UTC(), NotAfter: ca.NotAfter.UTC(), RetiredAt: ca.RetiredAt.UTC(), TrustedUntil: ca.TrustedUntil.UTC(),
		Certificate: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.CertDER}))}
}

func (s *Server) adminGetCA(c *call) error {
	cas, err := s.reg.CAs(c.ctx)
	if err != nil {
		return err
	}
	out := caListJSON{Items: make([]caJSON, len(cas))}
	for i, ca := range cas {
		out.Items[i] = caView(ca)
		out.Bundle += out.Items[i].Certificate
	}
	return writeJSON(c.w, http.StatusOK, out)
}

func (s *Server) adminInitCA(c *call) error {
	var body struct {
		Replace bool `json:"replace"`
	}
	if err := decodeAdmin(c, &body, false); err != nil {
		return err
	}
	ca, err := s.reg.InitCA(c.ctx, body.Replace)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusCreated, caView(*ca))
}
