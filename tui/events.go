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

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// eventsView is the live tail of agent events: heartbeats, condition
// transitions, audit and overflow events, newest on top. Following, new
// events appear as they come; paused, they wait in a bounded buffer (and
// what does not fit is dropped and counted). False conditions and buffer
// overflows stand out.
type eventsView struct {
	ctx     *Context
	table   *table
	all     []registry.Event // newest first, at most eventsKeep
	rows    []*registry.Event
	filter  string
	fl      eventFilter
	follow  bool
	pending []registry.Event // arrived while paused, oldest first
	dropped int
	// refill is set while a read from the store fills in what the live
	// buffer dropped: once it lands, nothing is missing any more.
	refill bool
	gen    int
	loaded bool
	older  bool // loading older events
	oldest bool // no older events exist
	err    error
	width  int
}

const (
	eventsKeep    = 5000
	eventsPage    = 500
	eventsPending = 1000
)

type eventFilter struct {
	cluster   string // id
	kinds     []string
	falseOnly bool
	text      textQuery
	err       string
}

func parseEventFilter(f *fleet, s string) eventFilter {
	var out eventFilter
	var words []string
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, ":")
		switch {
		case ok && (k == "cluster" || k == "c"):
			found := f.resolve(v)
			switch len(found) {
			case 0:
				out.err = "no cluster matches " + v
			case 1:
				out.cluster = found[0].ID
			default:
				out.err = "cluster:" + v + " matches several clusters; type more of the name"
			}
		case ok && (k == "kind" || k == "k"):
			for _, kind := range []string{registry.EventClusterHeartbeat, registry.EventConditionTransition, registry.EventAudit, registry.EventBufferOverflow} {
				if strings.Contains(strings.ToLower(kind), strings.ToLower(v)) {
					out.kinds = append(out.kinds, kind)
				}
			}
			if len(out.kinds) == 0 {
				out.kinds = []string{v} // agents may send other kinds
			}
		case ok && (k == "status" || k == "s"):
			if strings.EqualFold(v, "false") {
				out.falseOnly = true
			} else {
				out.err = "status:" + v + ": only status:False filters (events with a False condition)"
			}
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

func (f *eventFilter) match(fl *fleet, e *registry.Event) bool {
	if f.cluster != "" && e.ClusterID != f.cluster {
		return false
	}
	if len(f.kinds) > 0 && !slices.Contains(f.kinds, e.Kind) {
		return false
	}
	if f.falseOnly && !e.HasFalseCondition() {
		return false
	}
	if !f.text.empty() {
		hay := fl.clusterName(e.ClusterID) + " " + e.Kind + " " + e.EventKey + " " + resourceText(e.ResourceRef) + " " + e.Message + " " + conditionsText(e.Conditions)
		if !f.text.match(hay) {
			return false
		}
	}
	return true
}

type eventsMsg struct {
	gen    int
	older  bool
	events []registry.Event
	err    error
}

var keyOlder = key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "load older"))

func newEventsView(ctx *Context) *eventsView {
	v := &eventsView{ctx: ctx, follow: true}
	v.table = ctx.table([]column{
		{Title: "TIME", Width: 8},
		{Title: "CLUSTER", Width: 14, Min: 8, Flex: 1, Fit: true},
		{Title: "KIND", Width: 19, Min: 10},
		{Title: "RESOURCE", Width: 24, Min: 10, Flex: 1, Drop: 2, Fit: true},
		{Title: "DETAIL", Width: 30, Min: 16, Flex: 3},
	})
	return v
}

func (v *eventsView) Title() string { return "Events" }

func (v *eventsView) SetSize(w, h int) {
	v.width = w
	v.table.setSize(w, h-1)
}

func (v *eventsView) params() registry.EventListParams {
	p := registry.EventListParams{ClusterID: v.fl.cluster, Kinds: v.fl.kinds, FalseOnly: v.fl.falseOnly, Limit: eventsPage}
	return p
}

// Init reads the latest events.
func (v *eventsView) Init() tea.Cmd { return v.load(false) }

func (v *eventsView) load(older bool) tea.Cmd {
	p := v.params()
	if older {
		if len(v.all) == 0 {
			return nil
		}
		v.older = true
		p.BeforeID = v.all[len(v.all)-1].ID
	}
	gen, b := v.gen, v.ctx.Backend
	return func() tea.Msg {
		list, err := b.ListEvents(context.Background(), p)
		return eventsMsg{gen: gen, older: older, events: list, err: err}
	}
}

func (v *eventsView) rowID(i int) int64 { return v.rows[i].ID }

// anchor is the selected event. Take it before v.all changes: the rows
// point into it.
func (v *eventsView) anchor() anchor[int64] { return anchorAt(v.table, len(v.rows), v.rowID) }

func (v *eventsView) rebuild() { v.refilter(v.anchor()) }

