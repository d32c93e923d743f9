package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// A cluster detail's RECENT JOBS show each job's target as the jobs list
// does when it is cut (its kind first, then its end: …/team-b/wordpress-…)
// with a space before the state, which is never cut: at 80 columns the
// target ran into the state (ApplicationInstance/team-a/nextclou…queu…).
func TestClusterDetailRecentJobsFit(t *testing.T) {
	e := newEnv(t)
	c, _ := e.cluster(t, registry.ClusterSpec{Name: "prod-ap-1", Organization: "acme", AllowedNamespaces: []string{"*"}})
	j := e.submit(t, c.ID, "team-b", "wordpress-team-b-with-a-long-name")
	short := e.submit(t, c.ID, "web", "api")
	for _, width := range []int{80, 120} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			m := newModel(t, e, false)
			m.Update(tea.WindowSizeMsg{Width: width, Height: 24})
			load(t, m, e)
			d := newClusterDetail(m.ctx, c.ID)
			d.SetSize(width, 20)
			d.jobs, d.loaded = []registry.Job{*j, *short}, true
			out := ansi.Strip(d.render(m.ctx.Fleet.cluster(c.ID)))
			for _, job := range []*registry.Job{j, short} {
				var row string
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(l, job.ID) {
						row = l
					}
				}
				if ansi.StringWidth(row) > width {
					t.Fatalf("the row is wider than the screen: %q", row)
				}
				if !strings.Contains(row, " queued ") {
					t.Errorf("the state is cut or runs into the target: %q", row)
				}
				if !strings.Contains(row, "/"+job.Target.Namespace+"/") {
					t.Errorf("the target lost its namespace: %q", row)
				}
			}
			if width == 120 && !strings.Contains(out, "Deployment/team-b/wordpress-team-b-with-a-long-name queued") {
				t.Errorf("at 120 columns the whole target fits:\n%s", out)
			}
		})
	}
}
