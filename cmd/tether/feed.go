package main

import (
	"context"
	"io"
	"slices"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// The events and audit commands: one id-paged feed (admin.Feed) shown the
// same way, its newest entries oldest first, then with --follow what the
// change feed brings.

// feedPage is how many entries a catch-up read asks for at a time.
const feedPage = 500

// feedView is how a feed command shows one kind of entry.
type feedView[T any] struct {
	kind  registry.EntityKind
	id    func(*T) int64
	watch func(registry.WatchEvent) *T // the entry a change carries, or nil
	// admits is the command's filters: the watch carries every entry.
	admits func(*T) bool
	// table prints entries as a table; in follow mode only the first
	// batch has a header.
	table func(w io.Writer, names map[string]string, entries []T, header bool) error
}

// showFeed prints the feed's newest limit entries, oldest first, and with
// follow keeps printing new ones until ctx ends.
func showFeed[T any](ctx context.Context, g *globals, api admin.Service, feed admin.Feed[T], limit int, follow bool, v feedView[T]) error {
	names, err := clusterNames(ctx, api)
	if err != nil {
		return err
	}
	// Read the feed position before the page, so that nothing written in
	// between is missed by --follow; what arrives twice is skipped by id.
	seq, err := api.LatestSeq(ctx)
	if err != nil {
		return err
	}
	page, err := feed.Page(ctx, 0, 0, limit)
	if err != nil {
		return err
	}
	slices.Reverse(page) // oldest first, as a log reads
	if page == nil {
		page = []T{}
	}
	if !follow {
		if g.output == "json" {
			return printJSON(g.stdout, page)
		}
		return v.table(g.stdout, names, page, true)
	}
	pr := &feedPrinter[T]{g: g, names: names, v: v}
	if err := pr.printList(page); err != nil {
		return err
	}
	return tail(ctx, api, seq, v.kind,
		func(ev registry.WatchEvent) error {
			e := v.watch(ev)
			if e == nil {
				return nil
			}
			return pr.print([]T{*e}, false)
		},
		func() error {
			missed, err := feed.Since(ctx, pr.last, feedPage)
			if err != nil {
				return err
			}
			return pr.printList(missed)
		})
}

// feedPrinter prints entries in follow mode, each once and only those the
// filters admit.
type feedPrinter[T any] struct {
	g     *globals
	names map[string]string
	v     feedView[T]
	last  int64 // the highest id printed
	// listed is the ids of the last list printed: the feed that follows it
	// brings again what was written while it was read. The feed is in commit
	// order, which on PostgreSQL is not id order (writes run side by side):
	// an id below last may still be new.
	listed map[int64]bool
	headed bool
}

// printList prints a page read from the store, oldest first.
func (pr *feedPrinter[T]) printList(entries []T) error {
	pr.listed = map[int64]bool{}
	for i := range entries {
		pr.listed[pr.v.id(&entries[i])] = true
	}
	return pr.print(entries, true)
}

func (pr *feedPrinter[T]) print(entries []T, listed bool) error {
	var out []T
	for i := range entries {
		e := &entries[i]
		id := pr.v.id(e)
		if !listed && pr.listed[id] {
			continue
		}
		pr.last = max(pr.last, id)
		if !pr.v.admits(e) {
			continue
		}
		out = append(out, *e)
	}
	if pr.g.output == "json" {
		for i := range out {
			if err := printJSONLine(pr.g.stdout, &out[i]); err != nil {
				return err
			}
		}
		return nil
	}
	// The header goes out once, with the first page (even an empty one).
	if len(out) == 0 && pr.headed {
		return nil
	}
	defer func() { pr.headed = true }()
	return pr.v.table(pr.g.stdout, pr.names, out, !pr.headed)
}

// tail follows the change feed from seq, handing each upsert of kind to
// onUpsert, until ctx ends (an interrupt: the normal end of --follow).
//
// catchUp re-reads from the records themselves what the watch may not
// deliver. It runs at each end of snapshot: the first one (which opens the
// watch), where it closes the gap of an empty feed (seq 0 makes Watch take
// its own, later, position), and the one after a reset, when the feed was
// pruned past the watcher's position.
func tail(ctx context.Context, reg admin.Service, seq int64, kind registry.EntityKind, onUpsert func(registry.WatchEvent) error, catchUp func() error) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := reg.Watch(wctx, registry.WatchParams{Since: seq, Kinds: []registry.EntityKind{kind}})
	if err != nil {
		return err
	}
	for ev := range events {
		var err error
		switch ev.Type {
		case registry.WatchUpsert:
			err = onUpsert(ev)
		case registry.WatchEndOfSnapshot:
			err = catchUp()
		}
		if err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return failf("the change feed stopped; run the command again to carry on")
}
