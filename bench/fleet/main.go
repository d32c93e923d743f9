// Command fleet is the fleet-scale scenario (make bench-fleet): `tether
// serve`, in its own process and with its default caps, over a SQLite file
// holding 50,000 clusters with a registered agent each; 50,000 simulated
// agents in this process, spread over 127.0.0.x source addresses (at most
// 200 an address, under the per-address caps), each holding a long poll on
// a keep-alive connection of its own and heartbeating every 30 s, while 200
// jobs a second are submitted to random clusters. It measures serve's
// resident memory with the polls held, the wake-up latency from a submit's
// commit to the held poll's answer, whether every heartbeat was answered,
// and the console's first frame over that fleet. It prints a table and
// writes bench/results/fleet.json in the format of latest.json.
//
// The open-file limit is raised here (and inherited by serve) to what the
// fleet needs; where the hard limit cannot be raised the agents are scaled
// down to fit, and the table says so. Every cluster of the fleet is still
// registered (the console's first frame is measured over all of them);
// jobs go to the clusters whose agents run. serve holds one descriptor per
// agent's connection, so its own limit bounds the fleet, however the
// agents' side is split.
//
// Beside the table it splits each wake-up at serve's look (diagnose.go)
// and reports this process's own scheduling delay; -profile saves serve's
// CPU profile and execution trace.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tetherhq/tether/bench/internal/benchresult"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

var admin = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "bench-fleet"})

type options struct {
	agents    int
	perAddr   int
	rate      int
	steady    time.Duration
	wait      int
	heartbeat time.Duration
	keep      bool
	tether    string
	profile   string
	profileAt time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.agents, "agents", 50000, "simulated agents (one cluster each)")
	flag.IntVar(&o.perAddr, "per-address", 200, "agents per 127.0.0.x source address (serve's default caps: 512 polls, 1,024 connections an address)")
	flag.IntVar(&o.rate, "rate", 200, "jobs submitted per second, to random clusters")
	flag.DurationVar(&o.steady, "steady", 3*time.Minute, "how long the fleet runs at its rate once every poll is held")
	flag.IntVar(&o.wait, "wait", 30, "a poll's wait, in seconds")
	flag.DurationVar(&o.heartbeat, "heartbeat", 30*time.Second, "each agent's ClusterHeartbeat period")
	flag.BoolVar(&o.keep, "keep", false, "keep the fleet's database (its path is printed)")
	flag.StringVar(&o.tether, "tether", "", "run this tether binary as serve instead of building this checkout's (a before/after)")
	flag.StringVar(&o.profile, "profile", "", "write serve's CPU profile and an execution trace, and the agents' CPU profile, taken a third into the steady state, into this directory")
	flag.DurationVar(&o.profileAt, "profile-at", -1, "with -profile: how far into the steady state the profiles start (default a third of it; 0 profiles its first seconds, where the wake-up tail was)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-fleet: "+format+"\n", args...)
}

// raiseOpenFiles raises this process's open-file limit (serve inherits it)
// to what n agents need: one descriptor per agent on each side, and room
// for the database, the listener and the console. It returns how many
// agents fit, fewer than n when the hard limit cannot be raised.
func raiseOpenFiles(n int) (int, string) {
	const room = 2000
	need := uint64(n + room)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return n, ""
	}
	if lim.Max < need {
		// Raising the hard limit needs CAP_SYS_RESOURCE (root, outside a
		// container that drops it).
		up := syscall.Rlimit{Cur: need, Max: need}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up); err == nil {
			return n, ""
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return n, ""
	}
	if lim.Cur >= need {
		return n, ""
	}
	fit := int(lim.Cur) - room
	return fit, fmt.Sprintf("the open-file hard limit is %d and cannot be raised here (raising it needs CAP_SYS_RESOURCE; or run under ulimit -Hn %d): the fleet is %d agents, not %d",
		lim.Cur, need, fit, n)
}

