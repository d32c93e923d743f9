package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

// newClusterRotateSigningKeyCmd is cluster rotate-signing-key: a new
// payload-signing key for the cluster, the old one kept for an overlap.
func newClusterRotateSigningKeyCmd(g *globals) *cobra.Command {
	var overlap time.Duration
	cmd := &cobra.Command{
		Use:   "rotate-signing-key CLUSTER",
		Short: "Give a cluster a new payload-signing key; the old one verifies for an overlap",
		Long: `Give a cluster a new Ed25519 payload-signing key. Jobs handed out from now on
are signed with it; the previous key stays in the cluster's key set
(GET /api/agent/keys) for the overlap, so that an agent holding jobs signed
before the rotation still verifies them. The private key is sealed with the
key file and never shown.`,
		Example: "  tether cluster rotate-signing-key prod-eu --overlap 72h",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			k, err := api.RotateSigningKey(adminContext(ctx), args[0], overlap)
			if err != nil {
				return err
			}
			if overlap == 0 {
				overlap = registry.DefaultSigningKeyOverlap
			}
			jwk := k.JWK()
			if g.output == "json" {
				return printJSON(g.stdout, jwk)
			}
			_, err = fmt.Fprintf(g.stdout, "Cluster %s now signs payloads with key %s; the previous key verifies until %s.\n",
				k.ClusterID, k.ID, k.CreatedAt.Add(overlap).UTC().Format(time.RFC3339))
			return err
		},
	}
	cmd.Flags().Var(newDuration(&overlap, registry.DefaultSigningKeyOverlap), "overlap", "how long the previous key stays in the key set")
	return cmd
}
