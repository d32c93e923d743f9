// Package maintenance runs a process's background services: it starts them
// together, restarts one that fails, stops them together, and says what each
// is doing. tether serve runs the registry's services (reaper, pruner,
// retention, search index merging, rollouts), the webhook sender, the
// signature audit, the certificate and key reloaders and the diagnostics
// listener under one Maintainer, as River runs its queue maintenance
// services.
//
// A service is restarted the way systemd's Restart=on-failure restarts a
// unit, with the backoff a supervisor tree (Erlang's, suture's) gives it:
//
//   - Run returning an error, or panicking, before the service is stopped is
//     a failure. It is logged (a panic with its stack), counted, and the
//     service started again after a backoff that doubles from MinBackoff up
//     to MaxBackoff with each failure in a row. A run that lasted MaxBackoff
//     or more starts the count again, so that a service failing once a day
//     is retried within a second and one failing in a loop costs one
//     attempt a minute.
//   - Run returning nil before the service is stopped means the service has
//     nothing (more) to do: it is logged and left exited, not restarted.
//   - A failure never stops the process: the agent API answers on while the
//     reaper, say, retries, and tether_service_up shows which service is
//     down. The one thing whose end ends the process, the agent API's
//     listener, is not a maintained service.
//
// Stop cancels every service's context and waits for all of them to return;
// services are expected to return promptly when their context ends.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Service is one background service of the process.
type Service interface {
	// Name identifies the service in logs and metrics: short, lower case,
	// unique within a Maintainer ("reaper", "webhook-sender").
	Name() string
	// Run does the service's work until ctx ends, then returns (the error is
	// then ignored unless it is more than ctx's). See the package comment
	// for what an earlier return means.
	Run(ctx context.Context) error
}

// Func makes a Service of a name and a function.
func Func(name string, run func(ctx context.Context) error) Service {
	return funcService{name: name, run: run}
}

type funcService struct {
	name string
	run  func(context.Context) error
}

func (f funcService) Name() string                  { return f.name }
func (f funcService) Run(ctx context.Context) error { return f.run(ctx) }

// Loop makes a Service of a function that runs until its context ends and
// cannot fail (it reports its own errors and retries, as the registry's
// services do): the shape of registry.Reaper.Run and its kin.
func Loop(name string, run func(ctx context.Context)) Service {
	return Func(name, func(ctx context.Context) error { run(ctx); return nil })
}

// Clock is the time the Maintainer's backoff runs on: a
// registry/clocktest.Clock in tests.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Backoff defaults.
const (
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// Config configures a Maintainer. The zero value logs nowhere, on real time,
// with the default backoff.
type Config struct {
	Logger     *slog.Logger
	Clock      Clock         // nil: real time
	MinBackoff time.Duration // DefaultMinBackoff: the wait after a first failure
	MaxBackoff time.Duration // DefaultMaxBackoff: the longest wait
}

// State is what a service is doing.
type State string

const (
	StateIdle       State = "idle"       // not started yet
	StateRunning    State = "running"    // Run has been called and has not returned
	StateRestarting State = "restarting" // Run failed; it is called again after the backoff
	StateExited     State = "exited"     // Run returned nil on its own: nothing to do
	StateStopped    State = "stopped"    // stopped by Stop
)

// Status is one service's state, as Status reports it.
type Status struct {
	Name     string
	State    State
	Since    time.Time // when it entered State
	Failures int       // failed runs since Start
	// LastError is the last failure's error (a panic's value); nil if none.
	LastError error
}

// Up says whether the service is running.
func (s Status) Up() bool { return s.State == StateRunning }

// Maintainer runs a set of services. Add them, then Start; Stop ends them.
type Maintainer struct {
	cfg   Config
	log   *slog.Logger
	clock Clock

	mu       sync.Mutex
	entries  []*entry
	names    map[string]bool
	started  bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

type entry struct {
	svc    Service
	status Status // guarded by Maintainer.mu
}

// New returns a Maintainer with no services.
func New(cfg Config) *Maintainer {
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	m := &Maintainer{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, names: map[string]bool{}}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if m.clock == nil {
		m.clock = realClock{}
	}
	return m
}

// Add registers services, to be started by Start. It panics when called
// after Start, or with a name already taken or empty: both are mistakes of
// the program, not of its input.
func (m *Maintainer) Add(svcs ...Service) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		panic("maintenance: Add after Start")
	}
	for _, s := range svcs {
		name := s.Name()
		if name == "" || m.names[name] {
			panic(fmt.Sprintf("maintenance: service name %q is empty or taken", name))
		}
		m.names[name] = true
		m.entries = append(m.entries, &entry{svc: s, status: Status{Name: name, State: StateIdle, Since: m.clock.Now()}})
	}
}

