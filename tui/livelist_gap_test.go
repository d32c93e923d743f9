package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// typeText types s into whatever has the focus, a key at a time.
func typeText(m *Model, s string) {
	for _, r := range s {
		k := string(r)
		if r == ' ' {
			k = "space"
		}
		do(m, k)
	}
}

// titleLine is the first line of the live list's view.
func titleLine(view string) string { return strings.SplitN(view, "\n", 2)[0] }

// A burst of 3,000 events while paused: 1,000 wait, 2,000 are dropped.
// Resuming reads back every one of them, the middle of the burst too, over
// the database and over the admin API alike, and the filter finds one from
// the middle (issue 30, defect 2: 1,500 were silently missing).
func TestEventsBurstPastThePauseComesBackWhole(t *testing.T) {
	for _, over := range []string{"local", "remote"} {
		t.Run(over, func(t *testing.T) {
			e := newEnv(t)
			m := newModel(t, e, false)
			if over == "remote" {
				r := remoteEnv(t, e, registry.RoleAdmin, "")
				m = New(Options{Backend: r, Theme: themes.Choice{Theme: themes.Dark()}, ServerURL: "http://127.0.0.1:7070"})
				m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			}
			load(t, m, e)
			do(m, "4", "f")
			v := m.events
			events := chattyEvents(t, e, 3000)
			for i := 0; i < len(events); i += feedEventBuffer {
				m.Update(feedMsg{batch: feedBatch{Events: events[i:min(i+feedEventBuffer, len(events))]}})
			}
			if title := titleLine(v.View()); !strings.Contains(title, "2,000 dropped") {
				t.Fatalf("paused through a burst of 3,000 events, the title does not count 2,000 dropped: %s", title)
			}
			do(m, "f")
			held := map[int64]bool{}
			for _, ev := range v.all {
				held[ev.ID] = true
			}
			missing := 0
			for _, ev := range events {
				if !held[ev.ID] {
					missing++
				}
			}
			if missing > 0 {
				t.Fatalf("after resuming, %d of the burst's %d events are missing (%d held)", missing, len(events), len(v.all))
			}
			if title := titleLine(v.View()); strings.Contains(title, "dropped") || v.rows[0].ID != events[len(events)-1].ID {
				t.Fatalf("after the read-back: title %q, top row %d; want no drop and the newest event on top", title, v.rows[0].ID)
			}
			do(m, "/")
			typeText(m, "number 1700")
			do(m, "enter")
			if len(v.rows) != 1 || v.rows[0].Message != "event number 1700" {
				t.Fatalf("/number 1700 (an event from the middle of the burst) shows %d rows", len(v.rows))
			}
		})
	}
}

// The audit trail is the same live list: entries the pause's buffer and
// the feed dropped come back on resume, the middle of the burst too.
func TestAuditBurstPastThePauseComesBackWhole(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster(t, registry.ClusterSpec{Name: "busy", AllowedNamespaces: []string{"default"}})
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "5", "f")
	v := m.audit
	v.spec.pendingMax, v.spec.page = 10, 10 // a burst of 60 overflows both
	var first registry.AuditEntry
	if len(v.all) > 0 {
		first = v.all[0]
	}
	for i := range 60 {
		e.submit(t, c.ID, "default", fmt.Sprintf("app-%d", i))
	}
	entries, err := e.reg.ListAudit(context.Background(), registry.AuditListParams{AfterID: first.ID, Limit: 1000})
	if err != nil || len(entries) < 60 {
		t.Fatalf("the burst's audit entries: %d (%v)", len(entries), err)
	}
	// Oldest first, as the feed delivers them: 30 in the batch, the rest
	// dropped by the feed.
	burst := make([]registry.AuditEntry, 0, len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		burst = append(burst, entries[i])
	}
	m.Update(feedMsg{batch: feedBatch{Audit: burst[:30], DroppedAudit: len(burst) - 30}})
	if v.dropped != len(burst)-10 {
		t.Fatalf("paused: %d dropped, want %d", v.dropped, len(burst)-10)
	}
	do(m, "f")
	held := map[int64]bool{}
	for _, a := range v.all {
		held[a.ID] = true
	}
	for _, a := range burst {
		if !held[a.ID] {
			t.Fatalf("after resuming, entry %d (%s) of the burst is missing", a.ID, a.Action)
		}
	}
	if v.dropped != 0 {
		t.Fatalf("after the read-back: %d dropped", v.dropped)
	}
}
