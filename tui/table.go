package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/themes"
)

// seg is a run of text of one kind; a cell is one or more segs.
type seg struct {
	text string
	kind themes.Kind
}

type cell []seg

// txt is a cell of one kind. Its text is made safe for the terminal
// (display.Safe): table cells show agents' text (messages, errors, condition
// reasons), which is data and must never act on the terminal.
func txt(s string, k themes.Kind) cell { return cell{{display.Safe(s), k}} }

// text is the cell's plain text.
func (c cell) text() string {
	var b strings.Builder
	for _, s := range c {
		b.WriteString(s.text)
	}
	return b.String()
}

func (c cell) width() int {
	w := 0
	for _, s := range c {
		w += ansi.StringWidth(s.text)
	}
	return w
}

// column describes a table column. Width is the preferred width; Flex
// columns share what is left; columns with a higher Drop are hidden first
// when the terminal is too narrow.
//
// A Fit column is as wide as its widest cell on screen (at most Max, when
// set) rather than Width; a column with Shrink gives up its width before the
// others when space is short (ids, before names and targets); a
// UniquePrefix column (ids) shrinks no further than its texts on screen stay
// distinct.
type column struct {
	Title        string
	Width        int
	Min          int
	Flex         int
	Right        bool
	Drop         int
	Fit          bool
	Max          int
	Shrink       bool
	UniquePrefix bool
	// Path columns show Kind/namespace/name: cut, the kind goes first
	// (…/namespace/name), then the end, so that the namespace and the name,
	// which tell the targets apart, stay.
	Path bool
	// Domain, for a Fit column, is every text the column shows across
	// the data the view holds, beyond the rows on screen (every cluster
	// name of the fleet, every actor of the audit entries held): a cut
	// keeps the texts on screen distinct from all of them, so that
	// "agent:pro…" never stands for any of three clusters. It returns
	// texts only when its stamp is not known (table_domain.go).
	Domain func(known int) (stamp int, texts []string)
	// Implied is a text the view already says (the jobs' STATE in the
	// in-progress tab, "in progress"): when every row on screen shows
	// it, the column gives up its room first, as an empty one does.
	Implied string
}

// tableSource is what a table shows: the rows currently loaded.
type tableSource interface {
	rowCount() int
	// rowKey identifies a row's rendering: the same key, the same line (the
	// key includes whatever time-dependent text the row shows).
	rowKey(i int) string
	rowCells(i int) []cell
	marked(i int) bool
}

// table renders only the rows that fit and caches each rendered line by its
// key, so that a frame after a keypress or a live update renders only what
// changed.
type table struct {
	cols   []column
	widths []int // computed per column; 0 = hidden
	width  int
	height int // rows, header excluded
	cursor int
	offset int
	styles *themes.Styles
	cache  map[string]string
	// natural and prefix are what the rows on screen need (table_fit.go):
	// the widest cell of each column, and the width that keeps a
	// UniquePrefix column's texts distinct. measured keeps each row's
	// cells by key, so that a frame measures only the rows it has not seen.
	natural []int
	prefix  []int
	// distinct is the narrowest a Fit column's texts on screen stay
	// distinct; headCut, when set, the width below which they are cut at
	// the head rather than the end. blank marks the columns whose cells on
	// screen are all empty or "-": they give up their room first.
	distinct []int
	headCut  []int
	blank    []bool
	// midCut marks the UniquePrefix columns whose ids on screen share a
	// long head (a timestamp): cut, they keep their tag and the tail that
	// tells them apart ("j-…k3f9"), not the shared head. domains caches
	// the columns' Domain texts, sorted (table_domain.go).
	midCut   []bool
	domains  []domainCache
	fitted   bool // natural and prefix describe rows on screen
	measured map[string]measuredRow
	noFocus  bool // the cursor is not shown (e.g. a paused tail)
	// marks reserves two cells before the first column for a row's mark.
	marks bool
	// wide points at the console's wide-layout toggle (w): every column at
	// its content's width, none hidden or shrunk, lines cut only at the
	// terminal's edge. laidWide is what the last layout assumed.
	wide     *bool
	laidWide bool
	// sortCol is the column whose header carries the sort arrow (-1:
	// none); sortDesc points it down.
	sortCol  int
	sortDesc bool
	// hscroll is how many columns after the first the wide layout scrolled
	// out of sight (table_scroll.go); tabKeys: ←/→ are the view's own.
	hscroll int
	tabKeys bool
	// letterSort: the view sorts its rows by a column's shift+letter
	// (sortkeys.go); the jobs, paged by age, do not.
	letterSort bool
}

