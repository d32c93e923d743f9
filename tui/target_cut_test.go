package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/registry"
)

// columnCells is each row's text under the header title in a rendered
// list: from the title's start to the next title's.
func columnCells(t *testing.T, view, title string) []string {
	t.Helper()
	lines := strings.Split(ansi.Strip(view), "\n")
	for i, line := range lines {
		r := []rune(line)
		at := strings.Index(line, " "+title+" ")
		if at < 0 {
			continue
		}
		from := len([]rune(line[:at+1]))
		to := from + len([]rune(title))
		for to < len(r) && r[to] == ' ' {
			to++
		}
		var out []string
		for _, row := range lines[i+1:] {
			rr := []rune(row)
			if strings.TrimSpace(row) == "" || len(rr) < to {
				break
			}
			out = append(out, strings.TrimSpace(string(rr[from:to])))
		}
		return out
	}
	t.Fatalf("no %s column:\n%s", title, ansi.Strip(view))
	return nil
}

// At 80 columns the jobs' TARGET was cut to its namespace alone
// ("…/team-a/…" on every row of team-a, whatever the application): a cut
// target, like a cut name, must tell the rows apart (issue 30, defect 7:
// never an ambiguous stub; names that differ at their end are cut at
// their start, as cluster names are).
func TestCutTargetsStayDistinct(t *testing.T) {
	e := newEnv(t)
	c, tok := e.cluster(t, registry.ClusterSpec{Name: "prod-eu-1", AllowedNamespaces: []string{"*"}})
	a := e.agent(t, tok)
	targets := []string{"keycloak-team-a", "nextcloud-team-a", "gitea-team-a", "grafana-team-a", "wordpress-team-a-settings", "backup-gitea-team-a-101", "backup-gitea-team-a-103", "keycloak-team-a-settings"}
	// In progress, with their leases and activity on screen.
	var ids []string
	for _, name := range targets {
		j := e.submit(t, c.ID, "team-a", name)
		must(e.reg.AckJob(e.admin, a, j.ID))
		ids = append(ids, j.ID)
	}
	m := newModel(t, e, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	load(t, m, e)
	do(m, "3", "l")
	view := m.View().Content
	cells := columnCells(t, view, "TARGET")
	if len(cells) != len(targets) {
		t.Fatalf("%d rows under TARGET, want %d:\n%s", len(cells), len(targets), ansi.Strip(view))
	}
	for _, stub := range cells {
		var names []string
		for _, name := range targets {
			if stubNames(stub, "Deployment/team-a/"+name) || stubNames(strings.Replace(stub, "…/", "Deployment/", 1), "Deployment/team-a/"+name) {
				names = append(names, name)
			}
		}
		if len(names) != 1 {
			t.Errorf("TARGET %q stands for %d targets %v:\n%s", stub, len(names), names, ansi.Strip(view))
		}
	}
	// Their ids, minted within a second, share the timestamp they start
	// with: cut, they keep their tag and the tail that tells them apart.
	seen := map[string]bool{}
	for _, stub := range columnCells(t, view, "ID") {
		tail, ok := strings.CutPrefix(stub, "j-…")
		n := 0
		for _, id := range ids {
			if ok && strings.HasSuffix(id, tail) {
				n++
			}
		}
		if n != 1 || seen[stub] {
			t.Errorf("ID %q is not one job's tag and distinct tail (%d match):\n%s", stub, n, ansi.Strip(view))
		}
		seen[stub] = true
	}
}
