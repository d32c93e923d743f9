package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/themes"
)

// liveList is a live list of records read from the store newest first, page
// by page, and kept up to date by the change feed: the events tail and the
// audit trail. It owns what such a list does whatever its rows are: the
// selection follows its record (by id), never its row number; f pauses the
// feed, and what arrives meanwhile waits in a bounded buffer, counted ("N
// new") with what did not fit ("dropped"); after an overflow or a pause
// that dropped records it reads every record since the last one it has
// before the drop back from the store (by id), so nothing stays missing,
// not even in the middle of a burst; older pages load as the cursor reaches the end, and
// a text filter reads older pages too (it searches the store, not only what
// is loaded); it holds at most keep records and renders only the rows on
// screen (table). A view keeps its own: the record type, its columns and
// cells, its query and its filter.
type liveList[T any] struct {
	ctx   *Context
	table *table
	spec  listSpec[T]

	all  []T  // newest first (by id), at most spec.keep
	rows []*T // the records the filter lets through, in all's order
	liveFollow
	pending []T // arrived while paused, oldest first (waiting counts them)
	// gap is set while records newer than gapAfter may be missing: a full
	// buffer dropped them (the feed's and the pause's drop the newest, so
	// everything up to gapAfter is held). drops counts the drops, so that a
	// refill that started before a later one does not clear it.
	gap      bool
	gapAfter int64
	drops    int
	// refill is set while a read from the store fills in the gap: once it
	// lands, nothing is missing any more.
	refill bool
	gen    int // bumped whenever the query changes
	loaded bool
	older  bool // loading older records
	oldest bool // no older records exist
	err    error
	width  int
	// sortCol and desc order the rows (s, <, S); the time column newest
	// first, as read, at first.
	sortCol int
	desc    bool
	// filter is the view's filter as typed, and what is wrong with it; the
	// view parses it (match and query follow it).
	filter    string
	filterErr string
	// shown changes whenever rows do: a stamp for what is derived from
	// them (the audit's actors).
	shown int
}

// liveFollow is whether a live list follows the feed, how many changes
// arrived while it was paused, and how many the live buffer dropped: what
// the jobs view shares with the tails (f pauses every live list).
type liveFollow struct {
	follow  bool
	waiting int
	dropped int
}

// followTitle is the title's part: following (the live mark, when there is
// one), or paused with the count waiting ("N new", "N changed"), and the
// drops.
func (f *liveFollow) followTitle(st *themes.Styles, live, waiting string) string {
	var s string
	switch {
	case !f.follow:
		s = st.Render(themes.Warning, fmt.Sprintf("  ❚❚ paused, %d %s (f resumes)", f.waiting, waiting))
	case live == offlineMark:
		s = st.Render(themes.Danger, "  "+live)
	case live != "":
		s = st.Render(themes.Good, "  ● "+live)
	}
	if f.dropped > 0 {
		s += st.Render(themes.Danger, fmt.Sprintf("  ⚠ %s dropped (the live buffer was full)", thousands(int64(f.dropped))))
	}
	return s
}

// offlineMark replaces a view's live mark while the live feed is down: what
// it shows may be out of date.
const offlineMark = "○ offline, not updating"

// liveMark is a view's live mark ("live", "following"), or offlineMark.
func liveMark(ctx *Context, live string) string {
	if ctx.Offline && live != "" {
		return offlineMark
	}
	return live
}

// listSpec is what a view tells its live list.
type listSpec[T any] struct {
	title       string // the view's title
	live        string // the title's mark while following ("following")
	noun, nouns string // "event", "events"
	what        string // for errors: "could not read " + what
	loading     string // shown before the first page
	empty       string // shown when the store has none
	page        int    // records per read
	keep        int    // records held at most
	pendingMax  int    // records waiting while paused at most
	id          func(*T) int64
	// match is the filter's part that the store does not apply.
	match func(*T) bool
	// query is a reader of the records with the filter's part that the
	// store applies, as of the call: up to limit of them, newest first,
	// older than before and newer than after (0: no bound).
	query func() func(c context.Context, before, after int64, limit int) ([]T, error)
	// open shows a record (enter, a click on the selected row).
	open func(*T) tea.Cmd
	// sortBy compares two records by each column, smallest first; the
	// first column is the time (by id: the order the store reads them in).
	sortBy []func(a, b *T) int
}

