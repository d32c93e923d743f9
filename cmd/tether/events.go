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

// feedPage is how many entries a catch-up read asks for at a time.
const feedPage = 500

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
			names, err := clusterNames(ctx, api)
			if err != nil {
				return err
			}
			// Read the feed position before the page, so that nothing written
			// in between is missed by --follow; what arrives twice is skipped
			// by id.
			seq, err := api.LatestSeq(ctx)
			if err != nil {
				return err
			}
			page, err := api.ListEvents(ctx, p)
			if err != nil {
				return err
			}
			slices.Reverse(page) // oldest first, as a log reads
			if page == nil {
				page = []registry.Event{}
			}
			if !follow {
				if g.output == "json" {
					return printJSON(g.stdout, page)
				}
				return printEvents(g.stdout, names, page, true)
			}
			pr := &eventPrinter{g: g, names: names, p: p}
			if err := pr.printList(page); err != nil {
				return err
			}
			return tail(ctx, api, seq, registry.EntityEvent,
				func(ev registry.WatchEvent) error {
					if ev.Event == nil {
						return nil
					}
					return pr.print([]registry.Event{*ev.Event}, false)
				},
				func() error {
					missed, err := admin.Events(api, p).Since(ctx, pr.last, feedPage)
					if err != nil {
						return err
					}
					return pr.printList(missed)
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

// eventPrinter prints events in follow mode, each once and only those the
// filters admit (the watch carries every cluster's events).
type eventPrinter struct {
	g     *globals
	names map[string]string
	p     registry.EventListParams
	last  int64 // the highest id printed
	// listed is the ids of the last list printed: the feed that follows it
	// brings again what was written while it was read. The feed is in commit
	// order, which on PostgreSQL is not id order (writes run side by side):
	// an id below last may still be new.
	listed map[int64]bool
	headed bool
}

// printList prints a page read from the store, oldest first.
func (pr *eventPrinter) printList(events []registry.Event) error {
	pr.listed = map[int64]bool{}
	for _, e := range events {
		pr.listed[e.ID] = true
	}
	return pr.print(events, true)
}

func (pr *eventPrinter) print(events []registry.Event, listed bool) error {
	var out []registry.Event
	for _, e := range events {
		if !listed && pr.listed[e.ID] {
			continue
		}
		pr.last = max(pr.last, e.ID)
		if pr.p.ClusterID != "" && e.ClusterID != pr.p.ClusterID {
			continue
		}
		if len(pr.p.Kinds) > 0 && !slices.Contains(pr.p.Kinds, e.Kind) {
			continue
		}
		out = append(out, e)
	}
	if pr.g.output == "json" {
		for i := range out {
			if err := printJSONLine(pr.g.stdout, &out[i]); err != nil {
				return err
			}
		}
		return nil
	}
	// The header goes out once, with the first page (even an empty one).
	if len(out) == 0 && pr.headed {
		return nil
	}
	defer func() { pr.headed = true }()
	return printEvents(pr.g.stdout, pr.names, out, !pr.headed)
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

// tail follows the change feed from seq, handing each upsert of kind to
// onUpsert, until ctx ends (an interrupt: the normal end of --follow).
//
// catchUp re-reads from the records themselves what the watch may not
// deliver. It runs at each end of snapshot: the first one (which opens the
// watch), where it closes the gap of an empty feed (seq 0 makes Watch take
// its own, later, position), and the one after a reset, when the feed was
// pruned past the watcher's position.
func tail(ctx context.Context, reg admin.Service, seq int64, kind registry.EntityKind, onUpsert func(registry.WatchEvent) error, catchUp func() error) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := reg.Watch(wctx, registry.WatchParams{Since: seq, Kinds: []registry.EntityKind{kind}})
	if err != nil {
		return err
	}
	for ev := range events {
		var err error
		switch ev.Type {
		case registry.WatchUpsert:
			err = onUpsert(ev)
		case registry.WatchEndOfSnapshot:
			err = catchUp()
		}
		if err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return failf("the change feed stopped; run the command again to carry on")
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
			names, err := clusterNames(ctx, api)
			if err != nil {
				return err
			}
			seq, err := api.LatestSeq(ctx)
			if err != nil {
				return err
			}
			page, err := api.ListAudit(ctx, p)
			if err != nil {
				return err
			}
			slices.Reverse(page)
			if page == nil {
				page = []registry.AuditEntry{}
			}
			if !follow {
				if g.output == "json" {
					return printJSON(g.stdout, page)
				}
				return printAudit(g.stdout, names, page, true)
			}
			pr := &auditPrinter{g: g, names: names, p: p}
			if err := pr.printList(page); err != nil {
				return err
			}
			return tail(ctx, api, seq, registry.EntityAudit,
				func(ev registry.WatchEvent) error {
					if ev.Audit == nil {
						return nil
					}
					return pr.print([]registry.AuditEntry{*ev.Audit}, false)
				},
				func() error {
					missed, err := admin.Audit(api, p).Since(ctx, pr.last, feedPage)
					if err != nil {
						return err
					}
					return pr.printList(missed)
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

// auditPrinter is eventPrinter for audit entries.
type auditPrinter struct {
	g      *globals
	names  map[string]string
	p      registry.AuditListParams
	last   int64
	listed map[int64]bool
	headed bool
}

func (pr *auditPrinter) printList(entries []registry.AuditEntry) error {
	pr.listed = map[int64]bool{}
	for _, e := range entries {
		pr.listed[e.ID] = true
	}
	return pr.print(entries, true)
}

func (pr *auditPrinter) print(entries []registry.AuditEntry, listed bool) error {
	var out []registry.AuditEntry
	for _, e := range entries {
		if !listed && pr.listed[e.ID] {
			continue
		}
		pr.last = max(pr.last, e.ID)
		if pr.p.ClusterID != "" && e.ClusterID != pr.p.ClusterID {
			continue
		}
		if !strings.HasPrefix(e.Action, pr.p.Action) {
			continue
		}
		out = append(out, e)
	}
	if pr.g.output == "json" {
		for i := range out {
			if err := printJSONLine(pr.g.stdout, &out[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if len(out) == 0 && pr.headed {
		return nil
	}
	defer func() { pr.headed = true }()
	return printAudit(pr.g.stdout, pr.names, out, !pr.headed)
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
