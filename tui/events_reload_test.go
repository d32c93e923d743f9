package tui

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// chattyEvents stores n Audit events of one agent and returns them oldest
// first, as the live feed delivers them.
func chattyEvents(t *testing.T, e *env, n int) []registry.Event {
	t.Helper()
	_, tok := e.cluster(t, registry.ClusterSpec{Name: "chatty", AllowedNamespaces: []string{"default"}})
	a := e.agent(t, tok)
	for i := 0; i < n; i += 100 {
		batch := make([]registry.Event, min(100, n-i))
		for j := range batch {
			batch[j] = registry.Event{Kind: registry.EventAudit, EventKey: fmt.Sprintf("k-%d", i+j), Message: fmt.Sprintf("event number %d", i+j)}
			if i+j == 5 {
				batch[j].Message = "a needle among the oldest"
			}
		}
		if _, err := e.reg.AppendEvents(context.Background(), a, "", batch); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := e.reg.ListEvents(context.Background(), registry.EventListParams{Limit: n})
	if err != nil || len(stored) != n {
		t.Fatalf("stored %d events (%v)", len(stored), err)
	}
	slices.Reverse(stored)
	return stored
}

// Events that overflow the paused buffer are read back from the store on
// resume: the newest are shown, not lost, and the dropped count clears
// (issue 12, defect 3). Following, the newest is selected and on screen, as
// tail -f shows it, not the newest the pause kept, hundreds of rows down.
func TestEventsPausedOverflowReloadsFromTheStore(t *testing.T) {
	e := newEnv(t)
	m := newModel(t, e, false)
	load(t, m, e)
	v := m.events
	v.Update(keyMsg("f")) // pause
	if v.follow {
		t.Fatal("f did not pause")
	}
	events := chattyEvents(t, e, eventsPending+200)
	v.Update(feedMsg{batch: feedBatch{Events: events}})
	if v.dropped != 200 || len(v.pending) != eventsPending {
		t.Fatalf("paused with %d events: %d pending, %d dropped; want %d and 200", len(events), len(v.pending), v.dropped, eventsPending)
	}
	for _, msg := range exec(v.Update(keyMsg("f")), 10*time.Second) {
		v.Update(msg)
	}
	newest := events[len(events)-1]
	if v.dropped != 0 || len(v.rows) == 0 || v.rows[0].ID != newest.ID {
		t.Fatalf("after resume: %d dropped, top row %v; want 0 and the newest event %d", v.dropped, v.rows[0].ID, newest.ID)
	}
	if v.table.cursor != 0 || v.table.offset != 0 {
		t.Fatalf("after resume, following: the selection is on row %d (window from row %d); want the newest, on top", v.table.cursor, v.table.offset)
	}
	seen := map[int64]bool{}
	for _, ev := range v.all {
		if seen[ev.ID] {
			t.Fatalf("event %d is held twice", ev.ID)
		}
		seen[ev.ID] = true
	}
	for _, ev := range events[len(events)-200:] {
		if !seen[ev.ID] {
			t.Fatalf("event %d, dropped while paused, did not come back", ev.ID)
		}
	}
}

// A text filter searches older pages from the store when what is loaded
// has no match, instead of saying no event matches.
func TestEventsFilterSearchesOlderPages(t *testing.T) {
	e := newEnv(t)
	events := chattyEvents(t, e, 3*eventsPage)
	m := newModel(t, e, false)
	load(t, m, e)
	v := m.events
	if len(v.all) != eventsPage {
		t.Fatalf("the first load holds %d events, want a page of %d", len(v.all), eventsPage)
	}
	cmd := v.SetFilter("needle") // in the oldest page only
	for cmd != nil {
		msgs := exec(cmd, 10*time.Second)
		cmd = nil
		for _, msg := range msgs {
			if c := v.Update(msg); c != nil {
				cmd = c
			}
		}
	}
	found := map[string]bool{}
	for _, r := range v.rows {
		found[r.Message] = true
	}
	for _, want := range []string{"a needle among the oldest"} {
		if !found[want] {
			t.Errorf("the filter did not find %q, which is in the store (%d rows, %d held)", want, len(v.rows), len(v.all))
		}
	}
	if len(events) != 3*eventsPage {
		t.Fatal("fixture")
	}
}