// byText compares records by a text, whatever its case (ties keep the
// order read: the newest first).
func byText[T any](text func(*T) string) func(a, b *T) int {
	return func(a, b *T) int { return strings.Compare(strings.ToLower(text(a)), strings.ToLower(text(b))) }
}

// listMsg is a page read for a live list.
type listMsg[T any] struct {
	list  *liveList[T]
	gen   int
	older bool
	// refill: the records read back after a drop, seq the drops counted
	// when the read started.
	refill bool
	seq    int
	items  []T
	err    error
}

var keyOlder = key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "load older"))

func newLiveList[T any](ctx *Context, cols []column, spec listSpec[T]) *liveList[T] {
	l := &liveList[T]{ctx: ctx, table: ctx.table(cols), spec: spec, liveFollow: liveFollow{follow: true}, desc: true}
	l.table.setSort(0, true)
	l.table.letterSort = true
	return l
}

// asRead reports whether the rows are in the order read: the newest first.
func (l *liveList[T]) asRead() bool { return l.sortCol == 0 && l.desc }

// sortKey handles s, >, <, S and a column's shift+letter: the rows sorted by any column, the
// selection on its record.
func (l *liveList[T]) sortKey(msg tea.KeyPressMsg) tea.Cmd {
	k, n := l.ctx.Keys, len(l.spec.sortBy)
	letterCol, byLetter := columnSortKey(l.table, msg)
	switch {
	case byLetter && letterCol != l.sortCol: // shift+letter: that column, the time newest first
		l.sortCol, l.desc = letterCol, letterCol == 0
	case byLetter: // the same letter again reverses
		l.desc = !l.desc
	case key.Matches(msg, k.Sort):
		l.sortCol = (l.sortCol + 1) % n
		l.desc = l.sortCol == 0 // the time: the newest first
	case key.Matches(msg, k.SortPrev):
		l.sortCol = (l.sortCol + n - 1) % n
		l.desc = l.sortCol == 0
	default:
		l.desc = !l.desc
	}
	l.table.setSort(l.sortCol, l.desc)
	l.rebuild()
	col := strings.ToLower(l.table.cols[l.sortCol].Title)
	if l.asRead() {
		return info(l.spec.nouns + " newest first, as read (s sorts by another column)")
	}
	return info(fmt.Sprintf("%s sorted by %s (S reverses): the %s held; o loads older ones", l.spec.nouns, col, thousands(int64(len(l.all)))))
}

func (l *liveList[T]) Title() string { return l.spec.title }

func (l *liveList[T]) SetSize(w, h int) {
	l.width = w
	l.table.setSize(w, h-1)
}

// Init reads the newest page.
func (l *liveList[T]) Init() tea.Cmd { return l.load(false) }

// load reads the newest page, or the page older than what is held.
func (l *liveList[T]) load(older bool) tea.Cmd {
	var before int64
	if older {
		if len(l.all) == 0 {
			return nil
		}
		l.older = true
		before = l.spec.id(&l.all[len(l.all)-1])
	}
	read, gen, page := l.spec.query(), l.gen, l.spec.page
	return func() tea.Msg {
		items, err := read(context.Background(), before, 0, page)
		return listMsg[T]{list: l, gen: gen, older: older, items: items, err: err}
	}
}

// requery starts over after the store's part of the filter changed. A gap
// stays a gap: what the pause holds may be older than the newest page.
func (l *liveList[T]) requery() tea.Cmd {
	l.gen++
	l.all, l.rows, l.loaded, l.older, l.oldest, l.refill = nil, nil, false, false, false, false
	l.table.setCursor(0, 1)
	if l.gap && l.follow {
		return tea.Batch(l.load(false), l.reload())
	}
	return l.load(false)
}

// newestHeld is the id of the newest record held or waiting (0: none).
func (l *liveList[T]) newestHeld() int64 {
	var n int64
	if len(l.all) > 0 {
		n = l.spec.id(&l.all[0])
	}
	if k := len(l.pending); k > 0 {
		n = max(n, l.spec.id(&l.pending[k-1]))
	}
	return n
}