// Start runs every service in a goroutine of its own, with a context derived
// from ctx: each stops when ctx ends or Stop is called. It returns at once.
// Start may be called once.
func (m *Maintainer) Start(ctx context.Context) {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		panic("maintenance: Start after Start or Stop")
	}
	m.started = true
	ctx, m.cancel = context.WithCancel(ctx)
	names := make([]string, len(m.entries))
	for i, e := range m.entries {
		names[i] = e.status.Name
		m.wg.Add(1)
		go m.supervise(ctx, e)
	}
	m.mu.Unlock()
	if len(names) > 0 {
		m.log.Info("background services started", "services", names)
	}
}

// Stop cancels every service's context and waits until all have returned.
// Later calls return at once; a Maintainer never started stops at once.
func (m *Maintainer) Stop() {
	m.stopOnce.Do(func() {
		m.mu.Lock()
		cancel, started := m.cancel, m.started
		m.started = true // no Start after Stop
		m.mu.Unlock()
		if !started || cancel == nil {
			return
		}
		cancel()
		m.wg.Wait()
		m.log.Info("background services stopped")
	})
}

// Status returns every service's state, in the order they were added.
func (m *Maintainer) Status() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, len(m.entries))
	for i, e := range m.entries {
		out[i] = e.status
	}
	return out
}

// supervise runs one service until ctx ends, restarting it after failures.
func (m *Maintainer) supervise(ctx context.Context, e *entry) {
	defer m.wg.Done()
	name := e.status.Name
	backoff := m.cfg.MinBackoff
	for {
		began := m.set(e, StateRunning, nil)
		m.log.Debug("background service started", "service", name)
		err := run(ctx, e.svc)
		if ctx.Err() != nil {
			m.set(e, StateStopped, nil)
			if err != nil && !errors.Is(err, ctx.Err()) {
				m.log.Warn("background service stopped with an error", "service", name, "err", err)
			} else {
				m.log.Debug("background service stopped", "service", name)
			}
			return
		}
		if err == nil {
			m.set(e, StateExited, nil)
			m.log.Info("background service has nothing to do and exited; not restarted", "service", name)
			return
		}
		if m.clock.Now().Sub(began) >= m.cfg.MaxBackoff {
			backoff = m.cfg.MinBackoff // it had run well: a fresh failure
		}
		m.set(e, StateRestarting, err)
		attrs := []any{"service", name, "err", err, "restart_in", backoff, "failures", m.failures(e)}
		var p *panicError
		if errors.As(err, &p) {
			attrs = append(attrs, "stack", string(p.stack))
		}
		m.log.Error("background service failed; restarting it after a backoff", attrs...)
		select {
		case <-ctx.Done():
			m.set(e, StateStopped, nil)
			return
		case <-m.clock.After(backoff):
		}
		backoff = min(2*backoff, m.cfg.MaxBackoff)
	}
}

// set records e's new state and returns when it began; a failure (err not
// nil) is counted.
func (m *Maintainer) set(e *entry, s State, err error) time.Time {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e.status.State, e.status.Since = s, now
	if err != nil {
		e.status.Failures++
		e.status.LastError = err
	}
	return now
}

func (m *Maintainer) failures(e *entry) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return e.status.Failures
}

// panicError is a service's panic, turned into its failure.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// run calls s.Run, turning a panic into an error.
func run(ctx context.Context, s Service) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return s.Run(ctx)
}
