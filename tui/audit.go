package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// auditView is the audit trail, newest on top, live: who did what to which
// record and why. Older entries load as the cursor reaches the end.
type auditView struct {
	ctx    *Context
	table  *table
	all    []registry.AuditEntry // newest first
	rows   []*registry.AuditEntry
	filter string
	fl     auditFilter
	gen    int
	loaded bool
	older  bool
	oldest bool
	err    error
	width  int
	// paused: new entries are not shown but counted; f reads them from the
	// store when it resumes.
	paused  bool
	waiting int
}

const (
	auditPage = 500
	// auditKeep bounds what the view holds: the oldest go first, and come
	// back by scrolling (they are in the store).
	auditKeep = 5000
)

type auditFilter struct {
	cluster string
	action  string // prefix
	text    textQuery
	err     string
}

func parseAuditFilter(f *fleet, s string) auditFilter {
	var out auditFilter
	var words []string
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, ":")
		switch {
		case ok && (k == "cluster" || k == "c"):
			found := f.resolve(v)
			switch len(found) {
			case 0:
				// The audit trail outlives clusters: take it as an id.
				out.cluster = v
			case 1:
				out.cluster = found[0].ID
			default:
				out.err = "cluster:" + v + " matches several clusters; type more of the name"
			}
		case ok && (k == "action" || k == "a"):
			out.action = v
		default:
			words = append(words, w)
		}
	}
	out.text = parseTextQuery(words)
	if out.text.err != "" && out.err == "" {
		out.err = out.text.err
	}
	return out
}

func (f *auditFilter) match(fl *fleet, a *registry.AuditEntry) bool {
	if f.cluster != "" && a.ClusterID != f.cluster {
		return false
	}
	if f.action != "" && !strings.HasPrefix(a.Action, f.action) {
		return false
	}
	if !f.text.empty() {
		hay := stamp(a.At) + " " + a.Actor + " " + a.Action + " " + fl.clusterName(a.ClusterID) + " " + a.TargetKind + " " + a.TargetID + " " + a.Reason
		return f.text.match(hay)
	}
	return true
}

type auditMsg struct {
	gen     int
	older   bool
	entries []registry.AuditEntry
	err     error
}

func newAuditView(ctx *Context) *auditView {
	v := &auditView{ctx: ctx}
	v.table = ctx.table([]column{
		{Title: "TIME", Width: 20},
		{Title: "ACTOR", Width: 20, Min: 10, Flex: 1, Fit: true},
		{Title: "ACTION", Width: 20, Min: 12},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Drop: 3, Fit: true},
		{Title: "TARGET", Width: 29, Min: 12, Drop: 2, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "REASON", Width: 20, Min: 12, Flex: 3},
	})
	return v
}

func (v *auditView) Title() string { return "Audit" }

func (v *auditView) SetSize(w, h int) {
	v.width = w
	v.table.setSize(w, h-1)
}

// Init reads the newest entries.
func (v *auditView) Init() tea.Cmd { return v.load(false) }

func (v *auditView) load(older bool) tea.Cmd {
	p := registry.AuditListParams{ClusterID: v.fl.cluster, Action: v.fl.action, Limit: auditPage}
	if older {
		if len(v.all) == 0 {
			return nil
		}
		v.older = true
		p.BeforeID = v.all[len(v.all)-1].ID
	}
	gen, b := v.gen, v.ctx.Backend
	return func() tea.Msg {
		list, err := b.ListAudit(context.Background(), p)
		return auditMsg{gen: gen, older: older, entries: list, err: err}
	}
}

func (v *auditView) rowID(i int) int64 { return v.rows[i].ID }

// anchor is the selected entry. Take it before v.all changes: the rows
// point into it.
func (v *auditView) anchor() anchor[int64] { return anchorAt(v.table, len(v.rows), v.rowID) }

func (v *auditView) rebuild() { v.refilter(v.anchor()) }

// refilter rebuilds the rows from v.all, the selection on sel's entry.
func (v *auditView) refilter(sel anchor[int64]) {
	v.rows = v.rows[:0]
	for i := range v.all {
		if v.fl.match(v.ctx.Fleet, &v.all[i]) {
			v.rows = append(v.rows, &v.all[i])
		}
	}
	sel.restore(v.table, len(v.rows), v.rowID)
}

func (v *auditView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case auditMsg:
		if msg.gen != v.gen {
			return nil
		}
		v.older, v.err = false, msg.err
		if msg.err != nil {
			return failed("could not read the audit trail: " + errText(msg.err))
		}
		v.oldest = len(msg.entries) < auditPage
		sel := v.anchor()
		if msg.older {
			v.all = append(v.all, msg.entries...)
		} else {
			v.loaded = true
			seen := map[int64]bool{}
			for _, a := range v.all {
				seen[a.ID] = true
			}
			for _, a := range msg.entries {
				if !seen[a.ID] {
					v.all = append(v.all, a)
				}
			}
			slices.SortFunc(v.all, func(a, b registry.AuditEntry) int { return cmp.Compare(b.ID, a.ID) })
			v.trim()
		}
		v.refilter(sel)
	case feedMsg:
		if len(msg.batch.Audit) == 0 {
			return nil
		}
		if v.paused {
			v.waiting += len(msg.batch.Audit)
			return nil
		}
		sel := v.anchor()
		fresh := make([]registry.AuditEntry, 0, len(msg.batch.Audit)+len(v.all))
		for i := len(msg.batch.Audit) - 1; i >= 0; i-- {
			fresh = append(fresh, msg.batch.Audit[i])
		}
		v.all = append(fresh, v.all...)
		v.trim()
		v.refilter(sel) // keeps the selection on its entry, by id
	case themeChangedMsg:
		v.table.setStyles(v.ctx.Styles)
	case tea.MouseClickMsg:
		if i, ok := v.table.rowAt(msg.Y-1, len(v.rows)); ok {
			if i == v.table.cursor {
				return v.open()
			}
			v.table.setCursor(i, len(v.rows))
		}
	case tea.MouseWheelMsg:
		v.table.wheel(msg, len(v.rows))
		return v.maybeOlder()
	case tea.KeyPressMsg:
		if v.table.navigate(msg, v.ctx.Keys, len(v.rows)) {
			return v.maybeOlder()
		}
		if key.Matches(msg, keyOlder) && !v.oldest && !v.older && len(v.all) < auditKeep {
			return v.load(true)
		}
		if key.Matches(msg, v.ctx.Keys.Follow) {
			return v.togglePause()
		}
		if isSortKey(msg, v.ctx.Keys) {
			return info(tailOrder("the audit trail is"))
		}
		if key.Matches(msg, v.ctx.Keys.Enter) {
			return v.open()
		}
	}
	return nil
}

