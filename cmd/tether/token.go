package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

func init() { register(newTokenCmd) }

func newTokenCmd(g *globals) *cobra.Command {
	return groupCommand("token", "Issue, list and revoke one-time registration tokens",
		newTokenIssueCmd(g),
		newTokenListCmd(g),
		newTokenRevokeCmd(g),
	)
}

// tokenView is a registration token as -o json shows it: the record (which
// never holds the secret) and its derived state.
type tokenView struct {
	registry.RegistrationToken
	State registry.TokenState `json:"state"`
}

func tokenViews(now time.Time, tokens []registry.RegistrationToken) []tokenView {
	out := make([]tokenView, len(tokens))
	for i, t := range tokens {
		out[i] = tokenView{RegistrationToken: t, State: t.State(now)}
	}
	return out
}

func newTokenIssueCmd(g *globals) *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "issue CLUSTER",
		Short: "Issue a new registration token for a cluster (voids its older unused ones)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			c, err := api.GetCluster(ctx, args[0])
			if err != nil {
				return err
			}
			issued, err := api.IssueToken(adminContext(ctx), c.ID, ttl)
			if err != nil {
				return err
			}
			g.mutated = true
			if g.output == "json" {
				return printJSON(g.stdout, issuedTokenJSON(issued))
			}
			return printIssuedToken(g.stdout, api.Now(), c, issued)
		},
	}
	cmd.Flags().Var(newDuration(&ttl, registry.DefaultTokenTTL), "ttl", "lifetime of the token (1m to 7d)")
	return cmd
}

func newTokenListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list [CLUSTER]",
		Short: "List registration tokens (never their secrets), newest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			cluster := ""
			if len(args) == 1 {
				cluster = args[0]
			}
			tokens, err := api.ListTokens(ctx, cluster)
			if err != nil {
				return err
			}
			now := api.Now()
			views := tokenViews(now, tokens)
			if g.output == "json" {
				return printJSON(g.stdout, views)
			}
			names, err := clusterNames(ctx, api)
			if err != nil {
				return err
			}
			t := newTable(g.stdout, "ID", "CLUSTER", "STATE", "CREATED", "EXPIRES", "USED/REVOKED")
			for _, v := range views {
				t.row(v.ID, nameOf(names, v.ClusterID), string(v.State), ago(now, v.CreatedAt), until(now, v.ExpiresAt), tokenFate(now, &v.RegistrationToken))
			}
			return t.flush()
		},
	}
}

// tokenFate says what ended a token's usability, if anything did.
func tokenFate(now time.Time, t *registry.RegistrationToken) string {
	switch {
	case !t.UsedAt.IsZero():
		return "used " + ago(now, t.UsedAt) + " (credential " + orDash(t.CredentialID) + ")"
	case !t.RevokedAt.IsZero():
		return "revoked " + ago(now, t.RevokedAt) + " (" + orDash(t.RevokeReason) + ")"
	}
	return "-"
}

func newTokenRevokeCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Revoke an unused registration token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			t, err := api.RevokeToken(adminContext(ctx), args[0], reason)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, tokenView{RegistrationToken: *t, State: t.State(api.Now())})
			}
			_, err = fmt.Fprintf(g.stdout, "Revoked registration token %s of cluster %s; it can no longer register an agent.\n", t.ID, t.ClusterID)
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}
