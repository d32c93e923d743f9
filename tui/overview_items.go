package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// The overview's items: the rows that open something. One is selected (▸),
// the first at start, the most urgent queue; [ and ] move the selection in
// reading order across the blocks (the QUEUES rows, the silent clusters,
// the False conditions, the recent failures, the rollouts), scrolling it
// into sight, and Enter opens it: the cluster, the job or the rollout.

// overviewItem is a row that opens a record.
type overviewItem struct {
	key  string // the block and the record ("queue:cl-…"), what sel holds
	open func() tea.Cmd
}

// How many rows the blocks list (the rest are counted).
const (
	overviewSilentRows     = 6
	overviewConditionsRows = 5
)

// items lists the rows that open something, in reading order.
func (o *overview) items() []overviewItem {
	var out []overviewItem
	cluster := func(key, id string) overviewItem {
		return overviewItem{key: key, open: func() tea.Cmd { return o.ctx.open(newClusterDetail(o.ctx, id)) }}
	}
	for _, c := range o.queueList() {
		out = append(out, cluster("queue:"+c.ID, c.ID))
	}
	silent := o.silentList()
	for _, c := range silent[:min(len(silent), overviewSilentRows)] {
		out = append(out, cluster("silent:"+c.ID, c.ID))
	}
	conds, _ := o.conditionList()
	for _, fc := range conds {
		out = append(out, cluster(fc.key(), fc.cluster.ID))
	}
	for _, j := range o.failures {
		out = append(out, overviewItem{key: "job:" + j.ID, open: func() tea.Cmd { return o.ctx.open(newJobDetail(o.ctx, j.ID, &j)) }})
	}
	for _, ro := range o.rolloutList() {
		out = append(out, overviewItem{key: "rollout:" + ro.ID, open: func() tea.Cmd { return o.ctx.open(newRolloutDetail(o.ctx, ro.ID, ro.Name)) }})
	}
	return out
}

// selectedItem is the item chosen with [ and ] while it is listed, else
// the first.
func (o *overview) selectedItem() (overviewItem, bool) {
	items := o.items()
	if len(items) == 0 {
		return overviewItem{}, false
	}
	if i := slices.IndexFunc(items, func(it overviewItem) bool { return it.key == o.sel }); i >= 0 {
		return items[i], true
	}
	return items[0], true
}

func (o *overview) moveItem(by int) {
	items := o.items()
	if len(items) == 0 {
		return
	}
	cur, _ := o.selectedItem()
	i := slices.IndexFunc(items, func(it overviewItem) bool { return it.key == cur.key })
	o.sel = items[(i+by+len(items))%len(items)].key
	o.reveal = true
}

// mark starts an item's row: ▸ when it is the selected one.
func (o *overview) mark(key string) string {
	if key != "" && key == o.selKey {
		return o.ctx.Styles.Render(themes.Accent, "▸ ")
	}
	return "  "
}

// markedLine is the line of doc that holds the selection mark.
func markedLine(doc string) int {
	for i, l := range strings.Split(ansi.Strip(doc), "\n") {
		if strings.Contains(l, "▸ ") {
			return i
		}
	}
	return 0
}

// silentList is the silent clusters, in the fleet's order.
func (o *overview) silentList() []*registry.Cluster {
	var out []*registry.Cluster
	for _, c := range o.ctx.Fleet.sorted {
		if c.Silent(o.ctx.Now) {
			out = append(out, c)
		}
	}
	return out
}

// falseCondition is a False heartbeat condition of a cluster.
type falseCondition struct {
	cluster *registry.Cluster
	cond    registry.Condition
}

func (fc falseCondition) key() string { return "condition:" + fc.cluster.ID + "/" + fc.cond.Type }

// conditionList is the False conditions the block lists, and how many
// there are in all.
func (o *overview) conditionList() ([]falseCondition, int) {
	var out []falseCondition
	n := 0
	for _, c := range o.ctx.Fleet.sorted {
		for _, cond := range c.FalseConditions() {
			n++
			if len(out) < overviewConditionsRows {
				out = append(out, falseCondition{c, cond})
			}
		}
	}
	return out, n
}

// The blocks that list those rows.

// rolloutsBlock lists the rollouts that are not over, halted ones first.
func (o *overview) rolloutsBlock() string {
	st := o.ctx.Styles
	lines := []string{st.Render(themes.Accent, "Rollouts") + st.Render(themes.Muted, "  (:rollouts to steer them)")}
	for _, ro := range o.rolloutList() {
		lines = append(lines, truncate(o.mark("rollout:"+ro.ID)+fmt.Sprintf("%s  %s  %s  %s",
			st.Render(themes.Plain, pad(ro.Name, 20)), st.Render(rolloutStateKind(ro.State), pad(string(ro.State), 8)),
			st.Render(rolloutStateKind(ro.State), progressBar(&ro, 16)), st.Render(themes.Muted, ro.Summary())), o.width))
	}
	return strings.Join(lines, "\n")
}

// rolloutList is the rollouts that are not over, halted ones first.
func (o *overview) rolloutList() []registry.Rollout {
	list := slices.Clone(o.rollouts)
	slices.SortStableFunc(list, func(a, b registry.Rollout) int {
		return cmp.Compare(rolloutUrgency(a.State), rolloutUrgency(b.State))
	})
	return list
}

