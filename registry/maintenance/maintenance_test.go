package maintenance_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/registry/maintenance"
)

const waitTimeout = 30 * time.Second

// puppet is a service the test drives: each Run says it started, then
// returns what the test sends it (an error, a nil, or a panic), or when its
// context ends.
type puppet struct {
	name    string
	started chan struct{}
	exit    chan func() error
	stopped chan struct{}
	// slowStop, when set, is waited for after ctx ends before Run returns.
	slowStop chan struct{}
}

func newPuppet(name string) *puppet {
	return &puppet{name: name, started: make(chan struct{}, 16), exit: make(chan func() error), stopped: make(chan struct{}, 16)}
}

func (p *puppet) Name() string { return p.name }

func (p *puppet) Run(ctx context.Context) error {
	p.started <- struct{}{}
	defer func() { p.stopped <- struct{}{} }()
	select {
	case f := <-p.exit:
		return f()
	case <-ctx.Done():
		if p.slowStop != nil {
			<-p.slowStop
		}
		return ctx.Err()
	}
}

func (p *puppet) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-p.started:
	case <-time.After(waitTimeout):
		t.Fatalf("%s was not started", p.name)
	}
}

func (p *puppet) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-p.stopped:
	case <-time.After(waitTimeout):
		t.Fatalf("%s's Run did not return", p.name)
	}
}

