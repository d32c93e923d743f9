package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// clustersView is the fleet: one row per cluster, sortable and filterable,
// live from the watch.
type clustersView struct {
	ctx    *Context
	table  *table
	rows   []*registry.Cluster
	filter string
	// filterErr says what is wrong with the filter (an invalid regular
	// expression).
	filterErr string
	sortBy    int
	reverse   bool
	built     int // the fleet version rows were built from
	width     int
	height    int
}

// clusterSort orders the clusters by one column: cmp compares what the
// column shows, smallest first; desc is the direction s picks first (the
// most queued, the oldest wait, the longest silence on top).
type clusterSort struct {
	name string
	col  int
	desc bool
	cmp  func(ctx *Context, a, b *registry.Cluster) int
}

// clusterSortBy is every column of the clusters view, in column order.
var clusterSortBy = []clusterSort{
	{"name", 0, false, func(_ *Context, a, b *registry.Cluster) int { return strings.Compare(a.Name, b.Name) }},
	{"id", 1, false, func(_ *Context, a, b *registry.Cluster) int { return strings.Compare(a.ID, b.ID) }},
	{"organization", 2, false, func(_ *Context, a, b *registry.Cluster) int { return strings.Compare(a.Organization, b.Organization) }},
	{"mode", 3, false, func(_ *Context, a, b *registry.Cluster) int { return strings.Compare(string(a.Mode), string(b.Mode)) }},
	{"state", 4, false, func(ctx *Context, a, b *registry.Cluster) int {
		return cmp.Compare(clusterStateWord(a.Health(ctx.Now, nil)), clusterStateWord(b.Health(ctx.Now, nil)))
	}},
	{"heartbeat", 5, true, func(_ *Context, a, b *registry.Cluster) int { return b.LastSeen().Compare(a.LastSeen()) }},
	{"queued", 6, true, func(ctx *Context, a, b *registry.Cluster) int {
		return cmp.Compare(ctx.Fleet.count(a.ID, registry.JobQueued), ctx.Fleet.count(b.ID, registry.JobQueued))
	}},
	{"in flight", 7, true, func(ctx *Context, a, b *registry.Cluster) int {
		return cmp.Compare(ctx.Fleet.count(a.ID, registry.JobInProgress), ctx.Fleet.count(b.ID, registry.JobInProgress))
	}},
	{"oldest queued", 8, true, func(ctx *Context, a, b *registry.Cluster) int {
		return cmp.Compare(oldestAge(ctx.Fleet.queue(a.ID)), oldestAge(ctx.Fleet.queue(b.ID)))
	}},
	{"credential expiry", 9, false, func(ctx *Context, a, b *registry.Cluster) int {
		return credentialExpiry(ctx.Fleet, a, ctx.Now).Compare(credentialExpiry(ctx.Fleet, b, ctx.Now))
	}},
	{"writes", 10, false, func(ctx *Context, a, b *registry.Cluster) int {
		_, wa := credentialCells(ctx.Fleet, a, ctx.Now)
		_, wb := credentialCells(ctx.Fleet, b, ctx.Now)
		return strings.Compare(wa.text(), wb.text())
	}},
}

// clusterSorts names the sorts, in the order s cycles through them.
var clusterSorts = func() []string {
	out := make([]string, len(clusterSortBy))
	for i, s := range clusterSortBy {
		out[i] = s.name
	}
	return out
}()

func newClustersView(ctx *Context) *clustersView {
	v := &clustersView{ctx: ctx, built: -1}
	v.table = ctx.table([]column{
		{Title: "NAME", Width: 20, Min: 12, Flex: 2, Fit: true},
		{Title: "ID", Width: 29, Drop: 3, Fit: true, Shrink: true, UniquePrefix: true},
		{Title: "ORG", Width: 12, Min: 6, Flex: 1, Drop: 4, Fit: true},
		{Title: "MODE", Width: 6, Drop: 5, Fit: true},
		{Title: "STATE", Width: 15, Min: 8, Fit: true},
		{Title: "HEARTBEAT", Width: 9, Right: true},
		{Title: "QUEUED", Width: 6, Right: true},
		{Title: "IN FLIGHT", Width: 9, Right: true},
		{Title: "OLDEST", Width: 7, Right: true},
		{Title: "CREDENTIAL", Width: 11},
		{Title: "WRITES", Width: 8, Drop: 2},
	})
	return v
}

