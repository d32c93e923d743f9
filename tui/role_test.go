package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// remoteConsole is a console over e's registry served on loopback, with a
// token of the role, started as tether console --server starts it.
func remoteConsole(t *testing.T, e *env, role registry.Role, org string) *Model {
	t.Helper()
	remote := remoteEnv(t, e, role, org)
	m := New(Options{Backend: remote, Theme: themes.Choice{Theme: themes.Dark()}, ServerURL: "http://127.0.0.1:7070"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	return m
}

// The console over --server offers exactly what the token's role allows
// (GET /whoami), and a key it does not offer says which role it needs,
// rather than blaming a --read-only the console was not started with or
// refusing a form only after it was filled in.
func TestConsoleFollowsTheTokensRole(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)

	viewer := remoteConsole(t, e, registry.RoleViewer, "")
	do(viewer, "3")
	viewer.status = ""
	do(viewer, "R")
	if viewer.modal != nil || viewer.status != "requeue needs the operator role; this console has the viewer role" {
		t.Errorf("a viewer's R: modal %T, status %q", viewer.modal, viewer.status)
	}
	if view := viewer.View().Content; strings.Contains(view, "--read-only") || !strings.Contains(view, "VIEWER") || strings.Contains(viewer.helpLine(), "requeue") {
		t.Errorf("a viewer's console offers requeue or does not name its role:\n%s", view)
	}

	op := remoteConsole(t, e, registry.RoleOperator, "")
	do(op, "2")
	for _, k := range []string{"n", "e", "t", "r", "x", "d", "D"} {
		op.status = ""
		do(op, k)
		if op.modal != nil || !strings.HasSuffix(op.status, "needs the admin role; this console has the operator role") {
			t.Errorf("an operator's %s on the clusters: modal %T, status %q", k, op.modal, op.status)
			op.modal = nil
		}
	}
	if help := op.helpLine(); strings.Contains(help, "new cluster") || strings.Contains(help, "issue token") {
		t.Errorf("an operator's clusters view offers admin keys: %s", help)
	}
	if !strings.Contains(op.View().Content, "OPERATOR") {
		t.Errorf("the header does not name the operator role:\n%s", op.View().Content)
	}
	// What an operator may do stays on offer: a job's requeue, the queue's pause.
	do(op, "3")
	pump(op, op.push(newJobDetail(op.ctx, fx.leasedJob, must(e.reg.GetJob(e.admin, fx.leasedJob)))))
	do(op, "R")
	if _, ok := op.modal.(*confirm); !ok {
		t.Errorf("an operator's R opened %T (status %q)", op.modal, op.status)
	}
	do(op, "esc")
	op.status = ""
	do(op, "P")
	if !strings.Contains(op.status, "show sealed payload (audited) needs the admin role") {
		t.Errorf("an operator's P: status %q", op.status)
	}
}

// The operator's clusters screen: the admin keys are not on offer, and the
// header says the role.
func TestGoldenOperatorConsole(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("clusters_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "clusters", role: registry.RoleOperator})
			h.golden()
		})
	}
}