func newTable(cols []column) *table {
	return &table{cols: cols, cache: map[string]string{}, measured: map[string]measuredRow{}, sortCol: -1}
}

// titleOf is column i's title as drawn: with the sort arrow when the rows
// are sorted by it.
func (t *table) titleOf(i int) string {
	if i != t.sortCol {
		return t.cols[i].Title
	}
	if t.sortDesc {
		return t.cols[i].Title + "▼"
	}
	return t.cols[i].Title + "▲"
}

// setSort shows the arrow in column col's header (-1: none); desc points
// it down.
func (t *table) setSort(col int, desc bool) {
	if col == t.sortCol && desc == t.sortDesc {
		return
	}
	t.sortCol, t.sortDesc = col, desc
	t.layout()
	clear(t.cache)
}

func (t *table) setStyles(s *themes.Styles) {
	t.styles = s
	clear(t.cache)
}

// setSize sets the table's area: width cells, height lines including the
// header.
func (t *table) setSize(width, height int) {
	if width != t.width || t.isWide() != t.laidWide {
		clear(t.cache)
	}
	t.laidWide = t.isWide()
	t.width, t.height = width, max(1, height-1)
	t.layout()
	t.clampOffset()
}

func (t *table) isWide() bool { return t.wide != nil && *t.wide }

// layout computes the column widths for the table's width.
func (t *table) layout() {
	width := t.width
	if t.marks {
		width -= 2
	}
	if t.isWide() {
		t.layoutWide(width)
		return
	}
	n := len(t.cols)
	t.widths = make([]int, n)
	visible := make([]bool, n)
	for i := range visible {
		visible[i] = true
	}
	// Too narrow for every column as it would be: the columns that show
	// nothing on screen go first.
	if t.fitted {
		pref := -1
		for i := range t.cols {
			pref += t.prefOf(i) + 1
		}
		for i := range t.cols {
			if pref > width && t.blank[i] && i != t.sortCol {
				visible[i] = false
				pref -= t.prefOf(i) + 1
			}
		}
	}
	need := func() int {
		w := -1 // a space between columns: one fewer than the columns
		for i := range t.cols {
			if visible[i] {
				w += t.minOf(i) + 1
			}
		}
		return w
	}
	for need() > width {
		drop, at := 0, -1
		for i, c := range t.cols {
			if visible[i] && c.Drop > drop {
				drop, at = c.Drop, i
			}
		}
		if at < 0 {
			break
		}
		visible[at] = false
	}
	used, flex := -1, 0
	for i, c := range t.cols {
		if !visible[i] {
			continue
		}
		t.widths[i] = t.prefOf(i)
		used += t.widths[i] + 1
		flex += c.Flex
	}
	left := width - used
	// Too narrow for preferred widths: shrink towards their minimum the
	// Shrink columns (ids) first, then the flexible ones, then the others,
	// a cell at a time from the one of the group with the most room above
	// its minimum, so that a long target gives up its room before a short
	// name loses a letter.
	for _, group := range []func(column) bool{
		func(c column) bool { return c.Shrink },
		func(c column) bool { return !c.Shrink && c.Flex > 0 },
		func(c column) bool { return !c.Shrink && c.Flex == 0 },
	} {
		for left < 0 {
			at := -1
			for i, c := range t.cols {
				if visible[i] && group(c) && t.widths[i] > t.minOf(i) && (at < 0 || t.widths[i]-t.minOf(i) > t.widths[at]-t.minOf(at)) {
					at = i
				}
			}
			if at < 0 {
				break
			}
			t.widths[at]--
			left++
		}
	}
	// Room left over goes to the flexible columns of free text (a reason,
	// an error), which can use it; where there are none it stays at the
	// right of the table, as kubectl and k9s leave it: given to the names
	// sized to their content, it would only pad them (a CLUSTER column 40
	// wide for names of 12 at 220 columns).
	takes := func(c column) bool { return c.Flex > 0 && !c.Fit }
	flex = 0
	for i, c := range t.cols {
		if visible[i] && takes(c) {
			flex += c.Flex
		}
	}
	if left > 0 && flex > 0 {
		extra := left
		for i, c := range t.cols {
			if visible[i] && takes(c) {
				add := extra * c.Flex / flex
				t.widths[i] += add
				left -= add
			}
		}
		for i, c := range t.cols { // rounding
			if visible[i] && takes(c) && left > 0 {
				t.widths[i] += left
				left = 0
			}
		}
	}
}

