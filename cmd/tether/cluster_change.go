package main

import (
	"bufio"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

// The commands that change a cluster: edit (relative or compare-and-swap), disable and enable, pause and resume its queue, delete.

// listEdit is one allowlist's edit: replace it, or add and remove entries.
type listEdit struct {
	what        string // "namespace", for messages
	add, remove []string
	set         []string
	replace     bool
}

func (e *listEdit) changes() bool { return e.replace || len(e.add) > 0 || len(e.remove) > 0 }

func (e *listEdit) apply(cluster string, cur []string) ([]string, error) {
	if e.replace {
		return append([]string{}, e.set...), nil
	}
	out := append([]string{}, cur...)
	for _, v := range e.remove {
		v = strings.TrimSpace(v)
		i := slices.Index(out, v)
		if i < 0 {
			return nil, registry.Errorf(registry.CodeInvalid, "%s %q is not in cluster %s's allowed %ss %s, so it cannot be removed; nothing was changed",
				e.what, v, cluster, e.what, bracket(cur))
		}
		out = slices.Delete(out, i, i+1)
	}
	return append(out, e.add...), nil // Normalize trims and de-duplicates
}

func bracket(v []string) string {
	if len(v) == 0 {
		return "(none)"
	}
	return "[" + strings.Join(v, ", ") + "]"
}

func newClusterEditCmd(g *globals) *cobra.Command {
	var (
		ns           = listEdit{what: "namespace"}
		catalog      = listEdit{what: "catalog entry"}
		templates    = listEdit{what: "operation template"}
		name, org    string
		mode         string
		lease        int
		attempts     int
		caps         []string
		mtls         bool
		signPayloads bool
		legacySigs   bool
		encrypt      bool
		keyFile      string
		setLabels    []string
		delLabels    []string
		ifVersion    int64
	)
	cmd := &cobra.Command{
		Use:   "edit CLUSTER [flags]",
		Short: "Change a cluster's allowlists, policy, name or organization",
		Long: `Change a cluster's allowlists, policy, name or organization.

Relative edits (--add-*, --remove-*) apply to the cluster as it is when the
edit is written: if someone else changes it at the same moment, the edit is
re-applied to their version. With --if-version N the edit is written only if
the cluster is still at version N (the version 'tether cluster get' showed);
otherwise it fails and names the current version.`,
		Example: `  tether cluster edit prod-eu --add-namespace billing --remove-namespace legacy
  tether cluster edit prod-eu --set-catalog postgres,redis --lease-seconds 120
  tether cluster edit prod-eu --templates backup.velero,runCommand.job --if-version 4
  tether cluster edit prod-eu --label tier=gold --remove-label canary`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			ns.replace, catalog.replace, templates.replace = fl.Changed("set-namespaces"), fl.Changed("set-catalog"), fl.Changed("templates")
			for _, e := range []*listEdit{&ns, &catalog, &templates} {
				if e.replace && (len(e.add) > 0 || len(e.remove) > 0) {
					return usagef("replacing the allowed %ss cannot be combined with adding or removing some: use one or the other", e.what)
				}
			}
			var newMode registry.ConnectivityMode
			if fl.Changed("mode") {
				var err error
				if newMode, err = parseMode(mode); err != nil {
					return err
				}
			}
			var newCaps []string
			if fl.Changed("require-capability") {
				var err error
				if newCaps, err = parseCapabilities(caps); err != nil {
					return err
				}
			}
			addLabels, err := registry.ParseLabelAssignments(setLabels)
			if err != nil {
				return usagef("--label: %s", registry.ErrorMessage(err))
			}
			if fl.Changed("if-version") && ifVersion < 1 {
				return usagef("--if-version %d is not a version: versions start at 1", ifVersion)
			}
			changes := ns.changes() || catalog.changes() || templates.changes()
			for _, f := range []string{"name", "org", "mode", "lease-seconds", "max-attempts", "require-capability", "require-client-cert", "sign-payloads", "legacy-payload-signatures", "encrypt-payloads", "public-key-file", "label", "remove-label"} {
				changes = changes || fl.Changed(f)
			}
			if !changes {
				return usagef("cluster edit needs at least one change, such as --add-namespace NS or --lease-seconds N")
			}
			var newKey registry.AgentPublicKey
			if keyFile != "" {
				if newKey, err = readPublicKeyFile(g, keyFile); err != nil {
					return err
				}
			}
			edit := func(s *registry.ClusterSpec) error {
				var err error
				if s.AllowedNamespaces, err = ns.apply(s.Name, s.AllowedNamespaces); err != nil {
					return err
				}
				if s.AllowedCatalogEntries, err = catalog.apply(s.Name, s.AllowedCatalogEntries); err != nil {
					return err
				}
				if s.AllowedOperationTemplates, err = templates.apply(s.Name, s.AllowedOperationTemplates); err != nil {
					return err
				}
				if fl.Changed("name") {
					s.Name = name
				}
				if fl.Changed("org") {
					s.Organization = org
				}
				if fl.Changed("mode") {
					s.Mode = newMode
				}
				if fl.Changed("lease-seconds") {
					s.Policy.LeaseSeconds = lease
				}
				if fl.Changed("max-attempts") {
					s.Policy.MaxAttempts = attempts
				}
				if fl.Changed("require-capability") {
					s.Policy.RequiredCapabilities = newCaps
				}
				if fl.Changed("require-client-cert") {
					s.Policy.RequireClientCertificate = mtls
				}
				if fl.Changed("sign-payloads") {
					s.Policy.RequireSignedPayloads = signPayloads
				}
				if fl.Changed("legacy-payload-signatures") {
					s.Policy.AllowLegacyPayloadSignatures = legacySigs
				}
				if fl.Changed("public-key-file") {
					s.PublicKey = newKey // "" removes it
				}
				if fl.Changed("encrypt-payloads") {
					s.Policy.RequireEncryptedPayloads = encrypt
				}
				if len(addLabels) > 0 || len(delLabels) > 0 {
					labels := maps.Clone(s.Labels)
					if labels == nil {
						labels = registry.Labels{}
					}
					for _, k := range delLabels {
						if _, ok := labels[k]; !ok {
							return usagef("cluster %s has no label %q to remove", s.Name, k)
						}
						delete(labels, k)
					}
					maps.Copy(labels, addLabels)
					s.Labels = labels
				}
				return nil
			}

			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			var c *registry.Cluster
			if fl.Changed("if-version") {
				// Compare-and-swap on the version the admin looked at: a
				// concurrent change makes this fail instead of being merged.
				cur, err := api.GetCluster(ctx, args[0])
				if err != nil {
					return err
				}
				spec := cur.ClusterSpec
				if err := edit(&spec); err != nil {
					return err
				}
				c, err = api.UpdateCluster(adminContext(ctx), cur.ID, ifVersion, spec)
				if err != nil {
					return err
				}
			} else {
				c, err = api.ModifyCluster(adminContext(ctx), args[0], edit)
				if err != nil {
					return err
				}
			}
			if g.output == "json" {
				return printJSON(g.stdout, c)
			}
			fmt.Fprintf(g.stdout, "Updated cluster %s (%s), now at version %d.\n", c.Name, c.ID, c.Version)
			return printSpec(g.stdout, &c.ClusterSpec)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&ns.add, "add-namespace", nil, "allow these namespaces too (comma-separated or repeated)")
	f.StringSliceVar(&ns.remove, "remove-namespace", nil, "stop allowing these namespaces")
	f.StringSliceVar(&ns.set, "set-namespaces", nil, "replace the allowed namespaces (\"\" for none)")
	f.StringSliceVar(&catalog.add, "add-catalog", nil, "allow these catalog entries too")
	f.StringSliceVar(&catalog.remove, "remove-catalog", nil, "stop allowing these catalog entries")
	f.StringSliceVar(&catalog.set, "set-catalog", nil, "replace the allowed catalog entries (\"\" for none)")
	f.StringSliceVar(&templates.add, "add-template", nil, "allow these operation templates too")
	f.StringSliceVar(&templates.remove, "remove-template", nil, "stop allowing these operation templates")
	f.StringSliceVar(&templates.set, "templates", nil, "replace the allowed operation templates (\"\" for none)")
	f.StringVar(&name, "name", "", "new display name")
	f.StringVar(&org, "org", "", "new owning organization")
	f.StringVar(&mode, "mode", "", "new connectivity mode: pull, push or gitops")
	f.IntVar(&lease, "lease-seconds", 0, "lease of a lease client's claim; 0 disables automatic reclaim")
	f.IntVar(&attempts, "max-attempts", 0, "attempts before a job whose lease keeps expiring fails")
	f.StringSliceVar(&caps, "require-capability", nil, "replace the required capabilities: hmac, lease (\"\" for none)")
	f.BoolVar(&mtls, "require-client-cert", false, "require a verified client certificate naming the cluster on the agent's requests (mTLS); =false to stop")
	f.BoolVar(&signPayloads, "sign-payloads", false, "sign every job with the cluster's Ed25519 key, bound to the job; =false to stop")
	f.BoolVar(&legacySigs, "legacy-payload-signatures", false, "also send the payload-only signature agents older than the bound form verify; =false once every agent is upgraded")
	f.BoolVar(&encrypt, "encrypt-payloads", false, "hand every job's payload to the agent encrypted to the cluster's public key and store it sealed; =false to stop")
	f.StringVar(&keyFile, "public-key-file", "", "set the cluster's encryption public key from a JWK or PEM file, X25519 or P-256 (- reads stdin; \"\" removes it)")
	f.StringArrayVarP(&setLabels, "label", "l", nil, "set a label KEY=VALUE (repeat for more)")
	f.StringArrayVar(&delLabels, "remove-label", nil, "remove the label KEY (repeat for more)")
	f.Int64Var(&ifVersion, "if-version", 0, "write only if the cluster is still at this version")
	return cmd
}

func newClusterSetEnabledCmd(g *globals, enable bool) *cobra.Command {
	var reason string
	use, short, verb := "disable CLUSTER", "Disable a cluster: its agent is refused until it is enabled", "Disabled"
	if enable {
		use, short, verb = "enable CLUSTER", "Enable a disabled cluster", "Enabled"
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
			c, err := api.SetClusterEnabled(adminContext(ctx), args[0], enable, reason)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, c)
			}
			_, err = fmt.Fprintf(g.stdout, "%s cluster %s (%s); it is now %s.\n", verb, c.Name, c.ID, c.State)
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}