// refilter rebuilds the rows from v.all, the selection on sel's event.
func (v *eventsView) refilter(sel anchor[int64]) {
	v.rows = v.rows[:0]
	for i := range v.all {
		if v.fl.match(v.ctx.Fleet, &v.all[i]) {
			v.rows = append(v.rows, &v.all[i])
		}
	}
	if v.follow && v.table.cursor == 0 {
		// Following the tail at the top: the newest event is the selection.
		v.table.clampTo(len(v.rows))
		return
	}
	sel.restore(v.table, len(v.rows), v.rowID)
}

// prepend adds new events (oldest first) on top.
func (v *eventsView) prepend(list []registry.Event) {
	if len(list) == 0 {
		return
	}
	fresh := make([]registry.Event, 0, len(list)+len(v.all))
	for i := len(list) - 1; i >= 0; i-- {
		fresh = append(fresh, list[i])
	}
	fresh = append(fresh, v.all...)
	if len(fresh) > eventsKeep {
		fresh = fresh[:eventsKeep]
		v.oldest = false
	}
	v.all = fresh
	v.rebuild()
}

func (v *eventsView) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case eventsMsg:
		if msg.gen != v.gen {
			return nil
		}
		v.err = msg.err
		if msg.err != nil {
			v.older = false
			return failed("could not read events: " + errText(msg.err))
		}
		sel := v.anchor()
		if msg.older {
			v.older = false
			v.oldest = len(msg.events) < eventsPage
			v.all = append(v.all, msg.events...)
		} else {
			v.loaded = true
			if v.refill {
				v.refill, v.dropped = false, 0
			}
			v.oldest = len(msg.events) < eventsPage
			// Live events that arrived while this read was in flight are
			// already on top; keep them and add what is older.
			seen := map[int64]bool{}
			for _, e := range v.all {
				seen[e.ID] = true
			}
			for _, e := range msg.events {
				if !seen[e.ID] {
					v.all = append(v.all, e)
				}
			}
			slices.SortFunc(v.all, func(a, b registry.Event) int { return cmp.Compare(b.ID, a.ID) })
		}
		v.refilter(sel)
		return v.searchOlder()
	case feedMsg:
		v.dropped += msg.batch.DroppedEvents
		if msg.batch.DroppedEvents > 0 && v.follow {
			return tea.Batch(v.applyFeed(msg), v.reload())
		}
		return v.applyFeed(msg)
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
		k := v.ctx.Keys
		if v.table.navigate(msg, k, len(v.rows)) {
			return v.maybeOlder()
		}
		switch {
		case key.Matches(msg, k.Follow):
			v.follow = !v.follow
			if v.follow {
				v.prepend(v.pending)
				v.pending = nil
				v.table.setCursor(0, len(v.rows))
				if v.dropped > 0 {
					// What did not fit while paused is in the store.
					return tea.Batch(info("following: reading the events the pause dropped from the store"), v.reload())
				}
				return info("following: new events appear on top")
			}
			return info("paused: new events wait (f resumes)")
		case isSortKey(msg, k):
			return info(tailOrder("the events tail is"))
		case key.Matches(msg, keyOlder):
			if !v.oldest && !v.older {
				return v.load(true)
			}
		case key.Matches(msg, k.Enter):
			return v.open()
		}
	}
	return nil
}

// applyFeed takes the live feed's events: on top while following, into the
// bounded pending buffer while paused (what does not fit is counted, and
// read from the store on resume).
func (v *eventsView) applyFeed(msg feedMsg) tea.Cmd {
	if len(msg.batch.Deleted) > 0 {
		sel := v.anchor()
		v.all = slices.DeleteFunc(v.all, func(e registry.Event) bool { return slices.Contains(msg.batch.Deleted, e.ClusterID) })
		v.refilter(sel)
	}
	if len(msg.batch.Events) == 0 {
		return nil
	}
	if v.follow {
		v.prepend(msg.batch.Events)
		return nil
	}
	for _, e := range msg.batch.Events {
		if len(v.pending) >= eventsPending {
			v.dropped++
			continue
		}
		v.pending = append(v.pending, e)
	}
	return nil
}

// reload reads the newest page from the store again and merges it with
// what is held (by id): the events a full buffer dropped come back.
func (v *eventsView) reload() tea.Cmd {
	if v.refill {
		return nil // one is on its way
	}
	v.refill = true
	return v.load(false)
}

// searchOlder keeps reading older pages while a text filter matches less
// than a screenful of what is held and the store has more (up to
// eventsKeep): the filter searches the store, not only the newest page.
func (v *eventsView) searchOlder() tea.Cmd {
	if v.fl.text.empty() || len(v.rows) >= v.table.height || v.oldest || v.older || !v.loaded || len(v.all) >= eventsKeep {
		return nil
	}
	return v.load(true)
}

// maybeOlder loads older events when the cursor reaches the end.
func (v *eventsView) maybeOlder() tea.Cmd {
	if v.table.cursor >= len(v.rows)-1 && !v.oldest && !v.older && v.loaded && len(v.all) < eventsKeep {
		return v.load(true)
	}
	return nil
}