func run(ctx context.Context, o options) error {
	start := time.Now()
	agents, scaled := raiseOpenFiles(o.agents)
	if scaled != "" {
		logf("%s", scaled)
	}
	if agents < 1 {
		return fmt.Errorf("no room for any agent: %s", scaled)
	}
	root, err := benchresult.ModuleRoot("make bench-fleet")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "tether-bench-fleet-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	logf("building tether and the console's benchmark ...")
	bin, consoleBench, err := build(root, dir)
	if err != nil {
		return err
	}
	if o.tether != "" {
		bin = o.tether
	}
	if o.keep {
		logf("the fleet's database: %s", filepath.Join(dir, "tether.db"))
	}

	db := filepath.Join(dir, "tether.db")
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	reg := registry.New(st, registry.Config{})
	defer reg.Close()
	t0 := time.Now()
	// Every cluster of the fleet is registered, however many agents fit:
	// the console's first frame is measured over all of them. Only the
	// first `agents` run (and get jobs); the others are silent clusters.
	all, err := seed(ctx, reg, o.agents, o.perAddr)
	if err != nil {
		return err
	}
	fleet := all[:agents]
	logf("%d clusters with an agent each, registered in %s; %d of the agents run", len(all), time.Since(t0).Round(time.Second), agents)

	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	diag, err := freeAddr()
	if err != nil {
		return err
	}
	srv, err := startServe(ctx, bin, db, diag)
	if err != nil {
		return err
	}
	defer srv.stop()
	time.Sleep(time.Second)
	idleRSS := srv.rss()

	probe := &schedProbe{}
	pctx, endProbe := context.WithCancel(ctx)
	defer endProbe()
	counts := &counters{}
	fr := &fleetRun{addr: srv.addr, wait: o.wait, heartbeat: o.heartbeat, counts: counts, arrivals: newArrivals()}
	actx, cancelAgents := context.WithCancel(ctx)
	defer cancelAgents()
	var wg sync.WaitGroup
	t0 = time.Now()
	for i, a := range fleet {
		if i%500 == 499 {
			// 2,000 agents a second: each first poll authenticates (a
			// read) and looks (a write), and the listen backlog is finite.
			time.Sleep(250 * time.Millisecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fr.run(actx, a)
		}()
	}
	// Every agent polling, but those between an answer and their next poll
	// (a fleet polling every 30 s re-polls 1,667 times a second at 50,000).
	// Counted here: serve's gauge is on /metrics, which lists every
	// cluster and is too slow to scrape often at this size.
	for {
		polling := int(counts.polling.Load())
		if polling >= agents*99/100 {
			logf("%d polls outstanding after %s; submitting %d jobs/s for %s", polling, time.Since(t0).Round(time.Second), o.rate, o.steady)
			break
		}
		if time.Since(t0) > 5*time.Minute {
			return fmt.Errorf("only %d of %d polls outstanding after 5 minutes (%d agents connected; first error: %v)", polling, agents, counts.connected.Load(), counts.firstErr.Load())
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Second)
	}
	time.Sleep(5 * time.Second) // the last first polls' looks
	go probe.run(pctx)
	steadyStart := time.Now()
	// The steady state: jobs to random clusters at the rate, and serve's
	// memory and the held polls sampled every second.
	mem := &memory{}
	sctx, endSteady := context.WithTimeout(ctx, o.steady)
	defer endSteady()
	submitted := make(chan error, 1)
	go func() { submitted <- submit(sctx, reg, fleet, o.rate, fr.arrivals) }()
	go mem.sample(sctx, srv, counts)
	if o.profile != "" {
		go func() {
			at := o.profileAt
			if at < 0 {
				at = o.steady / 3
			}
			sleep(sctx, at)
			if sctx.Err() == nil {
				srv.profile(sctx, o.profile, min(20*time.Second, o.steady/3))
			}
		}()
	}
	// The console opens over the fleet halfway through, as on-call would.
	var frame consoleFrame
	go func() {
		sleep(sctx, o.steady/2)
		if sctx.Err() == nil {
			frame = firstFrame(consoleBench, db)
		}
	}()
	<-sctx.Done()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := <-submitted; err != nil {
		return err
	}
	// The last jobs' answers.
	for i := 0; i < 50 && fr.arrivals.pending() > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	gauge := srv.heldPolls() // serve's own count, once
	cancelAgents()
	wg.Wait()
	endProbe()
	fr.arrivals.mu.Lock()
	recs := slices.Clone(fr.arrivals.recs)
	fr.arrivals.mu.Unlock()
	split, err := splitWakeups(ctx, db, recs, steadyStart)
	if err != nil {
		logf("could not split the wake-ups at serve's look: %v", err)
	}
	// Heartbeats in flight when the run ended are not counted.
	hbSent, hbOK := counts.heartbeats.Load(), counts.heartbeatsOK.Load()

	load, _ := os.ReadFile("/proc/loadavg")
	return report(root, reportInput{
		o: o, agents: agents, scaled: scaled, idleRSS: idleRSS, mem: mem, counts: counts,
		heartbeatsSent: hbSent, heartbeatsOK: hbOK, arrivals: fr.arrivals, frame: frame,
		load: strings.TrimSpace(string(load)), took: time.Since(start), gauge: gauge,
		split: split, probe: probe,
	})
}

// seed creates n clusters with a registered agent each, directly in the
// database (32 at a time, so that group commit batches them), and gives
// each agent its source address.
func seed(ctx context.Context, reg *registry.Registry, n, perAddr int) ([]agent, error) {
	if (n+perAddr-1)/perAddr > 250 {
		return nil, fmt.Errorf("%d agents at %d an address need more than 250 addresses of 127.0.0.x; raise -per-address", n, perAddr)
	}
	fleet := make([]agent, n)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: fmt.Sprintf("edge-%05d", i), AllowedNamespaces: []string{"default"}}, 0)
				if err == nil {
					var cred *registry.IssuedCredential
					if cred, err = reg.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal()}); err == nil {
						fleet[i] = agent{cluster: c.ID, bearer: cred.Token.Reveal(), from: net.IPv4(127, 0, 0, byte(2+i/perAddr))}
						continue
					}
				}
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		if i%10000 == 9999 {
			logf("  %d clusters ...", i+1)
		}
		select {
		case work <- i:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("seed the fleet: %w", first)
	}
	return fleet, ctx.Err()
}