func (v *clustersView) Title() string { return "Clusters" }

func (v *clustersView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.table.setSize(w, h-1)
}

// rebuild filters and sorts the fleet when it changed.
func (v *clustersView) rebuild() {
	if v.built == v.ctx.Fleet.version {
		return
	}
	v.built = v.ctx.Fleet.version
	id := func(i int) string { return v.rows[i].ID }
	sel := anchorAt(v.table, len(v.rows), id)
	now := v.ctx.Now
	f := v.ctx.Fleet
	v.rows = v.rows[:0]
	q := parseTextQuery(strings.Fields(v.filter))
	v.filterErr = q.err
	for _, c := range f.sorted {
		if !q.empty() {
			// Every column as shown, and the words the columns abbreviate.
			text := filterText(rowText(v.cells(c)), string(c.State), string(c.Health(now, f.queue(c.ID))))
			if c.Paused() {
				text = filterText(text, "paused")
			}
			if !q.match(text) {
				continue
			}
		}
		v.rows = append(v.rows, c)
	}
	srt := clusterSortBy[v.sortBy]
	desc := srt.desc != v.reverse
	slices.SortStableFunc(v.rows, func(a, b *registry.Cluster) int {
		r := srt.cmp(v.ctx, a, b)
		if desc {
			r = -r
		}
		return r
	})
	v.table.setSort(srt.col, desc)
	sel.restore(v.table, len(v.rows), id)
}

// sortByColumn sorts by column col (a shift+letter): its useful direction
// first, reversed when it is the order already.
func (v *clustersView) sortByColumn(col int) tea.Cmd {
	for i, srt := range clusterSortBy {
		if srt.col != col {
			continue
		}
		if i == v.sortBy {
			v.reverse = !v.reverse
		} else {
			v.sortBy, v.reverse = i, false
		}
		v.built = -1
		return info("clusters sorted by " + srt.name + " (again reverses)")
	}
	return nil
}

// oldestAge is how long a queue's oldest job has waited (0: none, or not
// read yet).
func oldestAge(q *registry.QueueHealth) time.Duration {
	if q == nil {
		return 0
	}
	return q.OldestQueuedAge()
}

func credentialExpiry(f *fleet, c *registry.Cluster, now time.Time) time.Time {
	if cr := f.liveCredential(c.ID, now); cr != nil {
		return cr.ExpiresAt
	}
	return now.AddDate(100, 0, 0)
}

// clusterStateWord is the STATE column's word for a cluster's verdict
// (registry.Cluster.Health): a paused queue reads as active there, the cell
// marking the pause after the word (⏸), whatever the word is.
func clusterStateWord(h registry.ClusterHealth) registry.ClusterHealth {
	if h == registry.HealthPaused {
		return registry.HealthActive
	}
	return h
}

func (v *clustersView) selected() *registry.Cluster {
	if v.table.cursor < len(v.rows) {
		return v.rows[v.table.cursor]
	}
	return nil
}

func (v *clustersView) rowCount() int   { return len(v.rows) }
func (v *clustersView) marked(int) bool { return false }
func (v *clustersView) rowKey(i int) string {
	c := v.rows[i]
	f := v.ctx.Fleet
	return fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d", c.ID, c.Version, c.Status.UpdatedAt.UnixMilli(), f.version,
		f.count(c.ID, registry.JobQueued), f.count(c.ID, registry.JobInProgress), v.ctx.Now.Unix())
}

func (v *clustersView) rowCells(i int) []cell { return v.cells(v.rows[i]) }

func (v *clustersView) cells(c *registry.Cluster) []cell {
	now := v.ctx.Now
	f := v.ctx.Fleet
	state := clusterStateCell(c, now)
	hb := txt(age(now, c.Status.LastHeartbeatAt), themes.Plain)
	if c.Silent(now) {
		hb = txt(age(now, c.LastSeen()), themes.Warning)
	} else if c.Status.LastHeartbeatAt.IsZero() {
		hb = txt("never", themes.Muted)
	}
	queued := f.count(c.ID, registry.JobQueued)
	qk := themes.Plain
	if queued > 0 && c.Health(now, nil).Stranded() {
		qk = themes.Warning
	}
	cred, writes := credentialCells(f, c, now)
	oldest := txt(oldestText(f.queue(c.ID)), themes.Plain)
	if f.notDraining(c.ID) {
		// OLDEST is never dropped (no Drop), so the flag shows at any width.
		oldest = txt("⚠ "+oldestText(f.queue(c.ID)), themes.Danger)
	} else if queued > 0 && qk == themes.Warning {
		oldest = txt(oldestText(f.queue(c.ID)), themes.Warning)
	}
	return []cell{
		txt(c.Name, themes.Plain),
		txt(c.ID, themes.Muted),
		txt(c.Organization, themes.Plain),
		txt(string(c.Mode), themes.Muted),
		state,
		hb,
		txt(thousands(queued), qk),
		txt(thousands(f.count(c.ID, registry.JobInProgress)), themes.Plain),
		oldest,
		cred,
		writes,
	}
}

