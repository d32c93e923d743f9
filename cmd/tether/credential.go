package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

func init() { register(newCredentialCmd) }

func newCredentialCmd(g *globals) *cobra.Command {
	return groupCommand("credential", "List, force-rotate and revoke a cluster's agent credentials",
		newCredentialListCmd(g),
		newCredentialRestrictCmd(g, false),
		newCredentialRestrictCmd(g, true),
	)
}

// credentialView is a credential as -o json shows it: the record (which never
// holds the token or the HMAC key) and what it derives.
type credentialView struct {
	registry.Credential
	State  registry.CredentialState `json:"state"`
	Signed bool                     `json:"signed"`
	// BelowPolicy: capabilities the cluster's policy requires that this
	// credential lacks; its next rotation must add them.
	BelowPolicy []string `json:"belowPolicy,omitempty"`
	// AgentRotatedAt: when its agent last rotated (as the admin API says
	// it); null when it has not since it registered.
	AgentRotatedAt *time.Time `json:"agentRotatedAt"`
}

func credentialViews(now time.Time, policy registry.Policy, creds []registry.Credential) []credentialView {
	out := make([]credentialView, len(creds))
	for i, c := range creds {
		out[i] = credentialView{Credential: c, State: c.State(now), Signed: c.Signed(), BelowPolicy: c.BelowPolicy(policy)}
		if at := c.AgentRotatedAt(); !at.IsZero() {
			out[i].AgentRotatedAt = &at
		}
	}
	return out
}

// agentRotated says when the credential's agent last rotated: "never" when
// it has not since it registered (tether cannot make it rotate; a forced
// rotation only makes it due).
func agentRotated(now time.Time, v *credentialView) string {
	if v.AgentRotatedAt == nil {
		return "never"
	}
	return ago(now, *v.AgentRotatedAt)
}

// capabilitiesCell lists a credential's capabilities and what policy needs
// that it lacks.
func capabilitiesCell(v *credentialView) string {
	if len(v.BelowPolicy) == 0 {
		return list(v.Capabilities)
	}
	return list(v.Capabilities) + " (below policy: needs " + list(v.BelowPolicy) + ")"
}

// grace says what is left of a credential that is on its way out.
func grace(now time.Time, v *credentialView) string {
	switch v.State {
	case registry.CredentialGrace:
		return "full access until " + until(now, v.ExpiresAt)
	case registry.CredentialRotateOnly:
		return "may only rotate, until " + until(now, v.RotateUntil)
	case registry.CredentialActive:
		if !v.RotateAfter.After(now) && !v.RotateAfter.IsZero() {
			return "rotation due; works until " + until(now, v.ExpiresAt)
		}
	}
	return "-"
}

func newCredentialListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list CLUSTER",
		Short: "List a cluster's credentials (never their secrets), newest first",
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
			creds, err := api.ListCredentials(ctx, c.ID)
			if err != nil {
				return err
			}
			now := api.Now()
			views := credentialViews(now, c.Policy, creds)
			if g.output == "json" {
				return printJSON(g.stdout, views)
			}
			t := newTable(g.stdout, "ID", "STATE", "CAPABILITIES", "WRITES", "CREATED", "EXPIRES", "ROTATE AFTER", "AGENT ROTATED", "GRACE", "CLIENT CERT")
			for i := range views {
				v := &views[i]
				writes := "unsigned"
				if v.Signed {
					writes = "signed"
				}
				cert := "-"
				if cc := v.ClientCertificate; cc != nil {
					cert = "serial " + cc.Serial[:min(8, len(cc.Serial))] + "…, until " + until(now, cc.NotAfter)
				}
				t.row(v.ID, string(v.State), capabilitiesCell(v), writes, ago(now, v.CreatedAt), until(now, v.ExpiresAt), until(now, v.RotateAfter), agentRotated(now, v), grace(now, v), cert)
			}
			return t.flush()
		},
	}
}

// credentialsChanged is credential rotate's and revoke's -o json answer.
type credentialsChanged struct {
	ClusterID string `json:"clusterId"`
	Affected  int    `json:"affected"`
	// After a forced rotation: when the credentials stop working unless the
	// agent rotates, and the warning when it never has.
	GraceUntil *time.Time `json:"graceUntil,omitempty"`
	Warning    string     `json:"warning,omitempty"`
}

// newCredentialRestrictCmd is credential rotate (rotation due now, expiry
// cut to the grace) and credential revoke (immediate).
func newCredentialRestrictCmd(g *globals, revoke bool) *cobra.Command {
	var reason string
	use, short := "rotate CLUSTER", "Make the cluster's credentials due for rotation now: they stop working after the rotation grace unless its agent rotates"
	if revoke {
		use, short = "revoke CLUSTER", "Revoke the cluster's credentials at once: its agent must register again"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
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
			if revoke {
				n, err := api.RevokeCredentials(adminContext(ctx), c.ID, reason)
				if err != nil {
					return err
				}
				if g.output == "json" {
					return printJSON(g.stdout, credentialsChanged{ClusterID: c.ID, Affected: n})
				}
				if n == 0 {
					fmt.Fprintf(g.stdout, "Cluster %s (%s) has no live credentials; nothing changed.\n", c.Name, c.ID)
					return nil
				}
				fmt.Fprintf(g.stdout, "Revoked %d credential(s) of cluster %s (%s). Its agent must register again with a new token: tether token issue %s\n", n, c.Name, c.ID, c.ID)
				return nil
			}
			f, err := api.ForceRotation(adminContext(ctx), c.ID, reason)
			if err != nil {
				return err
			}
			if g.output == "json" {
				out := credentialsChanged{ClusterID: c.ID, Affected: f.Credentials, Warning: f.Warning}
				if f.Credentials > 0 && !f.GraceUntil.IsZero() {
					out.GraceUntil = &f.GraceUntil
				}
				return printJSON(g.stdout, out)
			}
			if f.Credentials == 0 {
				fmt.Fprintf(g.stdout, "Cluster %s (%s) has no live credentials; nothing changed.\n", c.Name, c.ID)
				return nil
			}
			stops := "when the rotation grace ends"
			if f.Grace > 0 {
				stops = "in " + humanDuration(f.Grace)
				if !f.GraceUntil.IsZero() {
					stops += " (at " + rfc3339(f.GraceUntil) + ")"
				}
			}
			// What tether knows: it made the credentials due; whether the
			// agent rotates is the agent's.
			fmt.Fprintf(g.stdout, "%d credential(s) of cluster %s (%s) are due for rotation now and stop working %s unless its agent rotates them. "+
				"tether cannot make an agent rotate: the reference agent rotates on its next call, the public operator only when its Cluster resource asks.\n",
				f.Credentials, c.Name, c.ID, stops)
			if f.Warning != "" {
				fmt.Fprintf(g.stdout, "Warning: %s.\n", f.Warning)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}
