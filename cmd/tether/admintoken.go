package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

func init() { register(newAdminTokenCmd) }

func newAdminTokenCmd(g *globals) *cobra.Command {
	return groupCommand("admin-token", "Issue, list and revoke the tokens that reach the admin API",
		newAdminTokenCreateCmd(g), newAdminTokenListCmd(g), newAdminTokenRevokeCmd(g))
}

// issuedAdminToken is the -o json output of admin-token create: the one
// place an admin token's secret is printed.
type issuedAdminToken struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	Role      registry.Role `json:"role"`
	Org       string        `json:"org"`
	ExpiresAt *time.Time    `json:"expiresAt"`
	Token     string        `json:"token"`
}

func newAdminTokenCreateCmd(g *globals) *cobra.Command {
	var (
		name, role, org string
		expires         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create --name NAME --role viewer|operator|admin [--org ORG] [--expires 90d]",
		Short: "Issue an admin API token (shown once)",
		Long: `Issue a token for the admin API (/api/admin/v1). The token is printed once
and cannot be shown again; only a hash is stored.

Roles: viewer reads everything in scope; operator also submits, requeues,
cancels, extends and retries jobs and steers rollouts; admin does everything,
including clusters, registration tokens, credentials and admin tokens.
--org confines the token to the clusters of one organization: anything
outside it is answered as if it did not exist.`,
		Example: `  tether admin-token create --name ci-deployer --role operator --org payments --expires 90d -o json
  tether admin-token create --name oncall-ro --role viewer`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" || role == "" {
				return usagef("admin-token create needs --name NAME and --role viewer, operator or admin")
			}
			if !registry.Role(role).Valid() {
				return usagef("--role %q is not one of viewer, operator, admin", role)
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			issued, err := api.CreateAdminToken(adminContext(ctx), name, registry.Role(role), org, expires)
			if err != nil {
				return err
			}
			t := issued.Token
			g.mutated = true
			if g.output == "json" {
				out := issuedAdminToken{ID: t.ID, Name: t.Name, Role: t.Role, Org: t.Org, Token: issued.Secret.Reveal()} // shown once, by design
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
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the token's name, as the audit trail shows it (admin-token:NAME)")
	f.StringVar(&role, "role", "", "viewer, operator or admin")
	f.StringVar(&org, "org", "", "confine the token to this organization's clusters")
	f.Var(newDuration(&expires, 0), "expires", "lifetime, e.g. 90d (default: until revoked)")
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
			t := newTable(g.stdout, "NAME", "ID", "ROLE", "ORG", "STATE", "CREATED", "EXPIRES", "CREATED BY")
			for _, tok := range tokens {
				t.row(tok.Name, tok.ID, string(tok.Role), orDash(tok.Org), string(tok.State(now)), ago(now, tok.CreatedAt), until(now, tok.ExpiresAt), tok.CreatedBy)
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
