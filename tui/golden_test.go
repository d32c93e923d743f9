package tui

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// Golden tests run the console in a real Bubble Tea program (teatest) over
// a seeded registry with a fake clock, drive it with keys, wait until
// nothing is loading, and compare the frame with testdata/TestGolden/*.golden
// (go test ./tui -run TestGolden -update rewrites them). Frames are
// downsampled to the ANSI 256-colour profile, so the files are stable; record
// ids (random ULIDs) and secrets are replaced by readable stand-ins of the
// same length, so the layout is exactly what a person sees.

// harness drives one console.
type harness struct {
	t   *testing.T
	tm  *teatest.TestModel
	env *env
	fx  fleetFixture
	ids *stableIDs
}

// id is the stand-in the console shows for a real id.
func (h *harness) id(real string) string { return h.ids.out(real) }

type probeFunc struct {
	f    func(*Model)
	done chan struct{}
}

func (p probeFunc) probe(m *Model) {
	p.f(m)
	close(p.done)
}

type consoleOpts struct {
	width, height int
	readOnly      bool
	empty         bool
	theme         themes.Theme
	start         string
	// seed, when set, adds to the fleet before the console starts.
	seed func(h *harness)
	// serveAddr: the console serves the agent API there.
	serveAddr string
	// role is the console's (admin when empty).
	role registry.Role
	// wrap, when set, stands between the console and its backend.
	wrap func(Backend) Backend
}

func startConsole(t *testing.T, o consoleOpts) *harness {
	t.Helper()
	e := newEnv(t)
	h := &harness{t: t, env: e}
	if !o.empty {
		h.fx = seedFleet(t, e)
	} else {
		e.at(30 * time.Minute)
	}
	if o.width == 0 {
		o.width, o.height = 120, 40
	}
	if o.theme.Name == "" {
		o.theme = themes.Dark()
	}
	if o.seed != nil {
		o.seed(h)
	}
	h.ids = newStableIDs(e.backend())
	var b Backend = h.ids
	if o.wrap != nil {
		b = o.wrap(b)
	}
	m := New(Options{
		Backend: b, Theme: themes.Choice{Theme: o.theme}, ReadOnly: o.readOnly, Role: o.role,
		ServerURL: "http://127.0.0.1:7070", Source: "tether.db", Start: o.start, ServeAddr: o.serveAddr,
	})
	h.tm = teatest.NewTestModel(t, m, teatest.WithInitialTermSize(o.width, o.height),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ANSI256)))
	t.Cleanup(func() {
		_ = h.tm.Quit()
		if fm, ok := h.tm.FinalModel(t, teatest.WithFinalTimeout(settleTimeout)).(*Model); ok && fm.feed != nil {
			fm.feed.stop()
		}
	})
	h.waitIdle(func(*Model) bool { return true })
	return h
}

// settleTimeout bounds how long the console may take to get through what
// it was sent. Generous: under -race on a shared 2-core machine running
// other tests, key messages have been seen to queue for over 30 s.
const settleTimeout = 90 * time.Second

// inspect runs f on the model inside its event loop. The probe queues
// behind every message sent before it, so it gets the same bound as
// waitIdle (it had 20 s, less than the queue it waits behind).
func (h *harness) inspect(f func(*Model)) {
	h.t.Helper()
	done := make(chan struct{})
	h.tm.Send(probeFunc{f: f, done: done})
	select {
	case <-done:
	case <-time.After(settleTimeout):
		h.t.Fatalf("the console did not answer a probe within %s", settleTimeout)
	}
}

