package tui

import (
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
)

// A job's footer names the actions its state allows: a failed job F retry
// and D delete (and R requeue when its lease ran out on its last attempt),
// never C cancel or L extend lease, which it would refuse; a job in
// progress without a lease no L (issue 30, Expected: the failed keys).
func TestJobDetailFooterNamesTheActionsItsStateAllows(t *testing.T) {
	e := newEnv(t)
	f := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	for _, tc := range []struct {
		id       string
		want, no []string
	}{
		{f.exhaustedJob, []string{"F", "D", "R"}, []string{"C", "L"}},
		{f.silentJob, []string{"R", "C"}, []string{"F", "D", "L"}},
		{f.leasedJob, []string{"R", "C", "L"}, []string{"F", "D"}},
	} {
		do(m, append([]string{":"}, strings.Split("job "+tc.id, "")...)...)
		do(m, "enter")
		d, ok := m.top().(*jobDetail)
		if !ok || d.job == nil {
			t.Fatalf("%s: the top is %T, want its loaded detail", tc.id, m.top())
		}
		var keys []string
		for _, b := range m.top().KeyMap().ShortHelp() {
			keys = append(keys, b.Keys()...)
		}
		for _, w := range tc.want {
			if !slices.Contains(keys, w) {
				t.Errorf("%s (%s): the footer lacks %s: %v", tc.id, d.job.State, w, keys)
			}
		}
		for _, n := range tc.no {
			if slices.Contains(keys, n) {
				t.Errorf("%s (%s): the footer offers %s, which the job refuses: %v", tc.id, d.job.State, n, keys)
			}
		}
		// Every key the footer names acts rather than being refused.
		for _, b := range m.top().KeyMap().ShortHelp() {
			if key.Matches(keyMsg("F"), b) || key.Matches(keyMsg("D"), b) || key.Matches(keyMsg("R"), b) || key.Matches(keyMsg("C"), b) {
				do(m, b.Keys()[0])
				if m.modal == nil {
					t.Errorf("%s: %s, offered, opened no confirmation (status %q)", tc.id, b.Keys()[0], m.status)
				}
				do(m, "esc")
			}
		}
		do(m, "esc")
	}
}