func clusterStateCell(c *registry.Cluster, now time.Time) cell {
	var out cell
	switch h := clusterStateWord(c.Health(now, nil)); h {
	case registry.HealthDisabled:
		out = txt(string(h), themes.Danger)
	case registry.HealthPending, registry.HealthSilent:
		out = txt(string(h), themes.Warning)
	default:
		out = txt(string(registry.HealthActive), themes.Good)
	}
	if c.Paused() {
		out = append(out, seg{" ⏸ paused", themes.Warning})
	}
	if n := len(c.FalseConditions()); n > 0 {
		out = append(out, seg{" ⚠" + strconv.Itoa(n) + " false", themes.Danger})
	}
	return out
}

// credentialCells describe a cluster's live credential: when it expires, and
// whether writes are signed.
func credentialCells(f *fleet, c *registry.Cluster, now time.Time) (cell, cell) {
	cr := f.liveCredential(c.ID, now)
	if cr == nil {
		if c.State == registry.ClusterPending {
			return txt("-", themes.Muted), txt("-", themes.Muted)
		}
		for _, x := range f.creds[c.ID] {
			if x.State(now) == registry.CredentialRotateOnly {
				return txt("rotate only", themes.Warning), signedCell(&x)
			}
		}
		return txt("none", themes.Danger), txt("-", themes.Muted)
	}
	k := themes.Plain
	if cr.ExpiresAt.Sub(now) < 3*24*time.Hour {
		k = themes.Warning
	}
	label := until(now, cr.ExpiresAt)
	if cr.State(now) == registry.CredentialGrace {
		label = "grace " + humanDuration(cr.ExpiresAt.Sub(now))
	}
	return txt(label, k), signedCell(cr)
}

func signedCell(cr *registry.Credential) cell {
	if cr.Signed() {
		return txt("signed", themes.Good)
	}
	return txt("unsigned", themes.Warning)
}

func (v *clustersView) Update(msg tea.Msg) tea.Cmd {
	v.rebuild()
	switch msg := msg.(type) {
	case tickMsg:
		if n := clusterSorts[v.sortBy]; n == "state" || n == "credential expiry" || n == "writes" {
			v.built = -1 // silence depends on the time
		}
	case tea.MouseClickMsg, tea.MouseWheelMsg:
		cmd, _ := moveInList(v.table, v.ctx.Keys, msg, len(v.rows), 1, v.open, noCmd)
		return cmd
	case tea.KeyPressMsg:
		k := v.ctx.Keys
		if cmd, ok := moveInList(v.table, k, msg, len(v.rows), 1, v.open, noCmd); ok {
			return cmd
		}
		switch {
		case key.Matches(msg, k.Enter):
			return v.open()
		case key.Matches(msg, k.Sort), key.Matches(msg, k.SortPrev):
			step := 1
			if key.Matches(msg, k.SortPrev) {
				step = len(clusterSorts) - 1
			}
			v.sortBy = (v.sortBy + step) % len(clusterSorts)
			v.reverse = false
			v.built = -1
			return info("clusters sorted by " + clusterSorts[v.sortBy] + " (S reverses)")
		case key.Matches(msg, k.SortReverse):
			v.reverse = !v.reverse
			v.built = -1
			return nil
		}
		if col, ok := columnSortKey(v.table, msg); ok {
			return v.sortByColumn(col)
		}
		switch {
		case key.Matches(msg, k.NewCluster):
			return v.ctx.showModal(newClusterForm(v.ctx, registry.ClusterSpec{
				Mode: registry.ModePull, Policy: registry.DefaultPolicy(),
			}, nil, 0))
		}
		if c := v.selected(); c != nil {
			if cmd, ok := drillCluster(v.ctx, c, msg); ok {
				return cmd
			}
			return clusterAction(v.ctx, c, msg)
		}
	}
	return nil
}

