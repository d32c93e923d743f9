package tui

import (
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

// conflictDialog is shown when an edit lost its compare-and-swap: someone
// changed the cluster after the form opened. Nothing was written. It shows
// both sides and offers to reload the cluster and reapply this person's
// changes on top of the other's, for review before saving again; it never
// overwrites.
type conflictDialog struct {
	ctx      *Context
	cluster  *registry.Cluster // as the edit began
	original registry.ClusterSpec
	mine     registry.ClusterSpec
	current  *registry.Cluster // loaded after the conflict
	by       string            // who changed it, from the audit trail
	err      error
}

type conflictLoadedMsg struct {
	d       *conflictDialog
	current *registry.Cluster
	by      string
	err     error
}

var (
	keyReapply = key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reload and reapply"))
	keyDiscard = key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "discard my changes"))
)

func newConflictDialog(ctx *Context, cluster *registry.Cluster, original, mine registry.ClusterSpec) *conflictDialog {
	return &conflictDialog{ctx: ctx, cluster: cluster, original: original, mine: mine}
}

// load reads the cluster as it is now and who last changed it.
func (d *conflictDialog) load() tea.Cmd {
	b, id := d.ctx.Backend, d.cluster.ID
	return func() tea.Msg {
		ctx := context.Background()
		c, err := b.GetCluster(ctx, id)
		if err != nil {
			return conflictLoadedMsg{d: d, err: err}
		}
		by := ""
		if list, err := b.ListAudit(ctx, registry.AuditListParams{ClusterID: id, Action: "cluster.", Limit: 1}); err == nil && len(list) > 0 {
			by = fmt.Sprintf("%s at %s", list[0].Actor, stamp(list[0].At))
		}
		return conflictLoadedMsg{d: d, current: c, by: by}
	}
}

func (d *conflictDialog) Update(msg tea.Msg) (modal, tea.Cmd) {
	switch msg := msg.(type) {
	case conflictLoadedMsg:
		if msg.d == d {
			d.current, d.by, d.err = msg.current, msg.by, msg.err
		}
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, keyDiscard):
			return nil, info("edit discarded: cluster " + d.cluster.Name + " keeps the other change")
		case key.Matches(msg, keyReapply):
			if d.current == nil {
				return d, d.load()
			}
			merged, clashes := reapply(d.original, d.mine, d.current.ClusterSpec)
			f := newClusterForm(d.ctx, merged, d.current, d.current.Version)
			f.initial = cloneSpec(d.current.ClusterSpec)
			f.note = fmt.Sprintf("Reloaded version %d and reapplied your changes on it; their changes are kept. Review, then ctrl+s to save.", d.current.Version)
			if len(clashes) > 0 {
				f.note += " Both of you changed " + strings.Join(clashes, ", ") + ": your value is the one shown."
			}
			return f, nil
		}
	}
	return d, nil
}

func (d *conflictDialog) View() string {
	ctx := d.ctx
	st := ctx.Styles
	width := min(ctx.Width-2, 90)
	inner := width - 4
	var b strings.Builder
	b.WriteString(wrap(fmt.Sprintf("Someone changed cluster %s after you opened the editor. Nothing was saved: your edit was made on version %d.",
		d.cluster.Name, d.cluster.Version), inner))
	b.WriteString("\n\n")
	row := func(label, value string, k themes.Kind) {
		b.WriteString(st.Render(themes.Muted, pad(label, 15)) + st.Render(k, wrap(value, inner-15)) + "\n")
	}
	switch {
	case d.err != nil:
		row("Now", "could not read the cluster: "+errText(d.err), themes.Danger)
	case d.current == nil:
		row("Now", "reading the current version…", themes.Muted)
	default:
		now := fmt.Sprintf("version %d", d.current.Version)
		if d.by != "" {
			now += ", last changed by " + d.by
		}
		row("Now", now, themes.Plain)
		theirs := describeDiff(d.original, d.current.ClusterSpec)
		if theirs == "" {
			theirs = "no change to the spec (enabled, disabled or otherwise touched)"
		}
		row("Their changes", theirs, themes.Warning)
	}
	mine := describeDiff(d.original, d.mine)
	if mine == "" {
		mine = "none"
	}
	row("Your changes", mine, themes.Info)
	b.WriteString("\n" + hints(ctx, "r", "reload and reapply my changes (review before saving)", "esc", "discard my changes"))
	return frame(ctx, "Edit conflict: "+d.cluster.Name+" changed meanwhile", b.String(), width, true)
}

func (d *conflictDialog) KeyMap() help.KeyMap {
	return keyMap{short: []key.Binding{keyReapply, keyDiscard}, full: [][]key.Binding{{keyReapply, keyDiscard}}}
}

// reapply puts the changes from original to mine on top of theirs: a
// scalar field I changed takes my value; list items I added are added and
// items I removed are removed, the rest of their list kept. clashes names
// the scalar fields both sides changed to different values.
func reapply(original, mine, theirs registry.ClusterSpec) (registry.ClusterSpec, []string) {
	out := cloneSpec(theirs)
	var clashes []string
	scalar := func(name string, o, m, t any, set func()) {
		if fmt.Sprint(o) == fmt.Sprint(m) {
			return
		}
		if fmt.Sprint(o) != fmt.Sprint(t) && fmt.Sprint(m) != fmt.Sprint(t) {
			clashes = append(clashes, name)
		}
		set()
	}
	list := func(o, m, t []string) []string {
		res := slices.Clone(t)
		for _, v := range m {
			if !slices.Contains(o, v) && !slices.Contains(res, v) {
				res = append(res, v)
			}
		}
		for _, v := range o {
			if !slices.Contains(m, v) {
				res = slices.DeleteFunc(res, func(x string) bool { return x == v })
			}
		}
		return res
	}
	scalar("name", original.Name, mine.Name, theirs.Name, func() { out.Name = mine.Name })
	scalar("organization", original.Organization, mine.Organization, theirs.Organization, func() { out.Organization = mine.Organization })
	scalar("mode", original.Mode, mine.Mode, theirs.Mode, func() { out.Mode = mine.Mode })
	scalar("lease seconds", original.Policy.LeaseSeconds, mine.Policy.LeaseSeconds, theirs.Policy.LeaseSeconds,
		func() { out.Policy.LeaseSeconds = mine.Policy.LeaseSeconds })
	scalar("max attempts", original.Policy.MaxAttempts, mine.Policy.MaxAttempts, theirs.Policy.MaxAttempts,
		func() { out.Policy.MaxAttempts = mine.Policy.MaxAttempts })
	out.AllowedNamespaces = list(original.AllowedNamespaces, mine.AllowedNamespaces, theirs.AllowedNamespaces)
	out.AllowedCatalogEntries = list(original.AllowedCatalogEntries, mine.AllowedCatalogEntries, theirs.AllowedCatalogEntries)
	out.AllowedOperationTemplates = list(original.AllowedOperationTemplates, mine.AllowedOperationTemplates, theirs.AllowedOperationTemplates)
	out.Policy.RequiredCapabilities = list(original.Policy.RequiredCapabilities, mine.Policy.RequiredCapabilities, theirs.Policy.RequiredCapabilities)
	return out, clashes
}