// dropNewer counts n records dropped, all newer than what is held or
// waiting: the gap starts there, or where an earlier one started.
func (l *liveList[T]) dropNewer(n int) {
	if n <= 0 {
		return
	}
	l.dropped += n
	l.drops++
	if !l.gap {
		l.gap, l.gapAfter = true, l.newestHeld()
	}
}

// reload reads every record of the gap back from the store, newest first
// and page by page (at most keep: older ones would be let go), and merges
// them with what is held (by id).
func (l *liveList[T]) reload() tea.Cmd {
	if l.refill || !l.gap {
		return nil // one is on its way, or nothing is missing
	}
	l.refill = true
	read, gen, seq, after, page, keep, id := l.spec.query(), l.gen, l.drops, l.gapAfter, l.spec.page, l.spec.keep, l.spec.id
	return func() tea.Msg {
		var items []T
		var before int64
		for len(items) < keep {
			limit := min(page, keep-len(items))
			got, err := read(context.Background(), before, after, limit)
			if err != nil {
				return listMsg[T]{list: l, gen: gen, refill: true, seq: seq, err: err}
			}
			items = append(items, got...)
			if len(got) < limit {
				break
			}
			before = id(&got[len(got)-1])
		}
		return listMsg[T]{list: l, gen: gen, refill: true, seq: seq, items: items}
	}
}

func (l *liveList[T]) rowID(i int) int64 { return l.spec.id(l.rows[i]) }

// anchor is the selected record. Take it before all changes: the rows
// point into it.
func (l *liveList[T]) anchor() anchor[int64] { return anchorAt(l.table, len(l.rows), l.rowID) }

// rebuild filters again (the filter's text changed), keeping the selection.
func (l *liveList[T]) rebuild() { l.refilter(l.anchor(), false) }

// refilter rebuilds the rows from all, sorted, the selection on sel's
// record; on top, when new records arrived while following with the cursor
// on the first row of the newest first, the newest is the selection (as
// tail -f).
func (l *liveList[T]) refilter(sel anchor[int64], arrived bool) {
	l.shown++
	l.rows = l.rows[:0]
	for i := range l.all {
		if l.spec.match(&l.all[i]) {
			l.rows = append(l.rows, &l.all[i])
		}
	}
	if !l.asRead() {
		by, desc := l.spec.sortBy[l.sortCol], l.desc
		slices.SortStableFunc(l.rows, func(a, b *T) int {
			if desc {
				return by(b, a)
			}
			return by(a, b)
		})
	}
	if arrived && l.follow && l.table.cursor == 0 && l.asRead() {
		l.table.clampTo(len(l.rows))
		return
	}
	sel.restore(l.table, len(l.rows), l.rowID)
}

// merge adds records to what is held: once each, newest first, the oldest
// past keep let go (they are in the store).
func (l *liveList[T]) merge(items []T, arrived bool) {
	if len(items) == 0 {
		return
	}
	sel := l.anchor()
	held := make(map[int64]bool, len(l.all))
	for i := range l.all {
		held[l.spec.id(&l.all[i])] = true
	}
	for _, it := range items {
		if id := l.spec.id(&it); !held[id] {
			held[id] = true
			l.all = append(l.all, it)
		}
	}
	newest := func(a, b T) int { return cmp.Compare(l.spec.id(&b), l.spec.id(&a)) }
	if !slices.IsSortedFunc(l.all, newest) {
		slices.SortStableFunc(l.all, newest)
	}
	if len(l.all) > l.spec.keep {
		l.all = l.all[:l.spec.keep:l.spec.keep]
		l.oldest = false
	}
	l.refilter(sel, arrived)
}

// remove lets go of the records gone from the store (a deleted cluster's).
func (l *liveList[T]) remove(gone func(*T) bool) {
	sel := l.anchor()
	l.all = slices.DeleteFunc(l.all, func(it T) bool { return gone(&it) })
	l.refilter(sel, false)
}

// feed takes the live feed's records (oldest first) and the count the feed
// dropped: on top while following, into the bounded pending buffer while
// paused (what does not fit is counted, and read from the store on
// resume). Records dropped while following are read back at once.
func (l *liveList[T]) feed(items []T, dropped int) tea.Cmd {
	if l.follow {
		l.merge(items, true)
		l.dropNewer(dropped) // the feed drops what came after items
		return l.reload()
	}
	for i, it := range items {
		if len(l.pending) >= l.spec.pendingMax {
			l.dropNewer(len(items) - i) // the rest of the burst
			break
		}
		l.pending = append(l.pending, it)
	}
	l.dropNewer(dropped)
	l.waiting = len(l.pending)
	return nil
}

