package tui

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// auditView is the audit trail, newest on top, live (a liveList): who did
// what to which record and why.
type auditView struct {
	*liveList[registry.AuditEntry]
	fl auditFilter
	// actors is the ACTOR column's Domain as last built, of the rows and
	// the fleet as of shown and fleet.
	actors struct{ stamp, shown, fleet int }
}

const (
	auditPage = 500
	// auditKeep bounds what the view holds: the oldest go first, and come
	// back by scrolling (they are in the store).
	auditKeep = 5000
	// auditPending bounds the entries that wait while the trail is paused.
	auditPending = 1000
)

type auditFilter struct {
	feedFilter
	action string // prefix
}

func parseAuditFilter(f *fleet, s string) auditFilter {
	var out auditFilter
	// The audit trail outlives clusters: an unknown name is taken as an id.
	out.parse(f, s, true, func(k, v string) bool {
		if k == "action" || k == "a" {
			out.action = v
			return true
		}
		return false
	})
	return out
}

func (f *auditFilter) match(fl *fleet, a *registry.AuditEntry) bool {
	if !f.matchCluster(a.ClusterID) {
		return false
	}
	if f.action != "" && !strings.HasPrefix(a.Action, f.action) {
		return false
	}
	if !f.text.empty() {
		hay := filterText(stamp(a.At), a.Actor, a.Action, fl.clusterName(a.ClusterID), a.TargetKind, a.TargetID, a.Reason)
		return f.text.match(hay)
	}
	return true
}

func newAuditView(ctx *Context) *auditView {
	v := &auditView{}
	v.liveList = newLiveList(ctx, []column{
		{Title: "TIME", Width: 20},
		{Title: "ACTOR", Width: 20, Min: 10, Flex: 1, Fit: true, Domain: v.actorDomain},
		{Title: "ACTION", Width: 20, Min: 12, Fit: true},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Drop: 3, Fit: true, Domain: fleetNames(ctx)},
		{Title: "TARGET", Width: 29, Min: 12, Drop: 2, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "REASON", Width: 20, Min: 12, Flex: 3},
	}, listSpec[registry.AuditEntry]{
		title: "Audit trail", live: "live", noun: "entry", nouns: "audit entries", what: "the audit trail",
		loading: "loading the audit trail…", empty: "the audit trail is empty",
		page: auditPage, keep: auditKeep, pendingMax: auditPending,
		id:    func(a *registry.AuditEntry) int64 { return a.ID },
		match: func(a *registry.AuditEntry) bool { return v.fl.match(ctx.Fleet, a) },
		query: func() func(context.Context, int64, int64, int) ([]registry.AuditEntry, error) {
			return admin.Audit(ctx.Backend, registry.AuditListParams{ClusterID: v.fl.cluster, Action: v.fl.action}).Page
		},
		open: v.open,
		sortBy: []func(a, b *registry.AuditEntry) int{
			func(a, b *registry.AuditEntry) int { return cmp.Compare(a.ID, b.ID) },
			byText(func(a *registry.AuditEntry) string { return shortActor(ctx.Fleet, a.Actor) }),
			byText(func(a *registry.AuditEntry) string { return a.Action }),
			byText(func(a *registry.AuditEntry) string { return ctx.Fleet.clusterName(a.ClusterID) }),
			byText(func(a *registry.AuditEntry) string { return a.TargetID }),
			byText(func(a *registry.AuditEntry) string { return a.Reason }),
		},
	})
	return v
}

func (v *auditView) Update(msg tea.Msg) tea.Cmd {
	if msg, ok := msg.(feedMsg); ok {
		return v.feed(msg.batch.Audit, msg.batch.DroppedAudit)
	}
	return v.liveList.Update(msg)
}

