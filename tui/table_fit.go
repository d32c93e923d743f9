package tui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Columns sized to their content: a table measures the rows on screen and
// lays its columns out again when what they need changed.

// measuredRow is a row's cells and what each needs.
type measuredRow struct {
	cells  []cell
	widths []int
	texts  []string // each cell's plain text
	multi  []bool   // the cell has more than one seg (its head cannot be cut)
}

// cellsOf returns row i's cells, measured once per row key.
func (t *table) cellsOf(src tableSource, i int, rowKey string) []cell {
	if m, ok := t.measured[rowKey]; ok {
		return m.cells
	}
	return t.measure(src, i, rowKey).cells
}

func (t *table) measure(src tableSource, i int, rowKey string) measuredRow {
	cells := src.rowCells(i)
	n := len(t.cols)
	m := measuredRow{cells: cells, widths: make([]int, n), texts: make([]string, n), multi: make([]bool, n)}
	for c := range t.cols {
		if c >= len(cells) {
			break
		}
		m.widths[c] = cells[c].width()
		m.texts[c] = cells[c].text()
		m.multi[c] = len(cells[c]) > 1
	}
	t.measured[rowKey] = m
	return m
}

// fits reports whether any column sizes to its content.
func (t *table) fits() bool {
	return t.isWide() || slices.ContainsFunc(t.cols, func(c column) bool { return c.Fit || c.UniquePrefix })
}

// fit measures the rows on screen and lays the columns out again when they
// need other widths than the last layout gave them.
func (t *table) fit(src tableSource) {
	if !t.fits() || t.width == 0 {
		return
	}
	n := len(t.cols)
	natural := make([]int, n)
	prefix := make([]int, n)
	distinct := make([]int, n)
	headCut := make([]int, n)
	blank := make([]bool, n)
	midCut := make([]bool, n)
	multi := make([]bool, n)
	texts := make([][]string, n)
	end := min(src.rowCount(), t.offset+t.height)
	for c := range blank {
		blank[c] = end > t.offset
	}
	for i := t.offset; i < end; i++ {
		k := src.rowKey(i)
		m, ok := t.measured[k]
		if !ok {
			m = t.measure(src, i, k)
		}
		for c := range t.cols {
			natural[c] = max(natural[c], m.widths[c])
			texts[c] = append(texts[c], m.texts[c])
			multi[c] = multi[c] || m.multi[c]
			if s := strings.TrimSpace(m.texts[c]); s != "" && s != "-" {
				blank[c] = false
			}
		}
	}
	for c, col := range t.cols {
		if len(texts[c]) == 0 {
			continue
		}
		if col.Implied != "" && !slices.ContainsFunc(texts[c], func(s string) bool { return s != col.Implied }) {
			blank[c] = true
		}
		if col.UniquePrefix {
			// The distinct prefix and the ellipsis that says it is one;
			// ids that share a long head (ULIDs minted in the same
			// second share their timestamp) keep their tag and their
			// distinct tail instead, when that is shorter.
			prefix[c] = min(natural[c], uniquePrefix(texts[c])+1)
			if mid := midWidth(texts[c]); !multi[c] && mid < prefix[c] {
				prefix[c], midCut[c] = mid, true
			}
			continue
		}
		if !col.Fit {
			continue
		}
		if col.Path {
			// A path gives up its kind first, then its end, as long as
			// the rows stay told apart ("…/team-a/keycloak-te…" stood for
			// two targets); names that differ only at their end
			// (backup-…-2930, backup-…-2931) are cut at their start
			// instead, when that is shorter.
			if !multi[c] {
				cut := make([]string, len(texts[c]))
				for i, s := range texts[c] {
					cut[i] = dropHead(cell{{s, 0}}, 0)[0].text
				}
				endCut := uniquePrefix(cut) + 1
				distinct[c] = min(natural[c], endCut)
				if headW := uniqueSuffix(cut) + 1; headW < endCut {
					distinct[c] = min(natural[c], headW)
					headCut[c] = endCut
				}
			}
			continue
		}
		// Cut, the texts on screen stay told apart, from each other and
		// from the rest of the column's domain: cut at the end where they
		// differ early, at the head (their common prefix) where they
		// differ late ("…eu-1", "…us-1"), never to a stub two texts share.
		dom := t.domain(c)
		endCut := max(uniquePrefix(texts[c]), dom.prefixNeed(texts[c])) + 1
		distinct[c] = min(natural[c], endCut)
		if !multi[c] {
			if headW := max(uniqueSuffix(texts[c]), dom.suffixNeed(texts[c])) + 1; headW < endCut {
				distinct[c] = min(natural[c], headW)
				headCut[c] = endCut // cut at the head below this width
			}
		}
	}
	if len(t.measured) > 8*(t.height+1) {
		clear(t.measured) // bounded: rows long gone do not pile up
	}
	fitted := end > t.offset
	if fitted == t.fitted && slices.Equal(natural, t.natural) && slices.Equal(prefix, t.prefix) &&
		slices.Equal(distinct, t.distinct) && slices.Equal(headCut, t.headCut) && slices.Equal(blank, t.blank) &&
		slices.Equal(midCut, t.midCut) {
		return
	}
	t.natural, t.prefix, t.fitted = natural, prefix, fitted
	t.distinct, t.headCut, t.blank, t.midCut = distinct, headCut, blank, midCut
	t.layout()
	clear(t.cache)
}