// toggleFollow pauses the feed or resumes it: what waited goes on top,
// and what was dropped meanwhile is read from the store.
func (l *liveList[T]) toggleFollow() tea.Cmd {
	l.follow = !l.follow
	if !l.follow {
		return info("paused: new " + l.spec.nouns + " wait (f resumes)")
	}
	n := len(l.pending)
	l.merge(l.pending, false)
	l.pending, l.waiting = nil, 0
	l.table.setCursor(0, len(l.rows))
	if l.gap {
		return tea.Batch(info("following: reading the "+l.spec.nouns+" the pause dropped from the store"), l.reload())
	}
	if n > 0 {
		return info(fmt.Sprintf("following: %s new while paused, on top", plural(n, l.spec.noun, l.spec.nouns)))
	}
	return info("following: new " + l.spec.nouns + " appear on top")
}

// refilled takes the gap read back: nothing is missing any more, unless
// more was dropped while it was read (then that is read too).
func (l *liveList[T]) refilled(msg listMsg[T]) tea.Cmd {
	l.refill = false
	if msg.err != nil {
		return failed("could not read back the dropped " + l.spec.nouns + ": " + errText(msg.err) + " (f twice tries again)")
	}
	// What a refill reads back arrived (later than what the cursor is on):
	// following on top, the newest is selected, as for the live feed.
	l.merge(msg.items, true)
	if msg.seq != l.drops {
		return l.reload()
	}
	l.gap, l.gapAfter, l.dropped = false, 0, 0
	return nil
}

// searchOlder keeps reading older pages while a filter matches less than a
// screenful of what is held and the store has more (up to keep): the
// filter searches the store, not only the newest page.
func (l *liveList[T]) searchOlder() tea.Cmd {
	if l.filter == "" || len(l.rows) >= l.table.height || l.oldest || l.older || !l.loaded || len(l.all) >= l.spec.keep {
		return nil
	}
	return l.load(true)
}

// maybeOlder loads older records when the cursor reaches the end.
func (l *liveList[T]) maybeOlder() tea.Cmd {
	if l.table.cursor >= len(l.rows)-1 && !l.oldest && !l.older && l.loaded && len(l.all) < l.spec.keep {
		return l.load(true)
	}
	return nil
}

func (l *liveList[T]) open() tea.Cmd {
	if l.table.cursor >= len(l.rows) {
		return nil
	}
	return l.spec.open(l.rows[l.table.cursor])
}

// Update handles the list's own messages: its pages, the theme, the mouse
// and its keys. The view feeds it (feed) and filters it.
func (l *liveList[T]) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := moveInList(l.table, l.ctx.Keys, msg, len(l.rows), 1, l.open, l.maybeOlder); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case listMsg[T]:
		if msg.list != l || msg.gen != l.gen {
			return nil
		}
		if msg.refill {
			return l.refilled(msg)
		}
		l.err = msg.err
		if msg.err != nil {
			l.older = false
			return failed("could not read " + l.spec.what + ": " + errText(msg.err))
		}
		l.oldest = len(msg.items) < l.spec.page
		if msg.older {
			l.older = false
		} else {
			l.loaded = true
		}
		l.merge(msg.items, false)
		if len(msg.items) == 0 {
			l.refilter(l.anchor(), false) // the filter may have changed meanwhile
		}
		return l.searchOlder()
	case themeChangedMsg:
		l.table.setStyles(l.ctx.Styles)
	case tea.KeyPressMsg:
		k := l.ctx.Keys
		switch {
		case key.Matches(msg, k.Enter):
			return l.open()
		case key.Matches(msg, k.Follow):
			return l.toggleFollow()
		case key.Matches(msg, keyOlder):
			switch {
			case !l.loaded || l.older: // a read is on its way
			case l.oldest:
				return info(fmt.Sprintf("all %s %s are loaded: there are no older ones", thousands(int64(len(l.all))), l.spec.nouns))
			case len(l.all) >= l.spec.keep:
				return info(fmt.Sprintf("the console holds at most %s %s: a filter such as /cluster:NAME reads fewer, further back",
					thousands(int64(l.spec.keep)), l.spec.nouns))
			default:
				return l.load(true)
			}
		case isSortKey(msg, k), isColumnSortKey(l.table, msg):
			return l.sortKey(msg)
		}
	}
	return nil
}

