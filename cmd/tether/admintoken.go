package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

func init() { register(newAdminTokenCmd) }

func newAdminTokenCmd(g *globals) *cobra.Command {
	return groupCommand("admin-token", "Issue, list, edit and revoke admin identities: the tokens that reach the admin API, and the SSH keys that open the console",
		newAdminTokenCreateCmd(g), newAdminTokenListCmd(g), newAdminTokenEditCmd(g), newAdminTokenRevokeCmd(g))
}

// issuedAdminToken is the -o json output of admin-token create: the one
// place an admin token's secret is printed.
type issuedAdminToken struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Role      registry.Role     `json:"role"`
	Org       string            `json:"org"`
	ExpiresAt *time.Time        `json:"expiresAt"`
	SSHKeys   []registry.SSHKey `json:"sshKeys"`
	Token     string            `json:"token"`
}

func newAdminTokenCreateCmd(g *globals) *cobra.Command {
	var (
		name, role, org string
		expires         time.Duration
		keyFiles        []string
	)
	cmd := &cobra.Command{
		Use:   "create --name NAME --role viewer|operator|admin [--org ORG] [--expires 90d] [--ssh-key-file KEY.pub]",
		Short: "Issue an admin API token (shown once)",
		Long: `Issue a token for the admin API (/api/admin/v1). The token is printed once
and cannot be shown again; only a hash is stored.

Roles: viewer reads everything in scope; operator also submits, requeues,
cancels, extends and retries jobs and steers rollouts; admin does everything,
including clusters, registration tokens, credentials and admin tokens.
--org confines the token to the clusters of one organization: anything
outside it is answered as if it did not exist.

--ssh-key-file gives the identity SSH public keys: each opens the console
over SSH (tether serve --ssh-listen) as this identity, with its role and
organization, audited as ssh:NAME. Only public keys are kept.`,
		Example: `  tether admin-token create --name ci-deployer --role operator --org payments --expires 90d -o json
  tether admin-token create --name oncall-ro --role viewer
  tether admin-token create --name alice --role operator --org acme --ssh-key-file ~/.ssh/id_ed25519.pub`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" || role == "" {
				return usagef("admin-token create needs --name NAME and --role viewer, operator or admin")
			}
			if !registry.Role(role).Valid() {
				return usagef("--role %q is not one of viewer, operator, admin", role)
			}
			keys, err := readSSHKeyFiles(keyFiles)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			issued, err := api.IssueAdminToken(adminContext(ctx), registry.AdminTokenSpec{Name: name, Role: registry.Role(role), Org: org, TTL: expires, SSHKeys: keys})
			if err != nil {
				return err
			}
			t := issued.Token
			g.mutated = true
			if g.output == "json" {
				out := issuedAdminToken{ID: t.ID, Name: t.Name, Role: t.Role, Org: t.Org, SSHKeys: t.SSHKeys, Token: issued.Secret.Reveal()} // shown once, by design
				if out.SSHKeys == nil {
					out.SSHKeys = []registry.SSHKey{}
				}
				if !t.ExpiresAt.IsZero() {
					out.ExpiresAt = &t.ExpiresAt
				}
				return printJSON(g.stdout, out)
			}
			scope := "every organization"
			if t.Org != "" {
				scope = "organization " + t.Org
			}
			expiry := "never expires"
			if !t.ExpiresAt.IsZero() {
				expiry = "expires " + stamp(api.Now(), t.ExpiresAt)
			}
			_, err = fmt.Fprintf(g.stdout, `Admin token %s (%s): role %s over %s; %s.
It is shown only this once and will not be shown again:

  %s

Use it as "Authorization: Bearer <token>" on /api/admin/v1. Revoke it with: tether admin-token revoke %s
`, t.Name, t.ID, t.Role, scope, expiry, issued.Secret.Reveal(), t.Name)
			if err == nil && len(t.SSHKeys) > 0 {
				err = printSSHKeys(g, t)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the token's name, as the audit trail shows it (admin-token:NAME)")
	f.StringVar(&role, "role", "", "viewer, operator or admin")
	f.StringVar(&org, "org", "", "confine the token to this organization's clusters")
	f.Var(newDuration(&expires, 0), "expires", "lifetime, e.g. 90d (default: until revoked)")
	f.StringArrayVar(&keyFiles, "ssh-key-file", nil, "an SSH public key file (authorized_keys form, e.g. ~/.ssh/id_ed25519.pub; - reads stdin) whose keys open the console over SSH as this identity; repeat for more")
	return cmd
}

func newAdminTokenListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List admin tokens (never their secrets)",
		Example: "  tether admin-token list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			tokens, err := api.ListAdminTokens(adminContext(ctx))
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, tokens)
			}
			now := api.Now()
			t := newTable(g.stdout, "NAME", "ID", "ROLE", "ORG", "STATE", "SSH KEYS", "CREATED", "EXPIRES", "CREATED BY")
			for _, tok := range tokens {
				t.row(tok.Name, tok.ID, string(tok.Role), orDash(tok.Org), string(tok.State(now)), orDash(sshKeyCount(tok.SSHKeys)), ago(now, tok.CreatedAt), until(now, tok.ExpiresAt), tok.CreatedBy)
			}
			return t.flush()
		},
	}
}

func newAdminTokenRevokeCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     "revoke NAME",
		Short:   "Revoke an admin token at once",
		Example: "  tether admin-token revoke ci-deployer --reason 'leaked in a build log'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			tok, err := api.RevokeAdminToken(adminContext(ctx), args[0], reason)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, tok)
			}
			fmt.Fprintf(g.stdout, "Revoked admin token %s (%s); it no longer works.\n", tok.Name, tok.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}