// submit queues rate jobs a second on random clusters until ctx ends, from
// 8 producers sharing the schedule, and records each submit's commit.
func submit(ctx context.Context, reg *registry.Registry, fleet []agent, rate int, arr *arrivals) error {
	payload := []byte(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"default"}`)
	slots := make(chan struct{}, rate)
	go func() {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				close(slots)
				return
			case <-t.C:
				select {
				case slots <- struct{}{}:
				default: // the producers are behind; the table shows the rate reached
				}
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range slots {
				a := fleet[rand.N(len(fleet))]
				j, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: a.cluster, Kind: registry.KindDelete, Payload: payload})
				if registry.ErrorCode(err) == registry.CodeUnavailable {
					// The file is locked by serve's writer for longer than
					// the store waits: this slot's job is not submitted.
					arr.refused.Add(1)
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("submit: %w", err)
					}
					return
				}
				arr.submit(j.ID, time.Now())
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// memory is serve's resident memory and held polls, sampled each second of
// the steady state.
type memory struct {
	mu      sync.Mutex
	rss     []int64
	held    []int
	peakRSS int64
}

func (m *memory) sample(ctx context.Context, srv *serve, counts *counters) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r := srv.rss()
		m.mu.Lock()
		m.held = append(m.held, int(counts.polling.Load()))
		m.rss = append(m.rss, r)
		m.peakRSS = max(m.peakRSS, r)
		m.mu.Unlock()
	}
}

// steady returns the median of the samples and the fewest polls held.
func (m *memory) steady() (rss int64, fewestHeld int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.rss) == 0 {
		return 0, 0
	}
	s := slices.Clone(m.rss)
	slices.Sort(s)
	return s[len(s)/2], slices.Min(m.held)
}

// build compiles tether and the console's benchmark binary into dir.
func build(root, dir string) (bin, consoleBench string, err error) {
	bin = filepath.Join(dir, "tether")
	consoleBench = filepath.Join(dir, "tui.test")
	for _, args := range [][]string{
		{"build", "-o", bin, "./cmd/tether"},
		{"test", "-c", "-o", consoleBench, "./tui"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return bin, consoleBench, nil
}
