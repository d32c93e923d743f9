package main

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

func init() {
	register(newEventsCmd)
	register(newAuditCmd)
}

func newEventsCmd(g *globals) *cobra.Command {
	var (
		cluster string
		kinds   []string
		limit   int
		follow  bool
	)
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the events agents reported (heartbeats, condition transitions, ...), oldest first",
		Long: `Show the newest events agents reported, oldest first. With --follow, keep
printing events as they arrive until interrupted; with -o json, each event
is then one line of JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usagef("--limit %d must be at least 1", limit)
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			p := registry.EventListParams{Limit: limit}
			for _, k := range kinds {
				if k = strings.TrimSpace(k); k != "" {
					p.Kinds = append(p.Kinds, k)
				}
			}
			if cluster != "" {
				if p.ClusterID, err = resolveClusterFilter(ctx, api, cluster); err != nil {
					return err
				}
			}
			return showFeed(ctx, g, api, admin.Events(api, p), limit, follow, feedView[registry.Event]{
				kind:  registry.EntityEvent,
				id:    func(e *registry.Event) int64 { return e.ID },
				watch: func(ev registry.WatchEvent) *registry.Event { return ev.Event },
				admits: func(e *registry.Event) bool {
					return (p.ClusterID == "" || e.ClusterID == p.ClusterID) && (len(p.Kinds) == 0 || slices.Contains(p.Kinds, e.Kind))
				},
				table: printEvents,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "only events of this cluster (id or name)")
	f.StringSliceVar(&kinds, "kind", nil, "only events of these kinds (comma-separated), such as ClusterHeartbeat,ConditionTransition")
	f.IntVar(&limit, "limit", 50, "show at most this many of the newest events")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new events until interrupted")
	return cmd
}

// resolveClusterFilter turns a cluster id or name into an id. An id of a
// deleted cluster is taken as is: its audit trail outlives it.
func resolveClusterFilter(ctx context.Context, reg admin.Service, ref string) (string, error) {
	c, err := reg.GetCluster(ctx, ref)
	if registry.ErrorCode(err) == registry.CodeNotFound && strings.HasPrefix(ref, "cl-") {
		return ref, nil
	}
	if err != nil {
		return "", err
	}
	return c.ID, nil
}

// printEvents prints events as a table; in follow mode only the first batch
// has a header.
func printEvents(w io.Writer, names map[string]string, events []registry.Event, header bool) error {
	t := newKV(w)
	if header {
		t.row("RECEIVED", "CLUSTER", "KIND", "RESOURCE", "CONDITIONS", "MESSAGE")
	}
	for i := range events {
		e := &events[i]
		t.row(rfc3339(e.ReceivedAt), nameOf(names, e.ClusterID), e.Kind, orDash(resourceString(e.ResourceRef)),
			orDash(conditionsString(e.Conditions)), orDash(oneLine(e.Message, 100)))
	}
	return t.flush()
}

func resourceString(r registry.ResourceRef) string {
	return registry.Target{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}.String()
}

func conditionsString(conds []registry.Condition) string {
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = c.Type + "=" + c.Status
		if c.Reason != "" {
			parts[i] += "(" + c.Reason + ")"
		}
	}
	return strings.Join(parts, " ")
}

func newAuditCmd(g *globals) *cobra.Command {
	var (
		cluster, action string
		limit           int
		follow          bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit trail: who did what to which record, oldest first",
		Long: `Show the newest audit entries, oldest first. With --follow, keep printing
entries as they are written until interrupted; with -o json, each entry is
then one line of JSON.`,
		Example: `  tether audit --cluster prod-eu --action credential.
  tether audit --action job.requeue --follow -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usagef("--limit %d must be at least 1", limit)
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			p := registry.AuditListParams{Action: action, Limit: limit}
			if cluster != "" {
				if p.ClusterID, err = resolveClusterFilter(ctx, api, cluster); err != nil {
					return err
				}
			}
			return showFeed(ctx, g, api, admin.Audit(api, p), limit, follow, feedView[registry.AuditEntry]{
				kind:  registry.EntityAudit,
				id:    func(e *registry.AuditEntry) int64 { return e.ID },
				watch: func(ev registry.WatchEvent) *registry.AuditEntry { return ev.Audit },
				admits: func(e *registry.AuditEntry) bool {
					return (p.ClusterID == "" || e.ClusterID == p.ClusterID) && strings.HasPrefix(e.Action, p.Action)
				},
				table: printAudit,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "only entries about this cluster (id or name; the id of a deleted cluster works too)")
	f.StringVar(&action, "action", "", "only actions starting with this, such as job. or credential.revoke")
	f.IntVar(&limit, "limit", 50, "show at most this many of the newest entries")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new entries until interrupted")
	return cmd
}

func printAudit(w io.Writer, names map[string]string, entries []registry.AuditEntry, header bool) error {
	t := newKV(w)
	if header {
		t.row("AT", "ACTOR", "ACTION", "CLUSTER", "TARGET", "REASON")
	}
	for i := range entries {
		e := &entries[i]
		target := e.TargetID
		if e.TargetKind != "" && e.TargetID != "" {
			target = e.TargetKind + " " + e.TargetID
		}
		cluster := "-"
		if e.ClusterID != "" {
			cluster = nameOf(names, e.ClusterID)
		}
		t.row(rfc3339(e.At), e.Actor, e.Action, cluster, orDash(target), orDash(oneLine(e.Reason, 120)))
	}
	return t.flush()
}