// uniquePrefix is the shortest length at which the texts' prefixes are all
// distinct (texts equal in full count once).
func uniquePrefix(texts []string) int {
	sorted := slices.Clone(texts)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	n := 1
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		common := 0
		for common < len(a) && common < len(b) && a[common] == b[common] {
			common++
		}
		n = max(n, common+1)
	}
	return n
}

// uniqueSuffix is uniquePrefix read from the end: the shortest tail at
// which the texts are all distinct.
func uniqueSuffix(texts []string) int {
	rev := make([]string, len(texts))
	for i, s := range texts {
		r := []rune(s)
		slices.Reverse(r)
		rev[i] = string(r)
	}
	return uniquePrefix(rev)
}

// cutHead is text cut to w cells from its head: "…eu-1".
func cutHead(text string, w int) string {
	if ansi.StringWidth(text) <= w || w < 1 {
		return text
	}
	r := []rune(text)
	for len(r) > 0 && ansi.StringWidth(string(r))+1 > w {
		r = r[1:]
	}
	return "…" + string(r)
}

// prefOf is column i's preferred width: its content's, for a Fit column
// whose rows have been measured, else its Width.
func (t *table) prefOf(i int) int {
	c := t.cols[i]
	if t.fitted && !c.Fit && c.Flex > 0 {
		// Free text (a detail, a reason) claims no more than the rows on
		// screen need while others are cut: the room left over comes
		// back to it.
		return max(min(c.Width, t.natural[i]), ansi.StringWidth(t.titleOf(i)), t.minOf(i))
	}
	if !c.Fit || !t.fitted {
		return max(c.Width, ansi.StringWidth(t.titleOf(i)))
	}
	w := max(t.natural[i], ansi.StringWidth(t.titleOf(i)), t.minOf(i))
	if c.Max > 0 {
		w = min(w, max(c.Max, t.minOf(i)))
	}
	return w
}

// minOf is the narrowest column i may become: a UniquePrefix column keeps
// its texts on screen distinct, and its title; a Fit column needs no more
// than its content, even below its Min.
func (t *table) minOf(i int) int {
	if i == t.sortCol {
		// The sorted column keeps room for its title and arrow.
		return max(t.minOfContent(i), ansi.StringWidth(t.titleOf(i)))
	}
	return t.minOfContent(i)
}

func (t *table) minOfContent(i int) int {
	c := t.cols[i]
	switch {
	case !t.fitted:
		return c.minWidth()
	case c.UniquePrefix && t.prefix[i] > 0:
		return max(t.prefix[i], ansi.StringWidth(t.titleOf(i)), min(c.minWidth(), 10))
	case c.Fit:
		return max(t.distinct[i], min(c.minWidth(), max(t.natural[i], ansi.StringWidth(t.titleOf(i)))))
	case c.Flex > 0:
		// Free text shorter than its Min on every row needs no more.
		return min(c.minWidth(), max(t.natural[i], ansi.StringWidth(t.titleOf(i))))
	}
	return c.minWidth()
}
