package tui

import (
	"fmt"
	"strings"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// The overview's QUEUES block: the clusters whose queues have anything to
// say, a not-draining one first and highlighted; the first is selected (▸)
// until [ or ] moves the selection (overview_items.go), Enter opens it.

// queueList is what the block lists, in its order.
func (o *overview) queueList() []*registry.Cluster {
	list := o.ctx.Fleet.busyQueues()
	if len(list) > overviewQueueRows {
		list = list[:overviewQueueRows]
	}
	return list
}

func (o *overview) queuesBlock() string {
	st := o.ctx.Styles
	f := o.ctx.Fleet
	head := st.Section.Render("QUEUES")
	switch {
	case f.queuesErr != nil && !f.queuesLoaded:
		return head + "\n" + st.Render(themes.Danger, "  could not read: "+errText(f.queuesErr))
	case !f.queuesLoaded || !f.loaded:
		return head + "\n" + st.Render(themes.Muted, "  loading…")
	}
	all := f.busyQueues()
	if n := f.notDrainingCount(); n > 0 {
		head += st.Render(themes.Danger, "  "+thousands(int64(n))+" not draining")
	}
	if len(all) == 0 {
		return head + "\n" + st.Render(themes.Good, "  all idle: no job queued, in flight or finished in 1h")
	}
	head += st.Render(themes.Muted, "  enter opens ▸, [ ] select")
	lines := []string{head,
		st.Render(themes.Muted, "  "+pad("CLUSTER", o.nameWidth())+padLeft("OLDEST", 7)+padLeft("QUEUED", 8)+padLeft("FLIGHT", 7)+padLeft("WAIT p50", 9)+padLeft("FAIL 1h", 8))}
	for _, c := range o.queueList() {
		q := f.queue(c.ID)
		mark := o.mark("queue:" + c.ID)
		// Not draining is the alarm (red, ⚠); a queue that is not
		// expected to drain (paused, silent, disabled cluster) is amber,
		// and a paused one says so (⏸), as the clusters list does.
		name, oldestKind := themes.Plain, themes.Plain
		oldest := oldestText(q)
		switch h := c.Health(o.ctx.Now, q); {
		case h == registry.HealthNotDraining:
			name, oldestKind, oldest = themes.Danger, themes.Danger, "⚠ "+oldest
		case c.Paused():
			name, oldestKind, oldest = themes.Warning, themes.Warning, "⏸ "+oldest
		case q.Queued > 0 && h.Stranded():
			name, oldestKind = themes.Warning, themes.Warning
		}
		fk := themes.Plain
		if _, known := q.FailureRate(); known {
			fk = failKind(q)
		}
		lines = append(lines, mark+st.Render(name, pad(c.Name, o.nameWidth()))+st.Render(oldestKind, padLeft(oldest, 7))+
			st.Render(themes.Plain, padLeft(thousands(q.Queued), 8)+padLeft(thousands(q.InFlight), 7)+padLeft(waitText(q), 9))+
			st.Render(fk, padLeft(failText(q), 8)))
	}
	if len(all) > overviewQueueRows {
		lines = append(lines, st.Render(themes.Muted, fmt.Sprintf("  … and %d more (2: clusters)", len(all)-overviewQueueRows)))
	}
	return strings.Join(lines, "\n")
}
