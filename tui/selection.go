package tui

// A live list's selection belongs to a record, not to a row number: rows are
// inserted above it (new jobs, new events, new audit entries), the list is
// re-sorted or reloaded, and the cursor must stay on the record on-call chose,
// or an action key (R, C, D, enter) hits another one. Every list that changes
// under the cursor takes an anchor before its rows change and restores it
// after.

// anchorNear is how many neighbours either side an anchor remembers, to land
// near the selection when its record is gone (finished and filtered out,
// deleted): a burst of more than this many disappearing together falls back
// to the row number.
const anchorNear = 16

// anchor is the selected record of a list, by key, with its neighbours.
type anchor[K comparable] struct {
	ok   bool
	id   K
	row  int
	near []K // nearest first: the one after, the one before, the second after...
}

// anchorAt takes the anchor of t's cursor over rows 0..n-1 whose keys id
// gives. An empty list has none.
func anchorAt[K comparable](t *table, n int, id func(i int) K) anchor[K] {
	c := t.cursor
	if c < 0 || c >= n {
		return anchor[K]{row: c}
	}
	a := anchor[K]{ok: true, id: id(c), row: c}
	for d := 1; d <= anchorNear; d++ {
		if c+d < n {
			a.near = append(a.near, id(c+d))
		}
		if c-d >= 0 {
			a.near = append(a.near, id(c-d))
		}
	}
	return a
}

// restore puts t's cursor back on the anchored record in the new rows, or on
// its nearest surviving neighbour, or (neither left) on the same row number
// within the new rows.
func (a anchor[K]) restore(t *table, n int, id func(i int) K) {
	if a.ok {
		if i := a.find(n, id); i >= 0 {
			t.setCursor(i, n)
			return
		}
	}
	t.cursor = a.row
	t.clampTo(n)
}

// find is the row of the anchored record, or of its nearest neighbour left,
// or -1.
func (a anchor[K]) find(n int, id func(i int) K) int {
	for i := range n {
		if id(i) == a.id {
			return i
		}
	}
	if len(a.near) == 0 {
		return -1
	}
	at := make(map[K]int, n)
	for i := range n {
		at[id(i)] = i
	}
	for _, k := range a.near {
		if i, ok := at[k]; ok {
			return i
		}
	}
	return -1
}