func (v *clustersView) open() tea.Cmd {
	c := v.selected()
	if c == nil {
		return nil
	}
	d := newClusterDetail(v.ctx, c.ID)
	return v.ctx.open(d)
}

func (v *clustersView) View() string {
	v.rebuild()
	st := v.ctx.Styles
	f := v.ctx.Fleet
	title := st.Title.Render("Clusters") + st.Render(themes.Muted, fmt.Sprintf(" %d", len(f.sorted)))
	if v.filter != "" {
		title += st.Render(themes.Muted, fmt.Sprintf("  %d match /", len(v.rows))) + st.Render(themes.Accent, v.filter)
		if v.filterErr != "" {
			title += st.Render(themes.Danger, "  "+v.filterErr)
		}
	}
	title += st.Render(themes.Muted, "  sorted by "+clusterSorts[v.sortBy])
	empty := "no clusters yet: press n to create one"
	switch {
	case !f.loaded:
		empty = "loading clusters…"
	case v.filter != "":
		empty = "no cluster matches /" + v.filter + " (esc clears the filter)"
	case !v.ctx.allows(registry.PermAdmin, true):
		empty = "no clusters yet"
	}
	return pad(title, v.width) + "\n" + v.table.view(v, empty)
}

func (v *clustersView) Filter() string { return v.filter }

func (v *clustersView) FilterErr() string { return v.filterErr }

func (v *clustersView) SetFilter(s string) tea.Cmd {
	v.filter = s
	v.filterErr = parseTextQuery(strings.Fields(s)).err
	v.built = -1
	v.table.setCursor(0, 1)
	return nil
}

func (v *clustersView) FilterHelp() string {
	return "words in any column (\"not draining\" finds stalled queues), " + textFilterHelp
}

func (v *clustersView) Actions() []key.Binding {
	k := v.ctx.Keys
	return []key.Binding{k.NewCluster, k.IssueToken, k.Edit, k.Rotate, k.Revoke, k.Toggle, k.PauseQueue, k.Delete}
}

func (v *clustersView) KeyMap() help.KeyMap {
	k := v.ctx.Keys
	return keyMap{
		short: []key.Binding{k.Enter, k.NewCluster, k.IssueToken, k.Edit, k.Toggle, k.Filter, k.Sort, k.Command, k.Help, k.Quit},
		full: [][]key.Binding{
			{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown},
			{k.Enter, k.Filter, k.Sort, k.SortPrev, k.SortReverse},
			{k.NewCluster, k.IssueToken, k.Edit, k.Rotate},
			{k.Revoke, k.Toggle, k.PauseQueue, k.Delete},
			{keyClusterJobs, keyClusterEvents, k.CopyID},
		},
	}
}

// forceRotationText is the force-rotation confirmation: what tether does
// and what it cannot (make the agent rotate), and a warning when nothing
// says that this cluster's agent rotates at all.
func forceRotationText(ctx *Context, c *registry.Cluster) string {
	text := "Its live credentials become due for rotation now and stop working when the rotation grace ends unless its agent rotates. " +
		"tether cannot make it: the reference agent rotates on its next call, the public operator only when its Cluster resource asks. " +
		"An agent that does not rotate in time must re-register."
	now := ctx.Now
	if registry.AgentNeverRotated(ctx.Fleet.creds[c.ID], now) {
		grace := ctx.Backend.RotationGrace()
		text += "\n\nWarning: " + registry.NeverRotatedWarning(c, grace, now.Add(grace)) + "."
	}
	return text
}

