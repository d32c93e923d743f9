package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

func submitFormOf(t *testing.T, m *Model) *submitForm {
	t.Helper()
	f, ok := m.modal.(*submitForm)
	if !ok {
		t.Fatalf("the modal is %T, not the submit form (status %q)", m.modal, m.status)
	}
	return f
}

// n in the jobs view submits a job: a payload the cluster's allowlist
// refuses shows the rule under the payload, the form kept as typed; the
// payload corrected (loaded from a file) is accepted and its job opens.
func TestSubmitJobFromTheJobsView(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	m := newModel(t, e, false)
	load(t, m, e)
	do(m, "3", "n")
	f := submitFormOf(t, m)
	typeText(m, "prod-eu")
	do(m, "tab") // completes the name
	if got := f.cluster.value(); got != "prod-eu-1" {
		t.Fatalf("tab completed the cluster to %q", got)
	}
	do(m, "tab", "tab", "tab", "tab") // kind, payload, file, idempotency key
	typeText(m, "deploy-42")
	example := must(registry.PayloadExampleNamed("apply")).Payload
	do(m, "ctrl+s")

	f = submitFormOf(t, m) // still open
	if !strings.Contains(f.refusal, "namespace_not_allowed") || !strings.Contains(f.refusal, "team-a") {
		t.Errorf("the refusal under the payload: %q", f.refusal)
	}
	if f.payload.Value() != example || f.cluster.value() != "prod-eu-1" || f.idem.value() != "deploy-42" {
		t.Errorf("the form lost what was typed: cluster %q, key %q, payload %q", f.cluster.value(), f.idem.value(), f.payload.Value())
	}
	view := m.View().Content
	if !strings.Contains(view, "refused (namespace_not_allowed)") {
		t.Errorf("the refusal is not shown in the form:\n%s", view)
	}
	if n := must(e.reg.CountJobs(e.admin, registry.JobListParams{ClusterIDs: []string{fx.euID}, Search: "nextcloud-team-a"})); n != 0 {
		t.Errorf("the refused payload was queued: %d jobs", n)
	}

	// From file: the same payload in an allowed namespace.
	path := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(example, "team-a", "web")), 0o600); err != nil {
		t.Fatal(err)
	}
	do(m, "shift+tab") // From file
	typeText(m, path)
	do(m, "enter")
	if !strings.Contains(f.payload.Value(), `"namespace": "web"`) || f.err != "" {
		t.Fatalf("the file was not loaded: err %q, payload %q", f.err, f.payload.Value())
	}
	do(m, "ctrl+s")
	if m.modal != nil {
		t.Fatalf("an accepted job left the form open: refusal %q, err %q", f.refusal, f.err)
	}
	d, ok := m.top().(*jobDetail)
	if !ok {
		t.Fatalf("the new job's detail did not open: top %T, status %q", m.top(), m.status)
	}
	j := must(e.reg.GetJob(e.admin, d.id))
	if j.ClusterID != fx.euID || j.Kind != registry.KindApply || j.IdempotencyKey != "deploy-42" || j.Target.Namespace != "web" {
		t.Errorf("the job submitted: %+v", j)
	}
	if !strings.HasPrefix(m.status, "submitted job "+j.ID) {
		t.Errorf("status %q", m.status)
	}
}

// From a cluster's detail over the admin API (an operator's token), the
// form opens on that cluster; the kind's example follows the kind, and the
// API's policy code (422) is shown in place as the registry's is.
func TestSubmitJobFromAClusterOverTheAPI(t *testing.T) {
	e := newEnv(t)
	fx := seedFleet(t, e)
	op := remoteConsole(t, e, registry.RoleOperator, "")
	do(op, "2")
	pump(op, op.push(newClusterDetail(op.ctx, fx.euID)))
	do(op, "n")
	f := submitFormOf(t, op)
	if f.cluster.value() != "prod-eu-1" || f.focus != focusKind {
		t.Fatalf("the form opened on cluster %q, focus %d", f.cluster.value(), f.focus)
	}
	do(op, "right") // delete
	if f.payload.Value() != must(registry.PayloadExampleNamed("delete")).Payload {
		t.Fatalf("the payload did not follow the kind: %q", f.payload.Value())
	}
	do(op, "ctrl+s")
	f = submitFormOf(t, op)
	if !strings.Contains(f.refusal, "namespace_not_allowed") {
		t.Errorf("the API's refusal: %q (status %q)", f.refusal, op.status)
	}
	do(op, "tab") // payload: ctrl+e is the editor's there; esc cancels
	do(op, "esc")
	if op.modal != nil {
		t.Errorf("esc left %T open", op.modal)
	}
}

// A viewer's n is refused naming the role; a --read-only console's too.
func TestSubmitJobNeedsTheOperatorRole(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	viewer := remoteConsole(t, e, registry.RoleViewer, "")
	do(viewer, "3")
	viewer.status = ""
	do(viewer, "n")
	if viewer.modal != nil || viewer.status != "submit job needs the operator role; this console has the viewer role" {
		t.Errorf("a viewer's n: modal %T, status %q", viewer.modal, viewer.status)
	}
	if strings.Contains(viewer.helpLine(), "submit") {
		t.Errorf("a viewer's jobs view offers submit: %s", viewer.helpLine())
	}
	ro := newModel(t, e, true)
	load(t, ro, e)
	do(ro, "3", "n")
	if ro.modal != nil || !strings.Contains(ro.status, "read-only") {
		t.Errorf("a read-only console's n: modal %T, status %q", ro.modal, ro.status)
	}
}

// The form at both sizes, opened from the jobs view.
func TestGoldenSubmitForm(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("jobs_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "jobs"})
			h.keys("n")
			h.waitIdle(isModal[*submitForm])
			h.typeText("prod-eu-1")
			h.waitIdle(func(m *Model) bool { return m.modal.(*submitForm).cluster.value() == "prod-eu-1" })
			h.golden()
		})
	}
}

// A console whose person is not at its machine (over SSH: NoHostAccess)
// offers neither From file nor ctrl+e: tab goes from the payload to the
// idempotency key, and ctrl+e runs nothing.
func TestSubmitFormWithoutHostAccess(t *testing.T) {
	e := newEnv(t)
	seedFleet(t, e)
	m := New(Options{Backend: e.backend(), Theme: themes.Choice{Theme: themes.Dark()}, NoHostAccess: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	load(t, m, e)
	do(m, "3", "n")
	f := submitFormOf(t, m)
	do(m, "tab", "tab") // kind, payload
	if f.focus != focusPayload {
		t.Fatalf("focus %d, want the payload", f.focus)
	}
	if _, cmd := f.Update(tea.KeyPressMsg{Code: 'e', Mod: tea.ModCtrl}); cmd != nil {
		t.Fatal("ctrl+e would run a program")
	}
	view := m.View().Content
	if strings.Contains(view, "From file") || strings.Contains(view, "$EDITOR") {
		t.Errorf("the form offers the machine's files or its editor:\n%s", view)
	}
	do(m, "tab")
	if f.focus != focusIdem {
		t.Fatalf("tab from the payload went to field %d, want the idempotency key", f.focus)
	}
	do(m, "shift+tab")
	if f.focus != focusPayload {
		t.Fatalf("shift+tab from the idempotency key went to field %d, want the payload", f.focus)
	}
}