// open shows the whole entry: the table cuts long reasons.
func (v *auditView) open() tea.Cmd {
	if v.table.cursor >= len(v.rows) {
		return nil
	}
	a := v.rows[v.table.cursor]
	st := v.ctx.Styles
	var b strings.Builder
	field := func(label, value string) {
		b.WriteString(st.Render(themes.Muted, pad(label, 9)) + st.Render(themes.Plain, value) + "\n")
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
	return v.ctx.showModal(newDocModal(v.ctx, fmt.Sprintf("Audit entry %d", a.ID), b.String()))
}

// togglePause pauses the live trail, or resumes it: what arrived meanwhile
// is read from the store (the newest page; past a page of them, the view
// starts again from the newest).
func (v *auditView) togglePause() tea.Cmd {
	v.paused = !v.paused
	if v.paused {
		v.waiting = 0
		return info("paused: new audit entries wait (f resumes)")
	}
	n := v.waiting
	v.waiting = 0
	if n == 0 {
		return info("live: new audit entries appear on top")
	}
	if n >= auditPage {
		v.gen++
		v.all, v.rows, v.loaded, v.older, v.oldest = nil, nil, false, false, false
		v.table.setCursor(0, 1)
	}
	return tea.Batch(info(fmt.Sprintf("live: %s new while paused, read from the store", plural(n, "entry", "entries"))), v.load(false))
}

// trim keeps the newest auditKeep entries.
func (v *auditView) trim() {
	if len(v.all) > auditKeep {
		v.all = v.all[:auditKeep:auditKeep]
		v.oldest = false
	}
}

func (v *auditView) maybeOlder() tea.Cmd {
	if v.table.cursor >= len(v.rows)-1 && !v.oldest && !v.older && v.loaded && len(v.all) < auditKeep {
		return v.load(true)
	}
	return nil
}

func (v *auditView) rowCount() int       { return len(v.rows) }
func (v *auditView) marked(int) bool     { return false }
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

// shortActor is an actor without its credential: "agent:prod-eu-1".
func shortActor(f *fleet, actor string) string {
	s := actorText(f, actor)
	if strings.HasPrefix(s, registry.ActorAgent+":") {
		s, _, _ = strings.Cut(s, "/")
	}
	return s
}

func (v *auditView) View() string {
	st := v.ctx.Styles
	title := st.Title.Render("Audit trail") + st.Render(themes.Good, "  ● live")
	if v.paused {
		title = st.Title.Render("Audit trail") + st.Render(themes.Warning, fmt.Sprintf("  ❚❚ paused, %d new (f resumes)", v.waiting))
	}
	if v.filter != "" {
		title += st.Render(themes.Muted, "  /") + st.Render(themes.Accent, v.filter)
		if v.fl.err != "" {
			title += st.Render(themes.Danger, "  "+v.fl.err)
		}
	}
	title += st.Render(themes.Muted, fmt.Sprintf("  %d shown", len(v.rows)))
	if v.older {
		title += st.Render(themes.Muted, "  loading older…")
	}
	empty := "loading the audit trail…"
	switch {
	case v.err != nil:
		empty = "could not read the audit trail: " + errText(v.err)
	case v.loaded && v.filter != "":
		empty = "no entry matches /" + v.filter + " (esc clears the filter)"
	case v.loaded:
		empty = "the audit trail is empty"
	}
	return pad(title, v.width) + "\n" + v.table.view(v, empty)
}

func (v *auditView) Filter() string { return v.filter }

func (v *auditView) SetFilter(s string) tea.Cmd {
	if s == v.filter {
		return nil
	}
	old := v.fl
	v.filter = s
	v.fl = parseAuditFilter(v.ctx.Fleet, s)
	if old.cluster == v.fl.cluster && old.action == v.fl.action {
		v.rebuild()
		return nil
	}
	v.gen++
	v.all, v.rows, v.loaded, v.older, v.oldest = nil, nil, false, false, false
	v.table.setCursor(0, 1)
	return v.load(false)
}

func (v *auditView) FilterErr() string { return v.fl.err }

func (v *auditView) FilterHelp() string {
	return "cluster:NAME action:PREFIX (action:job.); words match every column, " + textFilterHelp
}

func (v *auditView) Actions() []key.Binding { return nil }

func (v *auditView) KeyMap() help.KeyMap {
	k := v.ctx.Keys
	return keyMap{
		short: []key.Binding{k.Follow, k.Enter, k.Filter, keyOlder, k.Command, k.Help, k.Quit},
		full: [][]key.Binding{
			{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown},
			{k.Follow, k.Enter, k.Filter, keyOlder},
		},
	}
}