// layoutWide gives every column the width of its content (or its title),
// hiding and shrinking none: what passes the terminal's edge is cut there.
// Room left over goes to the flexible columns, as in the fitted layout.
func (t *table) layoutWide(width int) {
	t.widths = make([]int, len(t.cols))
	used, flex := -1, 0
	for i, c := range t.cols {
		w := max(ansi.StringWidth(t.titleOf(i)), c.minWidth())
		if t.fitted {
			w = max(ansi.StringWidth(t.titleOf(i)), t.natural[i])
		}
		t.widths[i] = max(1, w)
		used += t.widths[i] + 1
		flex += c.Flex
	}
	if left := width - used; left > 0 && flex > 0 {
		for i, c := range t.cols {
			if c.Flex > 0 {
				add := left * c.Flex / flex
				t.widths[i] += add
				used += add
			}
		}
		for i, c := range t.cols { // rounding
			if c.Flex > 0 && used < width {
				t.widths[i] += width - used
				used = width
			}
		}
	}
}

// edge cuts a line that runs past the table's width (the wide layout),
// marking the cut.
func (t *table) edge(line string) string {
	if ansi.StringWidth(line) <= t.width {
		return line
	}
	return ansi.Truncate(line, t.width-1, "") + t.styles.Render(themes.Muted, "›")
}

func (c column) minWidth() int {
	if c.Min > 0 {
		return c.Min
	}
	return c.Width
}

func (t *table) clampOffset() {
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+t.height {
		t.offset = t.cursor - t.height + 1
	}
	t.offset = max(0, t.offset)
}

// setCursor moves the cursor to i within n rows.
func (t *table) setCursor(i, n int) {
	t.cursor = max(0, min(i, n-1))
	t.clampOffset()
}

// clampTo keeps the cursor inside n rows after the rows changed.
func (t *table) clampTo(n int) {
	if t.cursor >= n {
		t.cursor = max(0, n-1)
	}
	if t.offset > max(0, n-t.height) {
		t.offset = max(0, n-t.height)
	}
	t.clampOffset()
}

// rowAt maps a line of the table's area (0 is the header) to a row index.
func (t *table) rowAt(y, n int) (int, bool) {
	if y < 1 || y > t.height {
		return 0, false
	}
	i := t.offset + y - 1
	return i, i < n
}

func (t *table) header() string {
	var b strings.Builder
	st := t.styles.TableHeader
	first := true
	if t.marks {
		b.WriteString("  ")
	}
	for i, c := range t.cols {
		w := t.widths[i]
		if !t.shown(i) {
			continue
		}
		if !first {
			b.WriteString(" ")
		}
		first = false
		if c.Right {
			b.WriteString(st.Render(padLeft(t.titleOf(i), w)))
		} else {
			b.WriteString(st.Render(pad(t.titleOf(i), w)))
		}
	}
	return pad(t.edge(b.String()), t.width)
}

