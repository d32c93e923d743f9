package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/adminclient"
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
		newClusterRotateSigningKeyCmd(g),
	)
}

func newClusterCreateCmd(g *globals) *cobra.Command {
	var (
		spec     registry.ClusterSpec
		mode     string
		caps     []string
		labels   []string
		tokenTTL time.Duration
		keyFile  string
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
			if keyFile != "" {
				if spec.PublicKey, err = readPublicKeyFile(g, keyFile); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			c, issued, err := api.CreateCluster(adminContext(ctx), spec, tokenTTL)
			if err != nil {
				return err
			}
			g.mutated = true
			if g.output == "json" {
				return printJSON(g.stdout, createdClusterJSON{Cluster: c, RegistrationToken: issuedTokenJSON(issued)})
			}
			fmt.Fprintf(g.stdout, "Created cluster %s (%s); it stays pending until its agent registers.\n\n", c.Name, c.ID)
			return printIssuedToken(g.stdout, api.Now(), c, issued)
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
	f.BoolVar(&spec.Policy.RequireClientCertificate, "require-client-cert", false, "refuse the agent's requests without a verified client certificate naming the cluster (mTLS; serve --tls-client-ca)")
	f.BoolVar(&spec.Policy.RequireSignedPayloads, "sign-payloads", false, "sign every job with the cluster's Ed25519 key, bound to the job (jobSignature, signatureKeyId)")
	f.BoolVar(&spec.Policy.AllowLegacyPayloadSignatures, "legacy-payload-signatures", false, "with --sign-payloads: also send the payload-only signature (signature) that agents older than the bound form verify")
	f.BoolVar(&spec.Policy.RequireEncryptedPayloads, "encrypt-payloads", false, "hand every job's payload to the agent encrypted to the cluster's public key, and store it sealed (needs --public-key-file)")
	f.StringVar(&keyFile, "public-key-file", "", "the agent's encryption public key: a JWK or PEM file, X25519 or P-256 (- reads stdin); its agent may instead send one at register")
	f.Var(newDuration(&tokenTTL, registry.DefaultTokenTTL), "token-ttl", "lifetime of the registration token (1m to 7d)")
	return cmd
}

// issuedTokenJSON is a new registration token as -o json prints it, in the
// admin API's shape (adminclient.RegistrationToken): the one place a
// registration token's secret is printed.
func issuedTokenJSON(t *registry.IssuedToken) adminclient.RegistrationToken {
	return adminclient.RegistrationToken{
		ID:        t.Token.ID,
		ClusterID: t.Token.ClusterID,
		Token:     t.Secret.Reveal(), // shown once, by design
		ExpiresAt: t.Token.ExpiresAt.UTC(),
	}
}

// createdClusterJSON is cluster create's -o json: the cluster with its first
// registration token, as POST /api/admin/v1/clusters answers.
type createdClusterJSON struct {
	Cluster           *registry.Cluster             `json:"cluster"`
	RegistrationToken adminclient.RegistrationToken `json:"registrationToken"`
}

// printIssuedToken shows a new registration token once, inside the command
// that uses it, so that the secret appears exactly once on the screen. The
// register command reads it from standard input (--token -), so that the
// token stays out of shell history and the process list.
func printIssuedToken(w io.Writer, now time.Time, c *registry.Cluster, t *registry.IssuedToken) error {
	_, err := fmt.Fprintf(w, `Registration token %s for cluster %s expires %s (%s).
It is shown only this once and will not be shown again:

  %s

Register the cluster's agent now, pasting the token on its standard input:

  tether agent register --server URL --token - --state-dir DIR

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
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			clusters, err := api.ListClusters(ctx, p)
			if err != nil {
				return err
			}
			if clusters == nil {
				clusters = []registry.Cluster{}
			}
			if g.output == "json" {
				return printJSON(g.stdout, clusters)
			}
			counts, err := jobCountsByCluster(ctx, api)
			if err != nil {
				return err
			}
			queues, err := api.FleetQueueHealth(ctx)
			if err != nil {
				return err
			}
			queueOf := map[string]*registry.QueueHealth{}
			for i := range queues {
				queueOf[queues[i].ClusterID] = &queues[i]
			}
			now := api.Now()
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
				row := []string{c.ID, c.Name, orDash(c.Organization), string(c.State), health(now, c, queueOf[c.ID]), ago(now, c.Status.LastHeartbeatAt),
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
// whether its agent is talking, whether it takes its work (q, when known)
// and whether it reports anything wrong. The verdict is the registry's
// (Cluster.Health); the STATE column already says disabled or pending, and
// the agent's False conditions are added.
func health(now time.Time, c *registry.Cluster, q *registry.QueueHealth) string {
	var bad []string
	switch h := c.Health(now, q); h {
	case registry.HealthDisabled, registry.HealthPending:
		return "-"
	case registry.HealthSilent:
		return "silent"
	case registry.HealthPaused:
		return "queue paused"
	case registry.HealthNotDraining:
		bad = append(bad, string(h))
	}
	for _, cond := range c.FalseConditions() {
		bad = append(bad, cond.Type+"=False")
	}
	if len(bad) > 0 {
		return strings.Join(bad, ",")
	}
	return "ok"
}

// jobCountsByCluster returns the number of jobs per cluster and state.
func jobCountsByCluster(ctx context.Context, reg admin.Service) (map[string]map[registry.JobState]int64, error) {
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
func clusterNames(ctx context.Context, reg admin.Service) (map[string]string, error) {
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
	Queue       *registry.QueueHealth       `json:"queue"`
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
			tokens, err := api.ListTokens(ctx, c.ID)
			if err != nil {
				return err
			}
			counts, err := jobCountsByCluster(ctx, api)
			if err != nil {
				return err
			}
			queue, err := api.QueueHealth(ctx, c.ID)
			if err != nil {
				return err
			}
			now := api.Now()
			d := clusterDetail{
				Cluster: c, Silent: c.Silent(now), Queue: queue,
				Credentials: credentialViews(now, c.Policy, creds), Tokens: tokenViews(now, tokens),
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
	kv.row("  Health:", health(now, c, d.Queue))
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
		fmt.Fprintf(w, "  newest: %s, %s, capabilities %s, %s, expires %s, rotate after %s, agent rotated %s\n",
			latest.ID, latest.State, capabilitiesCell(&latest), writes, until(now, latest.ExpiresAt), until(now, latest.RotateAfter), agentRotated(now, &latest))
		if cc := latest.ClientCertificate; cc != nil {
			fmt.Fprintf(w, "  its client certificate (tether's CA): serial %s, valid until %s\n", cc.Serial, until(now, cc.NotAfter))
		}
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
	return printQueueHealth(w, now, d.Queue)
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
	if s.Policy.RequireClientCertificate {
		kv.row("  Client certificate:", "required (mTLS)")
	}
	kv.row("  Payloads:", payloadPosture(s))
	if s.PublicKey != "" {
		kv.row("  Public key:", s.PublicKey.Curve()+" "+s.PublicKey.KeyID())
	}
	return kv.flush()
}

// payloadPosture says how the cluster's payloads travel and rest.
func payloadPosture(s *registry.ClusterSpec) string {
	var parts []string
	if s.Policy.RequireSignedPayloads {
		signed := "signed (Ed25519 over JCS, bound to each job)"
		if s.Policy.AllowLegacyPayloadSignatures {
			signed += ", with payload-only signatures for older agents"
		}
		parts = append(parts, signed)
	}
	if s.Policy.RequireEncryptedPayloads {
		parts = append(parts, "encrypted to the public key (JWE ECDH-ES+A256KW, A256GCM), sealed at rest")
	}
	if len(parts) == 0 {
		return "plain"
	}
	return strings.Join(parts, "; ")
}

// readPublicKeyFile reads --public-key-file: a JWK or a PEM public key.
func readPublicKeyFile(g *globals, path string) (registry.AgentPublicKey, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(g.stdin, 64<<10))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", failf("read --public-key-file: %v", err)
	}
	return registry.ParseAgentPublicKey("--public-key-file "+path, b)
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