func (v *eventsView) open() tea.Cmd {
	if v.table.cursor >= len(v.rows) {
		return nil
	}
	e := v.rows[v.table.cursor]
	return v.ctx.showModal(newEventModal(v.ctx, e))
}

func (v *eventsView) rowCount() int   { return len(v.rows) }
func (v *eventsView) marked(int) bool { return false }
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
		txt(clock(e.ReceivedAt), themes.Muted),
		txt(v.ctx.Fleet.clusterName(e.ClusterID), themes.Plain),
		k,
		txt(eventResource(e), themes.Plain),
		eventDetail(e),
	}
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
	out := cell{{pad(e.Kind, 20), kind}}
	if r := resourceText(e.ResourceRef); r != "" && e.Kind != registry.EventClusterHeartbeat {
		out = append(out, seg{r + " ", themes.Muted})
	}
	return append(out, eventDetail(e)...)
}

func (v *eventsView) View() string {
	st := v.ctx.Styles
	title := st.Title.Render("Events")
	if v.follow {
		title += st.Render(themes.Good, "  ● following")
	} else {
		title += st.Render(themes.Warning, fmt.Sprintf("  ❚❚ paused, %d new (f resumes)", len(v.pending)))
	}
	if v.dropped > 0 {
		title += st.Render(themes.Danger, fmt.Sprintf("  ⚠ %s dropped (the live buffer was full)", thousands(int64(v.dropped))))
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
	empty := "loading events…"
	switch {
	case v.err != nil:
		empty = "could not read events: " + errText(v.err)
	case v.loaded && v.filter != "" && (v.older || (!v.oldest && len(v.all) < eventsKeep)):
		empty = "searching older events for /" + v.filter + "…"
	case v.loaded && v.filter != "" && !v.oldest:
		empty = fmt.Sprintf("no event matches /%s among the newest %s (esc clears the filter)", v.filter, thousands(int64(len(v.all))))
	case v.loaded && v.filter != "":
		empty = "no event matches /" + v.filter + " (esc clears the filter)"
	case v.loaded:
		empty = "no events yet: agents send heartbeats about once a minute"
	}
	return pad(title, v.width) + "\n" + v.table.view(v, empty)
}

func (v *eventsView) Filter() string { return v.filter }

func (v *eventsView) SetFilter(s string) tea.Cmd {
	if s == v.filter {
		return nil
	}
	old := v.fl
	v.filter = s
	v.fl = parseEventFilter(v.ctx.Fleet, s)
	if old.cluster == v.fl.cluster && slices.Equal(old.kinds, v.fl.kinds) && old.falseOnly == v.fl.falseOnly {
		v.rebuild() // only the text changed: filter what is held, and read older pages for more
		return v.searchOlder()
	}
	v.gen++
	v.all, v.rows, v.loaded, v.older, v.oldest = nil, nil, false, false, false
	v.table.setCursor(0, 1)
	return v.load(false)
}

func (v *eventsView) FilterErr() string { return v.fl.err }

func (v *eventsView) FilterHelp() string {
	return "cluster:NAME kind:KIND status:False; words match every column, " + textFilterHelp
}

func (v *eventsView) Actions() []key.Binding { return nil }

func (v *eventsView) KeyMap() help.KeyMap {
	k := v.ctx.Keys
	return keyMap{
		short: []key.Binding{k.Follow, k.Enter, k.Filter, keyOlder, k.Command, k.Help, k.Quit},
		full: [][]key.Binding{
			{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown},
			{k.Follow, k.Enter, k.Filter, keyOlder},
		},
	}
}

// docModal shows a document (an event as the agent sent it, an audit entry),
// scrollable.
type docModal struct {
	ctx   *Context
	title string
	body  string
	pager pager
}

func newDocModal(ctx *Context, title, body string) *docModal {
	return &docModal{ctx: ctx, title: title, body: strings.TrimSuffix(body, "\n"), pager: newPager()}
}

func newEventModal(ctx *Context, e *registry.Event) *docModal {
	st := ctx.Styles
	var b strings.Builder
	field := func(label, value string) {
		b.WriteString(st.Render(themes.Muted, pad(label, 11)) + st.Render(themes.Plain, value) + "\n")
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
	b.WriteString("\n" + body)
	return newDocModal(ctx, fmt.Sprintf("Event %d: %s", e.ID, e.Kind), b.String())
}

func (m *docModal) Update(msg tea.Msg) (modal, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
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
	return frame(m.ctx, m.title, m.pager.view()+"\n\n"+hints(m.ctx, "↑/↓", "scroll", "esc", "close"), width, false)
}

func (m *docModal) KeyMap() help.KeyMap {
	return keyMap{short: []key.Binding{keyClose}, full: [][]key.Binding{{keyClose}}}
}