// waitIdle waits until nothing is loading or running and cond holds.
func (h *harness) waitIdle(cond func(*Model) bool) {
	h.t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		ok := false
		h.inspect(func(m *Model) { ok = m.idle() && cond(m) })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var frame string
			h.inspect(func(m *Model) { frame = m.View().Content })
			h.t.Fatalf("the console did not settle within %s; last frame:\n%s", settleTimeout, frame)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keys sends key presses: names (enter, esc, tab, shift+tab, space, up,
// down, left, right, ctrl+s, ctrl+c) or text, typed rune by rune.
func (h *harness) keys(keys ...string) {
	for _, k := range keys {
		h.tm.Send(keyMsg(k))
	}
}

func (h *harness) typeText(s string) {
	for _, r := range s {
		h.tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	}
	if c, ok := strings.CutPrefix(k, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: rune(c[0]), Mod: tea.ModCtrl}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// frame is the current screen, scrubbed and downsampled.
func (h *harness) frame() string {
	h.t.Helper()
	var content string
	h.inspect(func(m *Model) { content = m.View().Content })
	var buf bytes.Buffer
	w := &colorprofile.Writer{Forward: &buf, Profile: colorprofile.ANSI256}
	if _, err := w.WriteString(h.scrub(content)); err != nil {
		h.t.Fatal(err)
	}
	return buf.String()
}

var tokenSecret = regexp.MustCompile(`tether_reg_[0-9a-z]{26}_[a-z2-7]{32}`)

// scrub replaces a token secret (random) with a fixed one of the same
// length; the ids are stand-ins already (stableIDs).
func (h *harness) scrub(s string) string {
	return tokenSecret.ReplaceAllString(s, "tether_reg_"+strings.Repeat("0", 26)+"_"+strings.Repeat("a", 32))
}

func (h *harness) golden() {
	h.t.Helper()
	golden.RequireEqual(h.t, []byte(h.frame()))
}

func isModal[T modal](m *Model) bool {
	_, ok := m.modal.(T)
	return ok
}

func topIs[T view](m *Model) bool {
	_, ok := m.top().(T)
	return ok
}

func TestGolden(t *testing.T) {
	t.Run("overview", func(t *testing.T) {
		h := startConsole(t, consoleOpts{})
		h.golden()
	})
	t.Run("overview_light", func(t *testing.T) {
		h := startConsole(t, consoleOpts{theme: themes.Light()})
		h.golden()
	})
	t.Run("clusters", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters"})
		h.golden()
	})
	t.Run("cluster_detail", func(t *testing.T) {
		h := startConsole(t, consoleOpts{})
		h.keys(":")
		h.typeText("clusters prod-eu-1")
		h.keys("enter")
		h.waitIdle(topIs[*clusterDetail])
		h.golden()
	})
	t.Run("jobs", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.golden()
	})
	t.Run("jobs_stuck", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys("l", "l")
		h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabStuck && m.jobs.loaded })
		h.keys("space")
		h.waitIdle(func(m *Model) bool { return len(m.jobs.marks) == 1 })
		h.golden()
	})
	t.Run("job_detail", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys(":")
		h.typeText("job " + h.id(h.fx.leasedJob))
		h.keys("enter")
		h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
		h.golden()
	})
	t.Run("job_detail_stuck", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys(":")
		h.typeText("job " + h.id(h.fx.silentJob))
		h.keys("enter")
		h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
		h.golden()
	})
	t.Run("events", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "events"})
		h.golden()
	})
	t.Run("audit", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "audit"})
		h.golden()
	})
	t.Run("help", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys("?")
		h.waitIdle(isModal[*helpModal])
		h.golden()
	})
	t.Run("command_completion", func(t *testing.T) {
		h := startConsole(t, consoleOpts{})
		h.keys(":")
		h.typeText("jobs s")
		h.waitIdle(func(m *Model) bool { return m.cmdline.active })
		h.golden()
	})
	t.Run("new_cluster_form", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters"})
		h.keys("n")
		h.typeText("prod-ap-1")
		h.keys("tab")
		h.typeText("acme")
		h.keys("tab", "tab")
		h.typeText("default, web")
		h.keys("enter")
		h.typeText("pay")
		h.waitIdle(isModal[*clusterForm])
		h.golden()
	})
	t.Run("token_modal", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters"})
		h.keys("n")
		h.typeText("prod-ap-1")
		h.keys("tab", "tab", "tab")
		h.typeText("default")
		h.keys("enter", "ctrl+s")
		h.waitIdle(isModal[*tokenModal])
		h.golden()
	})
	t.Run("conflict", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters"})
		h.keys("j", "j", "e") // prod-eu-1 (edge-lab, legacy-dc, prod-eu-1)
		h.waitIdle(isModal[*clusterForm])
		h.keys("tab", "tab", "tab")
		h.typeText("batch")
		h.keys("enter")
		h.waitIdle(func(m *Model) bool {
			f, ok := m.modal.(*clusterForm)
			return ok && len(f.field("namespaces").items) == 4
		})
		bob := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "bob"})
		must(h.env.reg.ModifyCluster(bob, h.fx.euID, func(s *registry.ClusterSpec) error {
			s.AllowedNamespaces = append(s.AllowedNamespaces, "ml")
			s.Policy.MaxAttempts = 8
			return nil
		}))
		h.keys("ctrl+s")
		h.waitIdle(func(m *Model) bool { d, ok := m.modal.(*conflictDialog); return ok && d.current != nil })
		h.golden()
	})
	t.Run("requeue_confirm", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys("l", "l")
		h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabStuck && m.jobs.loaded })
		h.keys("R")
		h.waitIdle(isModal[*confirm])
		h.golden()
	})
	t.Run("extend_lease", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys(":")
		h.typeText("job " + h.id(h.fx.leasedJob))
		h.keys("enter")
		h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
		h.keys("L")
		h.waitIdle(isModal[*prompt])
		h.golden()
	})
	t.Run("event_detail", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "events"})
		h.keys("j", "enter")
		h.waitIdle(isModal[*docModal])
		h.golden()
	})
	t.Run("revoke_confirm", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters"})
		h.keys("j", "j", "x")
		h.waitIdle(isModal[*typedConfirm])
		h.typeText("prod-eu")
		h.keys("enter")
		h.waitIdle(func(m *Model) bool { c, ok := m.modal.(*typedConfirm); return ok && c.hint != "" })
		h.golden()
	})
	t.Run("read_only", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters", readOnly: true})
		h.keys("n")
		h.waitIdle(func(m *Model) bool { return m.status != "" })
		h.golden()
	})
	t.Run("empty_overview", func(t *testing.T) {
		h := startConsole(t, consoleOpts{empty: true})
		h.golden()
	})
	t.Run("empty_clusters", func(t *testing.T) {
		h := startConsole(t, consoleOpts{empty: true, start: "clusters"})
		h.golden()
	})
	t.Run("empty_jobs", func(t *testing.T) {
		h := startConsole(t, consoleOpts{empty: true, start: "jobs"})
		h.golden()
	})
	t.Run("narrow_overview", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24})
		h.golden()
	})
	t.Run("narrow_clusters", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "clusters"})
		h.golden()
	})
	t.Run("narrow_jobs", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "jobs"})
		h.golden()
	})
	t.Run("wide_jobs", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys("w")
		h.waitIdle(func(m *Model) bool { return m.ctx.Wide && m.status != "" })
		h.golden()
	})
	t.Run("narrow_wide_jobs", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "jobs"})
		h.keys("w")
		h.waitIdle(func(m *Model) bool { return m.ctx.Wide && m.status != "" })
		h.golden()
	})
	t.Run("narrow_wide_clusters", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "clusters"})
		h.keys("w")
		h.waitIdle(func(m *Model) bool { return m.ctx.Wide && m.status != "" })
		h.golden()
	})
	t.Run("clusters_sorted", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters"})
		h.keys("s", "s", "s", "s", "s", "s", "S") // queued, the fewest first
		h.waitIdle(func(m *Model) bool {
			return m.clusters.sortBy == 6 && m.clusters.reverse && m.status == "clusters sorted by queued (S reverses)"
		})
		h.golden()
	})
	t.Run("narrow_clusters_sorted", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "clusters"})
		h.keys("<", "<", "<") // oldest queued
		h.waitIdle(func(m *Model) bool {
			return m.clusters.sortBy == 8 && m.status == "clusters sorted by oldest queued (S reverses)"
		})
		h.golden()
	})
	t.Run("jobs_oldest_first", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys("l", "l", "l", "l", "S")
		h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabAll && m.jobs.oldest && m.jobs.loaded && m.status != "" })
		h.golden()
	})
	t.Run("narrow_jobs_sort_refused", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "jobs"})
		h.keys("s")
		h.waitIdle(func(m *Model) bool { return m.status != "" })
		h.golden()
	})
	t.Run("narrow_clusters_filter_invalid_regex", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "clusters"})
		h.keys("/")
		h.typeText("re:prod-(eu")
		h.waitIdle(func(m *Model) bool { return m.clusters.filter == "re:prod-(eu" })
		h.golden()
	})
	t.Run("clusters_filter_negated", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "clusters"})
		h.keys("/")
		h.typeText("!prod re:^(edge|staging)")
		h.keys("enter")
		h.waitIdle(func(m *Model) bool { return !m.filtering && m.clusters.filter != "" })
		h.golden()
	})
	t.Run("jobs_filter_not_failed", func(t *testing.T) {
		h := startConsole(t, consoleOpts{start: "jobs"})
		h.keys("l", "l", "l", "l", "/")
		h.typeText("!failed !succeeded")
		h.keys("enter")
		h.waitIdle(func(m *Model) bool {
			return !m.filtering && m.jobs.tab == tabAll && m.jobs.filter == "!failed !succeeded" && m.jobs.loaded && m.jobs.tabCount(tabAll) >= 0
		})
		h.golden()
	})
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("breadcrumbs_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "clusters"})
			h.keys("j", "j", "enter")
			h.waitIdle(topIs[*clusterDetail])
			h.keys("J")
			h.waitIdle(func(m *Model) bool {
				return m.screen == screenJobs && m.jobs.filter == "cluster:prod-eu-1" && m.jobs.loaded && len(m.jobs.rows) > 0
			})
			h.keys("enter")
			h.waitIdle(func(m *Model) bool { d, ok := m.top().(*jobDetail); return ok && d.history != nil })
			h.golden()
		})
	}
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("bulk_requeue_confirm_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "jobs"})
			h.keys("l", "l", "l", "l")
			h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabAll && m.jobs.loaded })
			h.keys("A", "R")
			h.waitIdle(isModal[*confirm])
			h.golden()
		})
	}
	// The stuck tab shows each job's target and age where there is room,
	// and at 80 columns drops what shows nothing before cutting names
	// (issue 30, defect 7).
	for _, size := range [][2]int{{160, 24}, {220, 24}, {80, 24}} {
		t.Run(fmt.Sprintf("jobs_stuck_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "jobs"})
			h.keys("l", "l")
			h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabStuck && m.jobs.loaded })
			h.golden()
		})
	}
	// The audit trail at 80 columns: actors cut apart, never to one stub.
	t.Run("audit_80x24", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "audit"})
		h.golden()
	})
	// A refused action says why and what to do instead; at 80 columns the
	// message goes on over the help line rather than losing its end.
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("requeue_refused_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "jobs"})
			h.keys(":")
			h.typeText("jobs failed ImagePullBackOff")
			h.keys("enter")
			h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabFailed && m.jobs.loaded && len(m.jobs.rows) > 0 })
			h.keys("R")
			h.waitIdle(func(m *Model) bool { return m.status != "" })
			h.golden()
		})
	}
	// The failed tab shows why each job failed and, in its footer, the
	// keys its jobs take: F retries, D deletes (issue 30).
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("jobs_failed_tab_%dx%d", size[0], size[1]), func(t *testing.T) {
			h := startConsole(t, consoleOpts{width: size[0], height: size[1], start: "jobs"})
			h.keys("l", "l", "l")
			h.waitIdle(func(m *Model) bool { return m.jobs.tab == tabFailed && m.jobs.loaded && len(m.jobs.rows) > 0 })
			h.golden()
		})
	}
	t.Run("narrow_token_modal", func(t *testing.T) {
		h := startConsole(t, consoleOpts{width: 80, height: 24, start: "clusters"})
		h.keys("n")
		h.typeText("prod-ap-1")
		h.keys("tab", "tab", "tab")
		h.typeText("default")
		h.keys("enter", "ctrl+s")
		h.waitIdle(isModal[*tokenModal])
		h.golden()
	})
}
