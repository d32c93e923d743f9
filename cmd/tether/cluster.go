package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

func init() { register(newClusterCmd) }

func newClusterCmd(g *globals) *cobra.Command {
	return groupCommand("cluster", "Create, inspect, edit, disable and delete clusters",
		newClusterCreateCmd(g),
		newClusterListCmd(g),
		newClusterGetCmd(g),
		newClusterEditCmd(g),
		newClusterSetEnabledCmd(g, false),
		newClusterSetEnabledCmd(g, true),
		newClusterSetPausedCmd(g, true),
		newClusterSetPausedCmd(g, false),
		newClusterDeleteCmd(g),
	)
}

func newClusterCreateCmd(g *globals) *cobra.Command {
	var (
		spec     registry.ClusterSpec
		mode     string
		caps     []string
		labels   []string
		tokenTTL time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create --name NAME",
		Short: "Create a cluster and issue its first registration token",
		Long: `Create a cluster (pending until its agent registers) and issue its first
one-time registration token. The token is printed once and cannot be shown
again; issue a new one with 'tether token issue CLUSTER' if it is lost.`,
		Example: `  tether cluster create --name prod-eu --org payments --namespaces apps,monitoring \
    --catalog postgres,redis --templates backup.velero --require-capability lease \
    --label env=prod --label region=eu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(spec.Name) == "" {
				return usagef("cluster create needs --name NAME, the cluster's display name")
			}
			var err error
			if spec.Mode, err = parseMode(mode); err != nil {
				return err
			}
			if spec.Policy.RequiredCapabilities, err = parseCapabilities(caps); err != nil {
				return err
			}
			if spec.Labels, err = registry.ParseLabelAssignments(labels); err != nil {
				return usagef("--label: %s", registry.ErrorMessage(err))
			}
			ctx := cmd.Context()
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			c, issued, err := a.reg.CreateCluster(adminContext(ctx), spec, tokenTTL)
			if err != nil {
				return err
			}
			if g.output == "json" {
				out := issuedTokenJSON(issued)
				out.Cluster = c
				return printJSON(g.stdout, out)
			}
			fmt.Fprintf(g.stdout, "Created cluster %s (%s); it stays pending until its agent registers.\n\n", c.Name, c.ID)
			return printIssuedToken(g.stdout, a.reg.Now(), c, issued)
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Name, "name", "", "display name (required, unique)")
	f.StringVar(&spec.Organization, "org", "", "owning organization")
	f.StringArrayVarP(&labels, "label", "l", nil, "a label KEY=VALUE in Kubernetes syntax (repeat for more), for selectors and rollouts")
	f.StringSliceVar(&spec.AllowedNamespaces, "namespaces", nil, "allowed namespaces (comma-separated; * allows all, including cluster-scoped objects)")
	f.StringSliceVar(&spec.AllowedCatalogEntries, "catalog", nil, "allowed catalog entries (comma-separated; * allows all)")
	f.StringSliceVar(&spec.AllowedOperationTemplates, "templates", nil, "allowed operation templates such as backup.velero (comma-separated; * allows all)")
	f.StringVar(&mode, "mode", string(registry.ModePull), "connectivity mode: pull, push or gitops")
	// The policy flags default to the registry's defaults, so that an explicit
	// --lease-seconds 0 (no automatic reclaim) is kept rather than mistaken
	// for "no policy given".
	f.IntVar(&spec.Policy.LeaseSeconds, "lease-seconds", registry.DefaultLeaseSeconds, "lease of a lease client's claim; 0 disables automatic reclaim")
	f.IntVar(&spec.Policy.MaxAttempts, "max-attempts", registry.DefaultMaxAttempts, "attempts before a job whose lease keeps expiring fails")
	f.StringSliceVar(&caps, "require-capability", nil, "capabilities the agent must negotiate: hmac, lease (comma-separated)")
	f.Var(newDuration(&tokenTTL, registry.DefaultTokenTTL), "token-ttl", "lifetime of the registration token (1m to 7d)")
	return cmd
}

// issuedToken is the -o json output of cluster create and token issue: the
// one place a registration token's secret is printed.
type issuedToken struct {
	ClusterID         string            `json:"clusterId"`
	TokenID           string            `json:"tokenId"`
	RegistrationToken string            `json:"registrationToken"`
	ExpiresAt         time.Time         `json:"expiresAt"`
	Cluster           *registry.Cluster `json:"cluster,omitempty"`
}

func issuedTokenJSON(t *registry.IssuedToken) issuedToken {
	return issuedToken{
		ClusterID:         t.Token.ClusterID,
		TokenID:           t.Token.ID,
		RegistrationToken: t.Secret.Reveal(), // shown once, by design
		ExpiresAt:         t.Token.ExpiresAt,
	}
}

// printIssuedToken shows a new registration token once, inside the command
// that uses it, so that the secret appears exactly once on the screen.
func printIssuedToken(w io.Writer, now time.Time, c *registry.Cluster, t *registry.IssuedToken) error {
	_, err := fmt.Fprintf(w, `Registration token %s for cluster %s expires %s (%s).
It is shown only this once and will not be shown again. Register the cluster's agent now with:

  tether agent register --server URL --token %s --state-dir DIR

where URL is this tether server's address and DIR is the directory in which the agent keeps its credential.
Issuing another token for the cluster (tether token issue %s) voids this one.
`, t.Token.ID, c.Name, rfc3339(t.Token.ExpiresAt), until(now, t.Token.ExpiresAt), t.Secret.Reveal(), c.ID)
	return err
}

func parseMode(s string) (registry.ConnectivityMode, error) {
	m := registry.ConnectivityMode(strings.TrimSpace(s))
	switch m {
	case registry.ModePull, registry.ModePush, registry.ModeGitOps:
		return m, nil
	}
	return "", usagef("--mode %q is not one of pull, push, gitops", s)
}

func parseCapabilities(in []string) ([]string, error) {
	out := []string{}
	for _, c := range in {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !slices.Contains(registry.KnownCapabilities, c) {
			return nil, usagef("--require-capability %q is not one of %s", c, strings.Join(registry.KnownCapabilities, ", "))
		}
		out = append(out, c)
	}
	return out, nil
}

func newClusterListCmd(g *globals) *cobra.Command {
	var state, org, selector string
	var showLabels bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List clusters with their state, health and open jobs",
		Example: `  tether cluster list --state active
  tether cluster list -l 'env=prod,region in (eu,us),!canary' --show-labels`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p := registry.ClusterListParams{State: registry.ClusterState(state), Organization: org, Selector: selector}
			switch p.State {
			case "", registry.ClusterPending, registry.ClusterActive, registry.ClusterDisabled:
			default:
				return usagef("--state %q is not one of pending, active, disabled", state)
			}
			ctx := cmd.Context()
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			clusters, err := a.reg.ListClusters(ctx, p)
			if err != nil {
				return err
			}
			if clusters == nil {
				clusters = []registry.Cluster{}
			}
			if g.output == "json" {
				return printJSON(g.stdout, clusters)
			}
			counts, err := jobCountsByCluster(ctx, a.reg)
			if err != nil {
				return err
			}
			now := a.reg.Now()
			headers := []string{"ID", "NAME", "ORG", "STATE", "HEALTH", "LAST HEARTBEAT", "QUEUED", "IN PROGRESS"}
			if g.wide { // -o wide
				headers = append(headers, "MODE", "CAPABILITIES", "NAMESPACES", "CREATED")
			}
			if showLabels || g.wide {
				headers = append(headers, "LABELS")
			}
			t := newTable(g.stdout, headers...)
			for i := range clusters {
				c := &clusters[i]
				n := counts[c.ID]
				row := []string{c.ID, c.Name, orDash(c.Organization), string(c.State), health(now, c), ago(now, c.Status.LastHeartbeatAt),
					strconv.FormatInt(n[registry.JobQueued], 10), strconv.FormatInt(n[registry.JobInProgress], 10)}
				if g.wide {
					row = append(row, string(c.Mode), list(c.Status.Capabilities), list(c.AllowedNamespaces), ago(now, c.CreatedAt))
				}
				if showLabels || g.wide {
					row = append(row, orDash(c.Labels.String()))
				}
				t.row(row...)
			}
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only clusters in this state: pending, active or disabled")
	cmd.Flags().StringVar(&org, "org", "", "only clusters of this organization")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only clusters whose labels match this selector, e.g. 'env=prod,region in (eu,us),!canary'")
	cmd.Flags().BoolVar(&showLabels, "show-labels", false, "add a LABELS column")
	return cmd
}

// health summarizes what an on-call engineer needs first about a cluster:
// whether its agent is talking and whether it reports anything wrong.
func health(now time.Time, c *registry.Cluster) string {
	if c.State != registry.ClusterActive {
		return "-"
	}
	if c.Paused() {
		return "queue paused"
	}
	if c.Silent(now) {
		return "silent"
	}
	var bad []string
	for _, cond := range c.FalseConditions() {
		bad = append(bad, cond.Type+"=False")
	}
	if len(bad) > 0 {
		return strings.Join(bad, ",")
	}
	return "ok"
}

// jobCountsByCluster returns the number of jobs per cluster and state.
func jobCountsByCluster(ctx context.Context, reg *registry.Registry) (map[string]map[registry.JobState]int64, error) {
	counts, err := reg.JobCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]map[registry.JobState]int64{}
	for _, c := range counts {
		if out[c.ClusterID] == nil {
			out[c.ClusterID] = map[registry.JobState]int64{}
		}
		out[c.ClusterID][c.State] += c.Count
	}
	return out, nil
}

// clusterNames maps cluster ids to names, for tables that list records of
// many clusters.
func clusterNames(ctx context.Context, reg *registry.Registry) (map[string]string, error) {
	clusters, err := reg.ListClusters(ctx, registry.ClusterListParams{})
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(clusters))
	for _, c := range clusters {
		names[c.ID] = c.Name
	}
	return names, nil
}

// nameOf is a cluster's name, or its id if it is not known (deleted, or
// created after the names were read).
func nameOf(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return orDash(id)
}

// clusterDetail is the -o json output of cluster get: the cluster record
// with everything the table view shows about it.
type clusterDetail struct {
	*registry.Cluster
	Silent      bool                        `json:"silent"`
	Credentials []credentialView            `json:"credentials"`
	Tokens      []tokenView                 `json:"tokens"`
	JobCounts   map[registry.JobState]int64 `json:"jobCounts"`
}

func newClusterGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get CLUSTER",
		Short: "Show a cluster: identity, allowlists, policy, status, credentials, tokens and jobs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			c, err := a.reg.GetCluster(ctx, args[0])
			if err != nil {
				return err
			}
			creds, err := a.reg.ListCredentials(ctx, c.ID)
			if err != nil {
				return err
			}
			tokens, err := a.reg.ListTokens(ctx, c.ID)
			if err != nil {
				return err
			}
			counts, err := jobCountsByCluster(ctx, a.reg)
			if err != nil {
				return err
			}
			now := a.reg.Now()
			d := clusterDetail{
				Cluster: c, Silent: c.Silent(now),
				Credentials: credentialViews(now, creds), Tokens: tokenViews(now, tokens),
				JobCounts: map[registry.JobState]int64{},
			}
			for _, s := range registry.JobStates {
				d.JobCounts[s] = counts[c.ID][s]
			}
			if g.output == "json" {
				return printJSON(g.stdout, d)
			}
			return printClusterDetail(g.stdout, now, &d)
		},
	}
}

func printClusterDetail(w io.Writer, now time.Time, d *clusterDetail) error {
	c := d.Cluster
	kv := newKV(w)
	kv.row("ID:", c.ID)
	kv.row("Name:", c.Name)
	kv.row("Organization:", orDash(c.Organization))
	kv.row("Mode:", string(c.Mode))
	state := string(c.State)
	if c.Paused() {
		state += ", queue paused " + ago(now, c.PausedAt)
		if c.PauseReason != "" {
			state += ": " + c.PauseReason
		}
	}
	kv.row("State:", state)
	kv.row("Version:", strconv.FormatInt(c.Version, 10))
	kv.row("Created:", stamp(now, c.CreatedAt))
	kv.row("Updated:", stamp(now, c.UpdatedAt))
	kv.row("Registered:", stamp(now, c.RegisteredAt))
	if err := kv.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nLabels, allowlists and policy:")
	if err := printSpec(w, &c.ClusterSpec); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nObserved status:")
	kv = newKV(w)
	kv.row("  Health:", health(now, c))
	kv.row("  Last heartbeat:", stamp(now, c.Status.LastHeartbeatAt))
	kv.row("  Capabilities:", list(c.Status.Capabilities))
	if len(c.Status.Conditions) == 0 {
		kv.row("  Conditions:", "none reported")
	}
	if err := kv.flush(); err != nil {
		return err
	}
	if len(c.Status.Conditions) > 0 {
		t := newTable(w, "  TYPE", "STATUS", "REASON", "MESSAGE", "SINCE")
		for _, cond := range c.Status.Conditions {
			t.row("  "+cond.Type, cond.Status, orDash(cond.Reason), orDash(oneLine(cond.Message, 80)), ago(now, cond.LastTransitionTime))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\nCredentials:")
	if len(d.Credentials) == 0 {
		fmt.Fprintln(w, "  none: the agent has not registered")
	} else {
		fmt.Fprintf(w, "  %s\n", countStates(d.Credentials, func(v credentialView) string { return string(v.State) }))
		latest := d.Credentials[0] // newest first
		writes := "unsigned writes"
		if latest.Signed {
			writes = "signed writes (hmac)"
		}
		fmt.Fprintf(w, "  newest: %s, %s, capabilities %s, %s, expires %s, rotate after %s\n",
			latest.ID, latest.State, list(latest.Capabilities), writes, until(now, latest.ExpiresAt), until(now, latest.RotateAfter))
	}

	fmt.Fprintln(w, "\nRegistration tokens:")
	if len(d.Tokens) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		fmt.Fprintf(w, "  %s\n", countStates(d.Tokens, func(v tokenView) string { return string(v.State) }))
		for _, t := range d.Tokens {
			if t.State == registry.TokenActive {
				fmt.Fprintf(w, "  usable: %s, expires %s\n", t.ID, until(now, t.ExpiresAt))
			}
		}
	}

	fmt.Fprintln(w, "\nJobs:")
	var parts []string
	for _, s := range registry.JobStates {
		parts = append(parts, fmt.Sprintf("%s %d", s, d.JobCounts[s]))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(parts, ", "))
	return nil
}

// printSpec shows a cluster's allowlists and policy.
func printSpec(w io.Writer, s *registry.ClusterSpec) error {
	kv := newKV(w)
	kv.row("  Labels:", orDash(s.Labels.String()))
	kv.row("  Namespaces:", list(s.AllowedNamespaces))
	kv.row("  Catalog entries:", list(s.AllowedCatalogEntries))
	kv.row("  Operation templates:", list(s.AllowedOperationTemplates))
	lease := strconv.Itoa(s.Policy.LeaseSeconds) + "s"
	if s.Policy.LeaseSeconds == 0 {
		lease = "none (jobs are never reclaimed automatically)"
	}
	kv.row("  Lease:", lease)
	kv.row("  Max attempts:", strconv.Itoa(s.Policy.MaxAttempts))
	kv.row("  Required capabilities:", list(s.Policy.RequiredCapabilities))
	return kv.flush()
}

// countStates renders "2 active, 1 revoked" in first-seen order.
func countStates[T any](items []T, state func(T) string) string {
	var order []string
	n := map[string]int{}
	for _, it := range items {
		s := state(it)
		if n[s] == 0 {
			order = append(order, s)
		}
		n[s]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", n[s], s)
	}
	return strings.Join(parts, ", ")
}

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
		ns        = listEdit{what: "namespace"}
		catalog   = listEdit{what: "catalog entry"}
		templates = listEdit{what: "operation template"}
		name, org string
		mode      string
		lease     int
		attempts  int
		caps      []string
		setLabels []string
		delLabels []string
		ifVersion int64
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
			for _, f := range []string{"name", "org", "mode", "lease-seconds", "max-attempts", "require-capability", "label", "remove-label"} {
				changes = changes || fl.Changed(f)
			}
			if !changes {
				return usagef("cluster edit needs at least one change, such as --add-namespace NS or --lease-seconds N")
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
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			var c *registry.Cluster
			if fl.Changed("if-version") {
				// Compare-and-swap on the version the admin looked at: a
				// concurrent change makes this fail instead of being merged.
				cur, err := a.reg.GetCluster(ctx, args[0])
				if err != nil {
					return err
				}
				spec := cur.ClusterSpec
				if err := edit(&spec); err != nil {
					return err
				}
				c, err = a.reg.UpdateCluster(adminContext(ctx), cur.ID, ifVersion, spec)
				if err != nil {
					return err
				}
			} else {
				c, err = a.reg.ModifyCluster(adminContext(ctx), args[0], edit)
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
	f.StringArrayVarP(&setLabels, "label", "l", nil, "set a label KEY=VALUE (repeat for more)")
	f.StringArrayVar(&delLabels, "remove-label", nil, "remove the label KEY (repeat for more)")
	f.Int64Var(&ifVersion, "if-version", 0, "write only if the cluster is still at this version")
	return cmd
}

func newClusterSetEnabledCmd(g *globals, enable bool) *cobra.Command {
	var reason string
	use, short, done := "disable CLUSTER", "Disable a cluster: its agent is refused until it is enabled", "Disabled"
	if enable {
		use, short, done = "enable CLUSTER", "Enable a disabled cluster", "Enabled"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			c, err := a.reg.SetClusterEnabled(adminContext(ctx), args[0], enable, reason)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, c)
			}
			_, err = fmt.Fprintf(g.stdout, "%s cluster %s (%s); it is now %s.\n", done, c.Name, c.ID, c.State)
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
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			c, err := a.reg.SetClusterPaused(adminContext(ctx), args[0], pause, reason)
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
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			c, err := a.reg.GetCluster(ctx, args[0])
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
			if _, err := a.reg.DeleteCluster(adminContext(ctx), c.ID, reason); err != nil {
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
