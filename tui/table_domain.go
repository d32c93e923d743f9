package tui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/internal/display"
)

// A cut is judged against more than the rows on screen: a column's Domain
// is every text it shows across what the view holds, and a stub must tell
// the texts on screen apart from all of them. The table keeps each Domain
// sorted, forwards and reversed, until its stamp changes, so that a frame
// checks the rows on screen with a binary search each.

// domainCache is a column's Domain as last read.
type domainCache struct {
	stamp int
	read  bool
	fwd   []string // sorted
	rev   []string // each text reversed, sorted
}

// domain is column c's Domain, read again when its stamp changed (nil
// without one).
func (t *table) domain(c int) *domainCache {
	col := t.cols[c]
	if col.Domain == nil {
		return nil
	}
	if len(t.domains) != len(t.cols) {
		t.domains = make([]domainCache, len(t.cols))
	}
	d := &t.domains[c]
	known := d.stamp
	if !d.read {
		known = -1
	}
	stamp, texts := col.Domain(known)
	if d.read && stamp == d.stamp {
		return d
	}
	d.stamp, d.read = stamp, true
	d.fwd = d.fwd[:0]
	for _, s := range texts {
		d.fwd = append(d.fwd, display.Safe(s)) // as txt shows it
	}
	slices.Sort(d.fwd)
	d.fwd = slices.Compact(d.fwd)
	d.rev = d.rev[:0]
	for _, s := range d.fwd {
		d.rev = append(d.rev, reverse(s))
	}
	slices.Sort(d.rev)
	return d
}

// prefixNeed is the longest prefix a text on screen shares with another
// text of the domain, plus one: the shortest stub that tells it apart.
func (d *domainCache) prefixNeed(texts []string) int {
	if d == nil {
		return 0
	}
	return need(d.fwd, texts)
}

// suffixNeed is prefixNeed for the texts' tails (a cut at the head).
func (d *domainCache) suffixNeed(texts []string) int {
	if d == nil {
		return 0
	}
	rev := make([]string, len(texts))
	for i, s := range texts {
		rev[i] = reverse(s)
	}
	return need(d.rev, rev)
}

// need is 1 + the longest common prefix of each text with its neighbours
// in sorted other than itself.
func need(sorted, texts []string) int {
	n := 0
	for _, s := range texts {
		i, _ := slices.BinarySearch(sorted, s)
		for _, j := range []int{i - 1, i, i + 1} {
			if j >= 0 && j < len(sorted) && sorted[j] != s {
				n = max(n, sharedHead(s, sorted[j])+1)
			}
		}
	}
	return n
}

func sharedHead(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// idTag is an id's tag, what it is ("j-", "cl-"): up to its first hyphen,
// when that comes within its first four characters.
func idTag(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 && i < 4 {
		return id[:i+1]
	}
	return ""
}

// midWidth is the narrowest a middle cut keeps the ids distinct: the
// longest tag, the ellipsis and the shortest distinct tail.
func midWidth(ids []string) int {
	tag := 0
	for _, id := range ids {
		tag = max(tag, len(idTag(id)))
	}
	return tag + 1 + uniqueSuffix(ids)
}

// cutMiddle is id cut to w cells in its middle: its tag, an ellipsis and
// as much of its tail as fits ("j-…7k3f9").
func cutMiddle(id string, w int) string {
	if ansi.StringWidth(id) <= w {
		return id
	}
	tag := idTag(id)
	tail := w - len(tag) - 1
	if tail < 1 {
		return truncate(id, w)
	}
	r := []rune(id)
	return tag + "…" + string(r[len(r)-min(tail, len(r)):])
}

// fleetNames is a Domain of every cluster name in ctx's fleet.
func fleetNames(ctx *Context) func(int) (int, []string) {
	return func(known int) (int, []string) {
		f := ctx.Fleet
		if f.version == known {
			return known, nil
		}
		names := make([]string, 0, len(f.sorted))
		for _, c := range f.sorted {
			names = append(names, c.Name)
		}
		return f.version, names
	}
}
