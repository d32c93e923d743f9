package server

import (
	"net/http"

	"github.com/tetherhq/tether/registry"
)

// The admin API's tokens: admin tokens, registration tokens (never their
// secrets), and who the caller's token is.

func (s *Server) adminListAdminTokens(c *call) error {
	tokens, err := s.reg.ListAdminTokens(c.ctx)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.AdminToken]{Items: tokens})
}

func (s *Server) adminCreateAdminToken(c *call) error {
	var b struct {
		Name    string        `json:"name"`
		Role    registry.Role `json:"role"`
		Org     string        `json:"org"`
		Expires string        `json:"expires"`
	}
	if err := decodeAdmin(c, &b, true); err != nil {
		return err
	}
	ttl, err := parseDurationField("expires", b.Expires)
	if err != nil {
		return err
	}
	issued, err := s.reg.CreateAdminToken(c.ctx, b.Name, b.Role, b.Org, ttl)
	if err != nil {
		return err
	}
	t := issued.Token
	out := map[string]any{"id": t.ID, "name": t.Name, "role": t.Role, "org": t.Org, "token": issued.Secret.Reveal(), "expiresAt": nil}
	if !t.ExpiresAt.IsZero() {
		out["expiresAt"] = t.ExpiresAt
	}
	return writeJSON(c.w, http.StatusCreated, out)
}

func (s *Server) adminRevokeAdminToken(c *call) error {
	reason, err := queryOrBodyReason(c)
	if err != nil {
		return err
	}
	t, err := s.reg.RevokeAdminToken(c.ctx, c.params["name"], reason)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, t)
}

// adminListTokens lists registration tokens (never their secrets): one
// cluster's, or with no cluster in the path every visible cluster's.
func (s *Server) adminListTokens(c *call) error {
	tokens, err := s.reg.ListTokens(c.ctx, c.params["c"])
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.RegistrationToken]{Items: tokens})
}

// whoamiJSON says who the caller's token is: what a client shows and what
// it hides (a viewer's console hides every action).
type whoamiJSON struct {
	Actor string        `json:"actor"`
	Name  string        `json:"name"`
	Role  registry.Role `json:"role"`
	Org   string        `json:"org,omitempty"`
}

func (s *Server) adminWhoami(c *call) error {
	a := registry.ActorFrom(c.ctx)
	role := a.Role
	if role == "" {
		role = registry.RoleAdmin
	}
	return writeJSON(c.w, http.StatusOK, whoamiJSON{Actor: a.String(), Name: a.Name, Role: role, Org: a.Org})
}