// clusterAction handles the keys that act on one cluster, in the list and
// in its detail.
func clusterAction(ctx *Context, c *registry.Cluster, msg tea.KeyPressMsg) tea.Cmd {
	k := ctx.Keys
	b := ctx.Backend
	id, name := c.ID, c.Name
	switch {
	case key.Matches(msg, k.CopyID): // the ID column may show a prefix of it
		return tea.Batch(tea.SetClipboard(id), info("copied "+id+" to the clipboard (OSC 52)"))
	case key.Matches(msg, k.IssueToken):
		return ctx.showModal(newConfirm(ctx, "Issue a registration token for "+name+"?",
			"A new one-time token is issued for "+name+" and shown once. Older unused tokens of this cluster stop working.",
			"issue token", false,
			runAction("issue a token for "+name, func(cx context.Context) outcome {
				tok, err := b.IssueToken(cx, id, 0)
				if err != nil {
					return outcome{err: err}
				}
				return outcome{ok: "issued token " + tok.Token.ID + " for " + name + "; older unused tokens are void",
					then: []tea.Msg{showTokenMsg{cluster: c, token: tok}}}
			})))
	case key.Matches(msg, k.Edit):
		return ctx.showModal(newClusterForm(ctx, c.ClusterSpec, c, c.Version))
	case key.Matches(msg, k.Rotate):
		return ctx.showModal(newConfirm(ctx, "Force credential rotation for "+name+"?", forceRotationText(ctx, c),
			"force rotation", true,
			runAction("force rotation for "+name, func(cx context.Context) outcome {
				f, err := b.ForceRotation(cx, id, "forced from the console")
				if err != nil {
					return outcome{err: err}
				}
				return outcome{ok: fmt.Sprintf("forced rotation of %s of %s: its agent must rotate on its next call", plural(f.Credentials, "credential", "credentials"), name)}
			})))
	case key.Matches(msg, k.Revoke):
		return ctx.showModal(newTypedConfirm(ctx, "Revoke every credential of "+name+"?",
			"Revocation is immediate: the agent's next call gets 401 and it cannot rotate. It must re-register with a new one-time token (t).",
			name,
			runAction("revoke credentials of "+name, func(cx context.Context) outcome {
				n, err := b.RevokeCredentials(cx, id, "revoked from the console")
				if err != nil {
					return outcome{err: err}
				}
				return outcome{ok: fmt.Sprintf("revoked %s of %s: its agent must re-register with a new token (t)", plural(n, "credential", "credentials"), name)}
			})))
	case key.Matches(msg, k.Toggle):
		enable := c.State == registry.ClusterDisabled
		if enable {
			return ctx.showModal(newConfirm(ctx, "Enable "+name+"?",
				"Its agent may call again, and its queued jobs are handed out.", "enable", false,
				runAction("enable "+name, func(cx context.Context) outcome {
					cl, err := b.SetClusterEnabled(cx, id, true, "enabled from the console")
					if err != nil {
						return outcome{err: err}
					}
					return outcome{ok: "enabled " + name + " (now " + string(cl.State) + ")"}
				})))
		}
		return ctx.showModal(newConfirm(ctx, "Disable "+name+"?",
			"Its agent gets 403 cluster_disabled on every call until it is enabled again; its jobs stay queued. Nothing is deleted.",
			"disable", true,
			runAction("disable "+name, func(cx context.Context) outcome {
				if _, err := b.SetClusterEnabled(cx, id, false, "disabled from the console"); err != nil {
					return outcome{err: err}
				}
				return outcome{ok: "disabled " + name + ": its agent is refused until enabled (d)"}
			})))
	case key.Matches(msg, k.PauseQueue):
		if c.Paused() {
			return ctx.showModal(newConfirm(ctx, "Resume "+name+"'s queue?",
				"Its agent's next poll gets the jobs that waited.", "resume", false,
				runAction("resume "+name, func(cx context.Context) outcome {
					if _, err := b.SetClusterPaused(cx, id, false, "resumed from the console"); err != nil {
						return outcome{err: err}
					}
					return outcome{ok: "resumed " + name + "'s queue"}
				})))
		}
		return ctx.showModal(newConfirm(ctx, "Pause "+name+"'s queue?",
			"Its agent's polls get no job until the queue is resumed (p); the agent stays registered and heartbeating, and submissions still queue.",
			"pause", true,
			runAction("pause "+name, func(cx context.Context) outcome {
				if _, err := b.SetClusterPaused(cx, id, true, "paused from the console"); err != nil {
					return outcome{err: err}
				}
				return outcome{ok: "paused " + name + "'s queue: p resumes it"}
			})))
	case key.Matches(msg, k.Delete):
		return ctx.showModal(newTypedConfirm(ctx, "Delete "+name+" and everything it owns?",
			"The cluster, its tokens, credentials, jobs (with their history) and events are deleted for good. The audit trail keeps a record.",
			name,
			runAction("delete "+name, func(cx context.Context) outcome {
				if _, err := b.DeleteCluster(cx, id, "deleted from the console"); err != nil {
					return outcome{err: err}
				}
				return outcome{ok: "deleted cluster " + name + " (" + id + ")"}
			})))
	}
	return nil
}