func (p *puppet) notStarted(t *testing.T) {
	t.Helper()
	select {
	case <-p.started:
		t.Fatalf("%s was started again before its backoff ran out", p.name)
	default:
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newMaintainer(clock *clocktest.Clock) (*maintenance.Maintainer, *syncBuffer) {
	var logs syncBuffer
	m := maintenance.New(maintenance.Config{Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MinBackoff: time.Second, MaxBackoff: 8 * time.Second})
	return m, &logs
}

func status(t *testing.T, m *maintenance.Maintainer, name string) maintenance.Status {
	t.Helper()
	for _, s := range m.Status() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status for %s", name)
	return maintenance.Status{}
}

// waitTimers waits until the maintainer waits on n timers of the clock.
func waitTimers(t *testing.T, clock *clocktest.Clock, n int) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(waitTimeout, func() { close(done) })
	defer timer.Stop()
	if !clock.WaitTimers(n, done) {
		t.Fatalf("the maintainer did not wait for a backoff (%d timers, want %d)", clock.Timers(), n)
	}
}

// A failing service is logged with its error, counted, reported as
// restarting, and run again after a backoff that doubles with each failure
// in a row, up to the most; a run that lasted the longest backoff starts
// the count again. The other services run on meanwhile.
func TestFailedServiceIsReportedAndRestartedWithBackoff(t *testing.T) {
	clock := clocktest.New()
	m, logs := newMaintainer(clock)
	bad, good := newPuppet("bad"), newPuppet("good")
	m.Add(bad, good)
	m.Start(context.Background())
	defer m.Stop()
	bad.waitStarted(t)
	good.waitStarted(t)
	if s := status(t, m, "bad"); !s.Up() || s.Failures != 0 {
		t.Fatalf("bad at start = %+v, want running without failures", s)
	}

	fail := func() {
		t.Helper()
		bad.exit <- func() error { return errors.New("store unreachable") }
		waitTimers(t, clock, 1)
	}
	// Each wait is the backoff: not a nanosecond less.
	for i, backoff := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		fail()
		s := status(t, m, "bad")
		if s.State != maintenance.StateRestarting || s.Up() || s.Failures != i+1 || s.LastError == nil || s.LastError.Error() != "store unreachable" {
			t.Fatalf("bad after failure %d = %+v, want restarting, %d failures, the error", i+1, s, i+1)
		}
		clock.Advance(backoff - time.Nanosecond)
		bad.notStarted(t)
		clock.Advance(time.Nanosecond)
		bad.waitStarted(t)
	}
	if !status(t, m, "good").Up() {
		t.Error("good stopped running while bad failed")
	}
	// A run as long as the longest backoff: the next failure waits the
	// shortest again.
	clock.Advance(8 * time.Second)
	fail()
	clock.Advance(time.Second)
	bad.waitStarted(t)

	log := logs.String()
	if n := strings.Count(log, `msg="background service failed; restarting it after a backoff" service=bad err="store unreachable"`); n != 6 {
		t.Errorf("%d failure lines, want 6:\n%s", n, log)
	}
	for _, want := range []string{"restart_in=1s failures=1", "restart_in=8s failures=5", "restart_in=1s failures=6"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A panic is a failure like an error: recovered, logged with its stack, and
// the service restarted; the process goes on.
func TestPanickingServiceIsRestarted(t *testing.T) {
	clock := clocktest.New()
	m, logs := newMaintainer(clock)
	p := newPuppet("crashy")
	m.Add(p)
	m.Start(context.Background())
	defer m.Stop()
	p.waitStarted(t)
	p.exit <- func() error { panic("nil map") }
	waitTimers(t, clock, 1)
	s := status(t, m, "crashy")
	if s.State != maintenance.StateRestarting || s.Failures != 1 || s.LastError == nil || s.LastError.Error() != "panic: nil map" {
		t.Fatalf("after a panic = %+v", s)
	}
	if log := logs.String(); !strings.Contains(log, `err="panic: nil map"`) || !strings.Contains(log, "stack=") || !strings.Contains(log, "maintenance_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", log)
	}
	clock.Advance(time.Second)
	p.waitStarted(t)
}

// A service whose Run returns nil on its own has nothing to do: it is left
// exited, not restarted, and not counted as a failure.
func TestServiceThatReturnsNilIsNotRestarted(t *testing.T) {
	clock := clocktest.New()
	m, logs := newMaintainer(clock)
	p := newPuppet("watchdog")
	m.Add(p)
	m.Start(context.Background())
	defer m.Stop()
	p.waitStarted(t)
	p.exit <- func() error { return nil }
	p.waitStopped(t)
	deadline := time.Now().Add(waitTimeout)
	for status(t, m, "watchdog").State != maintenance.StateExited {
		if time.Now().After(deadline) {
			t.Fatalf("state = %+v, want exited", status(t, m, "watchdog"))
		}
		time.Sleep(time.Millisecond)
	}
	if s := status(t, m, "watchdog"); s.Failures != 0 || s.Up() {
		t.Errorf("exited service = %+v", s)
	}
	clock.Advance(time.Hour)
	p.notStarted(t)
	if clock.Timers() != 0 {
		t.Errorf("the maintainer waits on %d timers for an exited service", clock.Timers())
	}
	if !strings.Contains(logs.String(), "exited; not restarted") {
		t.Errorf("no exit line:\n%s", logs.String())
	}
}

// Stop ends every service, the running and the one waiting out its backoff,
// and returns only once every Run has returned.
func TestStopStopsEveryService(t *testing.T) {
	clock := clocktest.New()
	m, logs := newMaintainer(clock)
	a, b, slow := newPuppet("a"), newPuppet("b"), newPuppet("slow")
	slow.slowStop = make(chan struct{})
	m.Add(a, b, slow)
	m.Start(context.Background())
	a.waitStarted(t)
	b.waitStarted(t)
	slow.waitStarted(t)
	b.exit <- func() error { return errors.New("boom") }
	waitTimers(t, clock, 1)
	b.waitStopped(t)

	stopped := make(chan struct{})
	go func() { m.Stop(); close(stopped) }()
	a.waitStopped(t)
	select {
	case <-stopped:
		t.Fatal("Stop returned while a service was still stopping")
	case <-time.After(10 * time.Millisecond):
	}
	close(slow.slowStop)
	slow.waitStopped(t)
	select {
	case <-stopped:
	case <-time.After(waitTimeout):
		t.Fatal("Stop did not return")
	}
	for _, s := range m.Status() {
		if s.State != maintenance.StateStopped {
			t.Errorf("%s = %s after Stop, want stopped", s.Name, s.State)
		}
	}
	clock.Advance(time.Hour)
	b.notStarted(t)
	m.Stop() // again: returns at once
	if !strings.Contains(logs.String(), "background services stopped") {
		t.Errorf("no stop line:\n%s", logs.String())
	}
}

// The context given to Start stops the services too.
func TestStartContextStopsServices(t *testing.T) {
	m, _ := newMaintainer(clocktest.New())
	p := newPuppet("p")
	m.Add(p)
	ctx, cancel := context.WithCancel(context.Background())
	m.Start(ctx)
	p.waitStarted(t)
	cancel()
	p.waitStopped(t)
	m.Stop()
	if s := status(t, m, "p"); s.State != maintenance.StateStopped || s.Failures != 0 {
		t.Errorf("after ctx ended = %+v", s)
	}
}

func TestAddRefusesDuplicateNames(t *testing.T) {
	m := maintenance.New(maintenance.Config{})
	m.Add(maintenance.Loop("reaper", func(context.Context) {}))
	defer func() {
		if recover() == nil {
			t.Error("a second service named reaper was accepted")
		}
	}()
	m.Add(maintenance.Loop("reaper", func(context.Context) {}))
}
