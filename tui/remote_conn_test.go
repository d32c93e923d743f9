package tui

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

// loopbackServer is a tether server on a fixed loopback address that a
// test stops and starts again, as an operator restarts one.
type loopbackServer struct {
	t      *testing.T
	e      *env
	addr   string
	cancel context.CancelFunc
	done   chan error
}

func (s *loopbackServer) start() {
	s.t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	srv := server.New(s.e.reg, server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ShutdownTimeout: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- srv.Serve(ctx, ln) }()
}

func (s *loopbackServer) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		s.cancel = nil
	}
}

// The remote console shows that its server went down: the header says for
// how long and when it retries, and the live marks stop saying "live"; the
// watch retries with backoff, and once the server is back the console says
// it reconnected and changes made after the restart arrive.
func TestRemoteConsoleShowsLostConnection(t *testing.T) {
	e := newEnv(t)
	f := seedFleet(t, e)
	s := &loopbackServer{t: t, e: e, addr: "127.0.0.1:0"}
	s.start()
	t.Cleanup(s.stop)
	tok, err := e.reg.CreateAdminToken(e.admin, "oncall", registry.RoleAdmin, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := adminclient.New("http://"+s.addr, tok.Secret.Reveal())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := admin.NewRemote(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// The waits between attempts are the test's to end: each one is
	// announced with its length, and lasts until the test says retry.
	delays := make(chan time.Duration, 10)
	retry := make(chan time.Time)
	remote.SetReconnectWait(func(d time.Duration) <-chan time.Time {
		delays <- d
		return retry
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := New(Options{Context: ctx, Backend: remote, ServerURL: "http://" + s.addr})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	load(t, m, e)
	for _, msg := range exec(m.restartWatch(), 10*time.Second) {
		m.Update(msg)
	}
	tick := func(now time.Time) { m.Update(tickMsg{now: now}) }
	tick(remote.Now())
	do(m, "4")
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "● following") || strings.Contains(view, "connection lost") {
		t.Fatalf("connected, the events view should follow and the header say nothing of a loss:\n%s", view)
	}
	nextDelay := func(want time.Duration) {
		t.Helper()
		select {
		case d := <-delays:
			if d != want {
				t.Errorf("the watch waits %v before retrying, want %v", d, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the watch never noticed its server was gone (waiting to retry after %v)", want)
		}
	}

	s.stop()
	nextDelay(admin.ReconnectFirst)
	lost := remote.Connection().LostAt
	tick(lost.Add(12 * time.Second))
	view := ansi.Strip(m.View().Content)
	header := strings.SplitN(view, "\n", 2)[0]
	if !strings.Contains(header, "connection lost 12s") || !strings.Contains(header, "OFFLINE") {
		t.Errorf("the header does not show the lost connection:\n%s", header)
	}
	if strings.Contains(view, "● following") || !strings.Contains(view, offlineMark) {
		t.Errorf("the events view still says it follows the feed:\n%s", view)
	}
	// An attempt while the server is still down fails, and the next waits
	// twice as long.
	retry <- time.Time{}
	nextDelay(2 * admin.ReconnectFirst)
	tick(remote.Now())
	if header := strings.SplitN(ansi.Strip(m.View().Content), "\n", 2)[0]; !strings.Contains(header, "retrying in") {
		t.Errorf("the header does not say when the console retries:\n%s", header)
	}
	if _, err := remote.ListClusters(ctx, registry.ClusterListParams{}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("a read while the server is down: %v, want it to say the server is unreachable", err)
	}

	s.start()
	retry <- time.Time{}
	j := e.submit(t, f.euID, "web", "after-restart")
	got := false
	for deadline := time.Now().Add(30 * time.Second); !got && time.Now().Before(deadline); {
		for _, msg := range exec(m.feed.wait(), 10*time.Second) {
			if fm, ok := msg.(feedMsg); ok {
				for _, fj := range fm.batch.Jobs {
					got = got || fj.ID == j.ID
				}
				m.Update(fm)
			}
		}
	}
	if !got {
		t.Fatal("a job submitted after the restart never came through the watch")
	}
	tick(remote.Now())
	if !strings.Contains(m.status, "reconnected after") {
		t.Errorf("the status line says %q, want that the console reconnected", m.status)
	}
	view = ansi.Strip(m.View().Content)
	if strings.Contains(view, "connection lost") || !strings.Contains(view, "● following") {
		t.Errorf("back online, the header and the events view should say so:\n%s", view)
	}
}
