package tui

import (
	"strings"
	"testing"
)

// Dialog text breaks between words, never inside an id or a timestamp,
// which must stay whole to be read or copied (issue 30, defect 7).
func TestWrapKeepsIdsAndTimestampsWhole(t *testing.T) {
	body := "Requeue job j-01m88nn8s45hkn1az5dgzahdwb of cluster prod-eu-1, leased until 2026-05-28T10:29:00Z by agent cr-prod-eu-1-01m88nn8s4?"
	for _, width := range []int{30, 36, 44, 52} {
		out := wrap(body, width)
		for _, token := range []string{"j-01m88nn8s45hkn1az5dgzahdwb", "2026-05-28T10:29:00Z", "cr-prod-eu-1-01m88nn8s4?", "prod-eu-1,"} {
			if !strings.Contains(out, token) {
				t.Errorf("at %d columns %q is broken:\n%s", width, token, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if len([]rune(line)) > width {
				t.Errorf("at %d columns a line runs past: %q", width, line)
			}
		}
	}
	// A token longer than the line is cut where it must be.
	if out := wrap("x "+strings.Repeat("a", 25), 10); strings.Count(out, "\n") < 2 {
		t.Errorf("a long token is not cut:\n%s", out)
	}
}
