package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// eventsView is the live tail of agent events: heartbeats, condition
// transitions, audit and overflow events, newest on top (a liveList). False
// conditions and buffer overflows stand out.
type eventsView struct {
	*liveList[registry.Event]
	fl eventFilter
}

const (
	eventsKeep    = 5000
	eventsPage    = 500
	eventsPending = 1000
)

type eventFilter struct {
	feedFilter
	kinds     []string
	falseOnly bool
}

func parseEventFilter(f *fleet, s string) eventFilter {
	var out eventFilter
	out.parse(f, s, false, func(k, v string) bool {
		switch k {
		case "kind", "k":
			for _, kind := range []string{registry.EventClusterHeartbeat, registry.EventConditionTransition, registry.EventAudit, registry.EventBufferOverflow} {
				if strings.Contains(strings.ToLower(kind), strings.ToLower(v)) {
					out.kinds = append(out.kinds, kind)
				}
			}
			if len(out.kinds) == 0 {
				out.kinds = []string{v} // agents may send other kinds
			}
		case "status", "s":
			if strings.EqualFold(v, "false") {
				out.falseOnly = true
			} else {
				out.err = "status:" + v + ": only status:False filters (events with a False condition)"
			}
		default:
			return false
		}
		return true
	})
	return out
}

func (f *eventFilter) match(fl *fleet, e *registry.Event) bool {
	if !f.matchCluster(e.ClusterID) {
		return false
	}
	if len(f.kinds) > 0 && !slices.Contains(f.kinds, e.Kind) {
		return false
	}
	if f.falseOnly && !e.HasFalseCondition() {
		return false
	}
	if !f.text.empty() {
		hay := filterText(fl.clusterName(e.ClusterID), e.Kind, e.EventKey, resourceText(e.ResourceRef), e.Message, conditionsText(e.Conditions))
		if !f.text.match(hay) {
			return false
		}
	}
	return true
}

func newEventsView(ctx *Context) *eventsView {
	v := &eventsView{}
	v.liveList = newLiveList(ctx, []column{
		{Title: "TIME", Width: 9, Min: 9, Fit: true, Max: 12},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Fit: true, Domain: fleetNames(ctx)},
		{Title: "KIND", Width: 19, Min: 10},
		{Title: "RESOURCE", Width: 24, Min: 10, Flex: 1, Drop: 2, Fit: true, Path: true},
		{Title: "DETAIL", Width: 30, Min: 16, Flex: 3},
	}, listSpec[registry.Event]{
		title: "Events", live: "following", noun: "event", nouns: "events", what: "events",
		loading: "loading events…", empty: "no events yet: agents send heartbeats about once a minute",
		page: eventsPage, keep: eventsKeep, pendingMax: eventsPending,
		id:    func(e *registry.Event) int64 { return e.ID },
		match: func(e *registry.Event) bool { return v.fl.match(ctx.Fleet, e) },
		query: func() func(context.Context, int64, int64, int) ([]registry.Event, error) {
			return admin.Events(ctx.Backend, registry.EventListParams{ClusterID: v.fl.cluster, Kinds: v.fl.kinds, FalseOnly: v.fl.falseOnly}).Page
		},
		open: func(e *registry.Event) tea.Cmd { return ctx.showModal(newEventModal(ctx, e)) },
		sortBy: []func(a, b *registry.Event) int{
			func(a, b *registry.Event) int { return cmp.Compare(a.ID, b.ID) },
			byText(func(e *registry.Event) string { return ctx.Fleet.clusterName(e.ClusterID) }),
			byText(func(e *registry.Event) string { return e.Kind }),
			byText(eventResource),
			byText(func(e *registry.Event) string { return eventDetail(e).text() }),
		},
	})
	return v
}

func (v *eventsView) Update(msg tea.Msg) tea.Cmd {
	if msg, ok := msg.(feedMsg); ok {
		if gone := msg.batch.Deleted; len(gone) > 0 {
			v.remove(func(e *registry.Event) bool { return slices.Contains(gone, e.ClusterID) })
		}
		return v.feed(msg.batch.Events, msg.batch.DroppedEvents)
	}
	return v.liveList.Update(msg)
}

func (v *eventsView) rowKey(i int) string {
	return fmt.Sprint(v.rows[i].ID, "|", v.ctx.Fleet.version)
}

func (v *eventsView) rowCells(i int) []cell {
	e := v.rows[i]
	kind := themes.Plain
	switch {
	case e.Kind == registry.EventBufferOverflow:
		kind = themes.Warning
	case e.HasFalseCondition():
		kind = themes.Danger
	case e.Kind == registry.EventClusterHeartbeat:
		kind = themes.Muted
	}
	k := txt(e.Kind, kind)
	if e.Kind == registry.EventBufferOverflow {
		k = txt("⚠ "+e.Kind, themes.Warning)
	}
	return []cell{
		txt(eventTime(v.ctx.Now, e.ReceivedAt), themes.Muted),
		txt(v.ctx.Fleet.clusterName(e.ClusterID), themes.Plain),
		k,
		txt(eventResource(e), themes.Plain),
		eventDetail(e),
	}
}

// eventTime is when an event came, in UTC, said so (Z): the time of day
// when it came the same UTC day as now, else the day and minute too. The
// tail holds 5,000 events, days of them on a quiet fleet: "17:08:48" read
// as today's heartbeat when it was yesterday's, and as local time at 3 a.m.
func eventTime(now, t time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05Z")
	}
	return t.Format("01-02 15:04Z")
}