// open shows the whole entry: the table cuts long reasons.
func (v *auditView) open(a *registry.AuditEntry) tea.Cmd {
	st := v.ctx.Styles
	var b strings.Builder
	field := func(label, value string) {
		b.WriteString(st.Render(themes.Muted, pad(label, 9)) + st.Render(themes.Plain, display.Safe(value)) + "\n") // as the table shows them
	}
	field("at", stamp(a.At))
	field("actor", a.Actor)
	field("action", a.Action)
	if a.ClusterID != "" {
		field("cluster", v.ctx.Fleet.clusterName(a.ClusterID)+" ("+a.ClusterID+")")
	}
	if a.TargetID != "" {
		field("target", a.TargetKind+" "+a.TargetID)
	}
	field("reason", orDash(a.Reason))
	d := newDocModal(v.ctx, fmt.Sprintf("Audit entry %d", a.ID), b.String())
	if kind, id, ok := a.Subject(); ok {
		ctx := v.ctx
		switch kind {
		case "job":
			d.linkName, d.link = "job "+shortID(id), func() tea.Cmd { return ctx.open(newJobDetail(ctx, id, nil)) }
		case "rollout":
			d.linkName, d.link = "the rollout", func() tea.Cmd { return ctx.open(newRolloutDetail(ctx, id, id)) }
		case "cluster":
			if ctx.Fleet.cluster(id) != nil { // not a deleted one
				d.linkName, d.link = "cluster "+ctx.Fleet.clusterName(id), func() tea.Cmd { return ctx.open(newClusterDetail(ctx, id)) }
			}
		}
	}
	return v.ctx.showModal(d)
}

func (v *auditView) rowKey(i int) string { return fmt.Sprint(v.rows[i].ID, "|", v.ctx.Fleet.version) }

func (v *auditView) rowCells(i int) []cell {
	a := v.rows[i]
	k := themes.Plain
	switch {
	case strings.HasSuffix(a.Action, "_failed"), strings.Contains(a.Action, "revoke"), strings.HasSuffix(a.Action, ".delete"):
		k = themes.Danger
	case strings.Contains(a.Action, "disable"), strings.Contains(a.Action, "force"), a.Action == registry.AuditJobReclaim,
		a.Action == registry.AuditJobRequeue, a.Action == registry.AuditJobCancel:
		k = themes.Warning
	}
	actor := themes.Plain
	if strings.HasPrefix(a.Actor, registry.ActorSystem+":") {
		actor = themes.Muted
	}
	target := a.TargetID // ids say what they are: cl-, j-, cr-, rt-
	cluster := ""
	if a.ClusterID != "" {
		cluster = v.ctx.Fleet.clusterName(a.ClusterID)
	}
	return []cell{
		txt(stamp(a.At), themes.Muted),
		txt(shortActor(v.ctx.Fleet, a.Actor), actor),
		txt(a.Action, k),
		txt(cluster, themes.Plain),
		txt(target, themes.Muted),
		txt(a.Reason, themes.Plain),
	}
}

// actorText names an agent actor ("agent:<cluster id>/<credential id>") by
// its cluster's name, which people recognize.
func actorText(f *fleet, actor string) string {
	rest, ok := strings.CutPrefix(actor, registry.ActorAgent+":")
	if !ok {
		return actor
	}
	id, cred, ok := strings.Cut(rest, "/")
	if !ok || f.cluster(id) == nil {
		return actor
	}
	return registry.ActorAgent + ":" + f.clusterName(id) + "/" + cred
}

// actorDomain is the ACTOR column's Domain: the actor of every entry
// shown (the rows the filter lets through, whether on screen or not) and
// every cluster's agent, so that a cut actor names one of them only.
func (v *auditView) actorDomain(known int) (int, []string) {
	f := v.ctx.Fleet
	if a := &v.actors; a.shown != v.shown || a.fleet != f.version {
		a.stamp, a.shown, a.fleet = a.stamp+1, v.shown, f.version
	}
	if v.actors.stamp == known {
		return known, nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, c := range f.sorted {
		add(registry.ActorAgent + ":" + c.Name)
	}
	for _, a := range v.rows {
		add(shortActor(f, a.Actor))
	}
	return v.actors.stamp, out
}

// shortActor is an actor without its credential: "agent:prod-eu-1".
func shortActor(f *fleet, actor string) string {
	s := actorText(f, actor)
	if strings.HasPrefix(s, registry.ActorAgent+":") {
		s, _, _ = strings.Cut(s, "/")
	}
	return s
}

func (v *auditView) View() string { return v.liveList.View(v) }

func (v *auditView) SetFilter(s string) tea.Cmd {
	if s == v.filter {
		return nil
	}
	old := v.fl
	v.fl = parseAuditFilter(v.ctx.Fleet, s)
	return v.setFilter(s, v.fl.err, old.cluster != v.fl.cluster || old.action != v.fl.action)
}

func (v *auditView) FilterHelp() string {
	return "cluster:NAME action:PREFIX (action:job.); words match every column, " + textFilterHelp
}

func (v *auditView) Actions() []key.Binding { return nil }

func (v *auditView) KeyMap() help.KeyMap { return v.keyMap() }
