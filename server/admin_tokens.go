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
		SSHKeys []string      `json:"sshKeys"`
	}
	if err := decodeAdmin(c, &b, true); err != nil {
		return err
	}
	ttl, err := parseDurationField("expires", b.Expires)
	if err != nil {
		return err
	}
	issued, err := s.reg.IssueAdminToken(c.ctx, registry.AdminTokenSpec{Name: b.Name, Role: b.Role, Org: b.Org, TTL: ttl, SSHKeys: b.SSHKeys})
	if err != nil {
		return err
	}
	t := issued.Token
	keys := t.SSHKeys
	if keys == nil {
		keys = []registry.SSHKey{}
	}
	out := map[string]any{"id": t.ID, "name": t.Name, "role": t.Role, "org": t.Org, "token": issued.Secret.Reveal(), "expiresAt": nil, "sshKeys": keys}
	if !t.ExpiresAt.IsZero() {
		out["expiresAt"] = t.ExpiresAt
	}
	return writeJSON(c.w, http.StatusCreated, out)
}

// adminEditAdminToken changes an admin identity: its SSH keys (replaced
// by the list given; an empty list takes them all away).
func (s *Server) adminEditAdminToken(c *call) error {
	var b struct {
		SSHKeys *[]string `json:"sshKeys"`
	}
	var err error
	if isMergePatch(c.r.Header.Get("Content-Type")) {
		err = decodeAdminBody(c.body, &b, true)
	} else {
		err = decodeAdmin(c, &b, true)
	}
	if err != nil {
		return err
	}
	if patchIsNull(c.body, "sshKeys") {
		b.SSHKeys = &[]string{} // a merge patch's null removes them
	}
	if b.SSHKeys == nil {
		return errf(registry.CodeInvalid, "nothing to change: give sshKeys, the admin identity's SSH public keys in authorized_keys form ([] takes them all away)")
	}
	t, err := s.reg.SetAdminTokenSSHKeys(c.ctx, c.params["name"], *b.SSHKeys)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, t)
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