// view renders the header and the visible rows of src; empty is shown when
// src has no rows.
func (t *table) view(src tableSource, empty string) string {
	t.fit(src)
	n := src.rowCount()
	lines := make([]string, 0, t.height+1)
	lines = append(lines, t.header())
	if n == 0 {
		// Wrapped, not cut: at 80 columns "no stuck jobs: … a silent …"
		// lost its end, and a filter's "no … match" its filter.
		for _, l := range wrapLines(empty, max(1, t.width-2), "") {
			lines = append(lines, t.styles.Render(themes.Muted, pad("  "+l, t.width)))
		}
	}
	end := min(n, t.offset+t.height)
	for i := t.offset; i < end; i++ {
		selected := i == t.cursor && !t.noFocus
		marked := src.marked(i)
		rowKey := src.rowKey(i)
		k := rowKey
		switch {
		case selected && marked:
			k = "S+M|" + k
		case selected:
			k = "S|" + k
		case marked:
			k = "M|" + k
		}
		line, ok := t.cache[k]
		if !ok {
			line = t.renderRow(t.cellsOf(src, i, rowKey), selected, marked)
			t.cache[k] = line
		}
		lines = append(lines, line)
	}
	if len(t.cache) > 8*(t.height+1) {
		clear(t.cache) // bounded: keys of rows long gone do not pile up
	}
	for len(lines) < t.height+1 {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func (t *table) renderRow(cells []cell, selected, marked bool) string {
	var b strings.Builder
	space := t.styles.Of(themes.Plain, selected)
	first := true
	used := 0
	if t.marks {
		if marked {
			b.WriteString(t.styles.Of(themes.Marked, selected).Render("● "))
		} else {
			b.WriteString(space.Render("  "))
		}
		used = 2
	}
	for i := range t.cols {
		w := t.widths[i]
		if !t.shown(i) {
			continue
		}
		if !first {
			b.WriteString(space.Render(" "))
			used++
		}
		first = false
		var c cell
		if i < len(cells) {
			c = cells[i]
		}
		if t.cols[i].Path {
			c = dropHead(c, w)
		}
		if t.fitted && len(c) == 1 && w < t.headCut[i] {
			c = cell{{cutHead(c[0].text, w), c[0].kind}}
		}
		if t.fitted && len(c) == 1 && t.midCut[i] {
			c = cell{{cutMiddle(c[0].text, w), c[0].kind}}
		}
		b.WriteString(t.renderCell(c, w, t.cols[i].Right, selected))
		used += w
	}
	if used < t.width {
		b.WriteString(space.Render(strings.Repeat(" ", t.width-used)))
	}
	return t.edge(b.String())
}

// dropHead is a path cell that does not fit in w without its first part:
// "ApplicationInstance/team-a/web" becomes "…/team-a/web".
func dropHead(c cell, w int) cell {
	if len(c) != 1 || c.width() <= w {
		return c
	}
	i := strings.IndexByte(c[0].text, '/')
	if i < 0 || strings.Count(c[0].text, "/") < 2 {
		return c
	}
	return cell{{"…" + c[0].text[i:], c[0].kind}}
}

func (t *table) renderCell(c cell, w int, right, selected bool) string {
	total := c.width()
	var b strings.Builder
	fill := t.styles.Of(themes.Plain, selected)
	if right && total < w {
		b.WriteString(fill.Render(strings.Repeat(" ", w-total)))
	}
	left := w
	for i, s := range c {
		if left <= 0 {
			break
		}
		text := s.text
		sw := ansi.StringWidth(text)
		if sw > left || (sw == left && i < len(c)-1 && total > w) {
			text = truncate(text, left)
			sw = ansi.StringWidth(text)
		}
		b.WriteString(t.styles.Of(s.kind, selected).Render(text))
		left -= sw
	}
	if !right && left > 0 {
		b.WriteString(fill.Render(strings.Repeat(" ", left)))
	}
	return b.String()
}

// navigate moves the cursor for the navigation keys; it reports whether the
// key was one.
func (t *table) navigate(msg tea.KeyPressMsg, k *Keys, n int) bool {
	switch {
	case key.Matches(msg, k.Up):
		t.setCursor(t.cursor-1, n)
	case key.Matches(msg, k.Down):
		t.setCursor(t.cursor+1, n)
	case key.Matches(msg, k.Top):
		t.setCursor(0, n)
	case key.Matches(msg, k.Bottom):
		t.setCursor(n-1, n)
	case key.Matches(msg, k.PageUp):
		t.setCursor(t.cursor-t.height, n)
	case key.Matches(msg, k.PageDown):
		t.setCursor(t.cursor+t.height, n)
	case t.hscrollKey(msg, k):
	default:
		return false
	}
	return true
}

// wheel scrolls by three rows, moving the cursor along.
func (t *table) wheel(msg tea.MouseWheelMsg, n int) {
	switch msg.Button {
	case tea.MouseWheelUp:
		t.setCursor(t.cursor-3, n)
	case tea.MouseWheelDown:
		t.setCursor(t.cursor+3, n)
	}
}