func newClusterSetPausedCmd(g *globals, pause bool) *cobra.Command {
	var reason string
	use, short := "resume CLUSTER", "Resume a paused queue: the agent's next poll gets what waited"
	example := "  tether cluster resume prod-eu"
	if pause {
		use, short = "pause CLUSTER", "Pause a cluster's queue: polls get no job, the agent stays registered and heartbeating, submissions still queue"
		example = "  tether cluster pause prod-eu --reason 'change freeze until Monday'"
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			c, err := api.SetClusterPaused(adminContext(ctx), args[0], pause, reason)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, c)
			}
			if pause {
				_, err = fmt.Fprintf(g.stdout, "Paused the queue of cluster %s (%s): its agent gets no job until tether cluster resume %s.\n", c.Name, c.ID, c.Name)
			} else {
				_, err = fmt.Fprintf(g.stdout, "Resumed the queue of cluster %s (%s).\n", c.Name, c.ID)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}

func newClusterDeleteCmd(g *globals) *cobra.Command {
	var (
		yes    bool
		reason string
	)
	cmd := &cobra.Command{
		Use:   "delete CLUSTER",
		Short: "Delete a cluster and everything it owns",
		Long: `Delete a cluster and everything it owns: its registration tokens,
credentials, jobs and their history, and events. The audit trail is kept.

On a terminal, the cluster's name must be typed to confirm; elsewhere (a
script, a pipe) --yes is required.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			interactive := stdinIsTerminal(g.stdin)
			if !yes && !interactive {
				return usagef("refusing to delete cluster %s without confirmation: there is no terminal to ask on, so pass --yes", args[0])
			}
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
			if !yes {
				fmt.Fprintf(g.stderr, "This deletes cluster %s (%s) and everything it owns: its tokens, credentials, jobs and events.\nType the cluster's name to confirm: ", c.Name, c.ID)
				line, _ := bufio.NewReader(g.stdin).ReadString('\n')
				if strings.TrimSpace(line) != c.Name {
					return failf("the name typed does not match %q; nothing was deleted", c.Name)
				}
			}
			if _, err := api.DeleteCluster(adminContext(ctx), c.ID, reason); err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, struct {
					Deleted bool              `json:"deleted"`
					Cluster *registry.Cluster `json:"cluster"`
				}{true, c})
			}
			_, err = fmt.Fprintf(g.stdout, "Deleted cluster %s (%s) and everything it owned.\n", c.Name, c.ID)
			return err
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking for confirmation")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}