func (l *liveList[T]) rowCount() int   { return len(l.rows) }
func (l *liveList[T]) marked(int) bool { return false }

// View renders the title line (following or paused, drops, the filter, the
// count) and the rows on screen of src (the view: its cells).
func (l *liveList[T]) View(src tableSource) string {
	st := l.ctx.Styles
	title := st.Title.Render(l.spec.title) + l.followTitle(st, liveMark(l.ctx, l.spec.live), "new")
	if l.filter != "" {
		title += st.Render(themes.Muted, "  /") + st.Render(themes.Accent, l.filter)
		if l.filterErr != "" {
			title += st.Render(themes.Danger, "  "+l.filterErr)
		}
	}
	title += st.Render(themes.Muted, fmt.Sprintf("  %d shown", len(l.rows)))
	if l.loaded && !l.older && !l.oldest && len(l.all) < l.spec.keep {
		// A full page read: the store has older records. Say so, rather
		// than let the count read as all there is.
		title += st.Render(themes.Muted, ", more in the store: o loads older")
	}
	if l.older {
		title += st.Render(themes.Muted, "  loading older…")
	}
	empty := l.spec.loading
	switch {
	case l.err != nil:
		empty = "could not read " + l.spec.what + ": " + errText(l.err)
	case l.loaded && l.filter != "" && (l.older || (!l.oldest && len(l.all) < l.spec.keep)):
		empty = "searching older " + l.spec.nouns + " for /" + l.filter + "…"
	case l.loaded && l.filter != "" && !l.oldest:
		empty = fmt.Sprintf("no %s matches /%s among the newest %s (esc clears the filter)", l.spec.noun, l.filter, thousands(int64(len(l.all))))
	case l.loaded && l.filter != "":
		empty = "no " + l.spec.noun + " matches /" + l.filter + " (esc clears the filter)"
	case l.loaded:
		empty = l.spec.empty
	}
	return pad(title, l.width) + "\n" + l.table.view(src, empty)
}

func (l *liveList[T]) Filter() string    { return l.filter }
func (l *liveList[T]) FilterErr() string { return l.filterErr }

// setFilter applies a filter the view parsed: requery when the store's part
// of it changed, else filter what is held (and search older pages).
func (l *liveList[T]) setFilter(s, problem string, storeChanged bool) tea.Cmd {
	l.filter, l.filterErr = s, problem
	if storeChanged {
		return l.requery()
	}
	l.rebuild()
	return l.searchOlder()
}

// keyMap is the help of a live list.
func (l *liveList[T]) keyMap() keyMap {
	k := l.ctx.Keys
	return keyMap{
		short: []key.Binding{k.Follow, k.Enter, k.Filter, keyOlder, k.Command, k.Help, k.Quit},
		full: append([][]key.Binding{
			{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown},
			{k.Follow, k.Enter, k.Filter, keyOlder},
			{k.Sort, k.SortPrev, k.SortReverse},
		}, l.table.helpGroups(k)...),
	}
}

// moveInList handles what moves a list's cursor over its n rows: the
// navigation keys, the wheel, and a click on a row (a click on the selected
// row opens it; top is the line of the table's header in the view). It
// reports whether msg was one; moved runs after the cursor moved.
func moveInList(t *table, k *Keys, msg tea.Msg, n, top int, open, moved func() tea.Cmd) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case tea.MouseClickMsg:
		i, ok := t.rowAt(msg.Y-top, n)
		if !ok {
			return nil, false
		}
		if i == t.cursor {
			return open(), true
		}
		t.setCursor(i, n)
	case tea.MouseWheelMsg:
		t.wheel(msg, n)
	case tea.KeyPressMsg:
		if !t.navigate(msg, k, n) {
			return nil, false
		}
	default:
		return nil, false
	}
	return moved(), true
}

// noCmd is a list's moved when moving the cursor needs nothing more.
func noCmd() tea.Cmd { return nil }