func rolloutUrgency(s registry.RolloutState) int {
	switch s {
	case registry.RolloutHalted:
		return 0
	case registry.RolloutPaused:
		return 1
	}
	return 2
}

func (o *overview) silentBlock() string {
	st := o.ctx.Styles
	f := o.ctx.Fleet
	now := o.ctx.Now
	silent := o.silentList()
	head := st.Section.Render("SILENT CLUSTERS") + st.Render(themes.Muted, fmt.Sprintf("  no heartbeat for %d intervals", registry.SilentAfterHeartbeats))
	if !f.loaded { // never "none" before the list says so
		return head + "\n" + st.Render(themes.Muted, "  loading…")
	}
	if len(silent) == 0 {
		return head + "\n" + st.Render(themes.Good, "  none: every active cluster is heartbeating")
	}
	lines := []string{head}
	var names []string
	for _, c := range silent[:min(len(silent), overviewSilentRows)] {
		names = append(names, c.Name)
	}
	nameW := o.namesWidth(names)
	for i, c := range silent {
		if i == overviewSilentRows {
			lines = append(lines, st.Render(themes.Muted, fmt.Sprintf("  … and %d more (2: clusters, sort by s)", len(silent)-overviewSilentRows)))
			break
		}
		lines = append(lines, o.mark("silent:"+c.ID)+st.Render(themes.Warning, pad(c.Name, nameW)+" ")+st.Render(themes.Plain, pad(ago(now, c.LastSeen()), 9))+
			st.Render(themes.Muted, fmt.Sprintf("%s queued · %s in flight", thousands(f.count(c.ID, registry.JobQueued)), thousands(f.count(c.ID, registry.JobInProgress)))))
	}
	return strings.Join(lines, "\n")
}

// conditionsBlock lists the False heartbeat conditions across the fleet.
func (o *overview) conditionsBlock() string {
	st := o.ctx.Styles
	now := o.ctx.Now
	var lines []string
	conds, n := o.conditionList()
	var names []string
	for _, fc := range conds {
		names = append(names, fc.cluster.Name)
	}
	nameW := o.namesWidth(names)
	for _, fc := range conds {
		c, cond := fc.cluster, fc.cond
		// How old it is goes before the agent's words, which are cut at
		// 80 columns: a silent cluster's condition is from its last
		// heartbeat, and says so rather than passing for current.
		since := ""
		if !cond.LastTransitionTime.IsZero() {
			since = st.Render(themes.Muted, " "+age(now, cond.LastTransitionTime))
		}
		if c.Silent(now) {
			since += st.Render(themes.Warning, " (silent "+ago(now, c.LastSeen())+")")
		}
		lines = append(lines, o.mark(fc.key())+st.Render(themes.Plain, pad(c.Name, nameW)+" ")+st.Render(themes.Danger, display.Safe(cond.Type)+"=False")+
			since+st.Render(themes.Muted, " "+display.Safe(strings.TrimSpace(cond.Reason+" "+cond.Message))))
	}
	head := st.Section.Render("FALSE CONDITIONS") + st.Render(themes.Muted, "  from the last heartbeats")
	if !o.ctx.Fleet.loaded {
		return head + "\n" + st.Render(themes.Muted, "  loading…")
	}
	if n == 0 {
		return head + "\n" + st.Render(themes.Good, "  none")
	}
	if n > len(lines) {
		lines = append(lines, st.Render(themes.Muted, fmt.Sprintf("  … and %d more", n-len(lines))))
	}
	return head + "\n" + strings.Join(lines, "\n")
}

// failuresBlock lists the latest failed jobs with their errors.
func (o *overview) failuresBlock() string {
	st := o.ctx.Styles
	now := o.ctx.Now
	head := st.Section.Render("RECENT FAILURES") + st.Render(themes.Muted, "  newest first")
	switch {
	case o.failErr != nil:
		return head + "\n" + st.Render(themes.Danger, "  could not read: "+errText(o.failErr))
	case !o.failLoaded:
		return head + "\n" + st.Render(themes.Muted, "  loading…")
	case len(o.failures) == 0:
		return head + "\n" + st.Render(themes.Good, "  none")
	}
	lines := []string{head}
	var names []string
	for _, j := range o.failures {
		names = append(names, o.ctx.Fleet.clusterName(j.ClusterID))
	}
	nameW := o.namesWidth(names)
	for _, j := range o.failures {
		msg := j.Error
		if msg == "" {
			msg = string(j.Outcome)
		}
		// The error is the agent's text: escaped, as in every other view.
		lines = append(lines, o.mark("job:"+j.ID)+st.Render(themes.Plain, pad(o.ctx.Fleet.clusterName(j.ClusterID), nameW))+st.Render(themes.Muted, padLeft(age(now, j.FinishedAt), 4)+"  ")+
			st.Render(themes.Plain, pad(display.Safe(j.Target.Name), 15)+" ")+st.Render(themes.Danger, display.Safe(msg)))
	}
	return strings.Join(lines, "\n")
}