// eventResource is what an event is about; a heartbeat names its own
// cluster, which the cluster column already shows.
func eventResource(e *registry.Event) string {
	if e.ResourceRef.Kind == "Cluster" && e.ResourceRef.Name == e.ClusterID {
		return "Cluster (itself)"
	}
	return resourceText(e.ResourceRef)
}

func resourceText(r registry.ResourceRef) string {
	var parts []string
	for _, p := range []string{r.Kind, r.Namespace, r.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return display.Safe(strings.Join(parts, "/"))
}

func conditionsText(conds []registry.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, c.Type+"="+c.Status)
	}
	return strings.Join(parts, " ")
}

// eventDetail is an event's conditions (False ones highlighted) and message.
func eventDetail(e *registry.Event) cell {
	var out cell
	for _, c := range e.Conditions {
		k := themes.Good
		if c.Status == "False" {
			k = themes.Danger
		} else if c.Status != "True" {
			k = themes.Warning
		}
		s := c.Type + "=" + c.Status
		if c.Status == "False" && c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		out = append(out, seg{display.Safe(s) + " ", k}) // the agent's text
	}
	if e.Message != "" {
		k := themes.Plain
		if e.Kind == registry.EventBufferOverflow {
			k = themes.Warning
		}
		out = append(out, seg{display.Safe(e.Message), k})
	}
	if len(out) == 0 {
		out = txt("-", themes.Muted)
	}
	return out
}

// eventSummary is one line about an event, for the cluster detail.
func eventSummary(e *registry.Event) cell {
	kind := themes.Plain
	if e.Kind == registry.EventBufferOverflow {
		kind = themes.Warning
	}
	out := cell{{pad(display.Safe(e.Kind), 20), kind}} // the agent's text
	if r := resourceText(e.ResourceRef); r != "" && e.Kind != registry.EventClusterHeartbeat {
		out = append(out, seg{r + " ", themes.Muted})
	}
	return append(out, eventDetail(e)...)
}

func (v *eventsView) View() string { return v.liveList.View(v) }

func (v *eventsView) SetFilter(s string) tea.Cmd {
	if s == v.filter {
		return nil
	}
	old := v.fl
	v.fl = parseEventFilter(v.ctx.Fleet, s)
	same := old.cluster == v.fl.cluster && slices.Equal(old.kinds, v.fl.kinds) && old.falseOnly == v.fl.falseOnly
	return v.setFilter(s, v.fl.err, !same)
}

func (v *eventsView) FilterHelp() string {
	return "cluster:NAME kind:KIND status:False; words match every column, " + textFilterHelp
}

func (v *eventsView) Actions() []key.Binding { return nil }

func (v *eventsView) KeyMap() help.KeyMap { return v.keyMap() }

// safeLines makes each line of a document (an agent's JSON, kept as it
// sent it) safe for the terminal, keeping its line breaks: JSON escapes
// C0 controls but lets DEL, C1 controls (CSI) and bidi overrides through
// as they are.
func safeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = display.Safe(l)
	}
	return strings.Join(lines, "\n")
}

// docModal shows a document (an event as the agent sent it, an audit entry),
// scrollable.
type docModal struct {
	ctx   *Context
	title string
	body  string
	pager pager
	// link opens what the document names (an audit entry's target), with
	// enter; linkName says what, in the hints.
	link     func() tea.Cmd
	linkName string
}

func newDocModal(ctx *Context, title, body string) *docModal {
	return &docModal{ctx: ctx, title: title, body: strings.TrimSuffix(body, "\n"), pager: newPager()}
}

func newEventModal(ctx *Context, e *registry.Event) *docModal {
	st := ctx.Styles
	var b strings.Builder
	field := func(label, value string) { // values are data, some the agent's
		b.WriteString(st.Render(themes.Muted, pad(label, 11)) + st.Render(themes.Plain, display.Safe(value)) + "\n")
	}
	field("cluster", ctx.Fleet.clusterName(e.ClusterID)+" ("+e.ClusterID+")")
	field("received", stamp(e.ReceivedAt))
	if !e.Timestamp.IsZero() {
		field("agent time", stamp(e.Timestamp))
	}
	if e.EventKey != "" {
		field("event key", e.EventKey)
	}
	body := prettyJSON(e.Body)
	if len(e.Body) == 0 {
		body = "(no body kept)"
	}
	b.WriteString("\n" + safeLines(body))
	return newDocModal(ctx, fmt.Sprintf("Event %d: %s", e.ID, display.Safe(e.Kind)), b.String())
}

func (m *docModal) Update(msg tea.Msg) (modal, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if key.Matches(msg, m.ctx.Keys.Enter) && m.link != nil {
			return nil, m.link()
		}
		if key.Matches(msg, keyClose) || key.Matches(msg, m.ctx.Keys.Enter) {
			return nil, nil
		}
		m.pager.navigate(msg, m.ctx.Keys)
	case tea.MouseWheelMsg:
		m.pager.wheel(msg)
	}
	return m, nil
}

func (m *docModal) View() string {
	width := min(m.ctx.Width-2, 100)
	lines := strings.Count(m.body, "\n") + 1
	m.pager.setSize(width-4, min(lines, max(3, m.ctx.Height-10)))
	m.pager.setContent(m.body)
	h := hints(m.ctx, "↑/↓", "scroll", "esc", "close")
	if m.link != nil {
		h = hints(m.ctx, "enter", "open "+m.linkName, "↑/↓", "scroll", "esc", "close")
	}
	return frame(m.ctx, m.title, m.pager.view()+"\n\n"+h, width, false)
}

func (m *docModal) KeyMap() help.KeyMap {
	return keyMap{short: []key.Binding{keyClose}, full: [][]key.Binding{{keyClose}}}
}
