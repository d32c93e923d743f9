package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/cmd/tether/internal/demo"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

func init() { register(newDemoCmd) }

type demoOptions struct {
	clusters int
	rate     float64
	listen   string
	headless bool
	theme    string
}

func newDemoCmd(g *globals) *cobra.Command {
	var opts demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a simulated fleet against a real tether and open the console over it",
		Long: `Starts the agent API on a fresh database (a temporary file, unless --db or
$TETHER_DB names one), creates clusters with real registration tokens, and runs
simulated agents that register and work through the real HTTP API while a
producer submits jobs: ApplicationInstance applies from a small catalog,
backups (request-operation) and deletes.

Some agents misbehave on purpose, so that the console has something to show:
one dies mid-job holding a lease (the reaper requeues its job), one loses a
job it holds without a lease (stuck, for on-call), one goes silent, one
reports a Degraded condition, one hits conflicts.

On a terminal the console opens over the fleet; with --headless (or without a
terminal) a one-line summary is printed until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.clusters < 1 || opts.clusters > 10 {
				return usagef("--clusters must be between 1 and 10")
			}
			if opts.rate <= 0 || opts.rate > 100 {
				return usagef("--rate must be more than 0 and at most 100 jobs per second")
			}
			explicitDB := cmd.Flag("db").Changed || os.Getenv("TETHER_DB") != ""
			return runDemo(cmd.Context(), g, opts, explicitDB)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.clusters, "clusters", 6, "simulated clusters (1 to 10)")
	f.Float64Var(&opts.rate, "rate", 1, "jobs submitted per second")
	f.StringVar(&opts.listen, "listen", "127.0.0.1:0", "address of the agent API (port 0 picks a free one)")
	f.BoolVar(&opts.headless, "headless", false, "print a one-line summary instead of opening the console")
	f.StringVar(&opts.theme, "theme", "", "console theme (see tether console --help)")
	return cmd
}

func runDemo(ctx context.Context, g *globals, opts demoOptions, explicitDB bool) error {
	headless := opts.headless || terminalProblem(g.stdout) != ""
	copts := consoleOptions{serve: true, listen: opts.listen, theme: opts.theme, start: "overview"}
	if !explicitDB {
		dir, err := os.MkdirTemp("", "tether-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		g.db = filepath.Join(dir, "demo.db")
	}
	var themeChoice themes.Choice
	if !headless {
		c, err := consoleChoice(g, copts)
		if err != nil {
			return err
		}
		themeChoice = c
	}
	a, err := openApp(ctx, g, registry.Config{})
	if err != nil {
		return err
	}
	defer a.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr, wait, closeLog, err := serveBeside(ctx, g, a, opts.listen)
	if err != nil {
		return err
	}
	defer closeLog()
	fleet, err := demo.New(ctx, demo.Config{Registry: a.reg, ServerURL: "http://" + addr, Clusters: opts.clusters, Rate: opts.rate})
	if err != nil {
		return err
	}
	fleetDone := make(chan struct{})
	go func() {
		defer close(fleetDone)
		fleet.Run(ctx)
	}()

	var runErr error
	if headless {
		fmt.Fprintf(g.stdout, "tether demo: %d simulated clusters on %s, database %s (server log %s); Ctrl-C stops.\n",
			opts.clusters, "http://"+addr, a.store.Path(), serveLogPath(g))
		runErr = demoSummary(ctx, g.stdout, a.reg, fleet, terminalProblem(g.stdout) == "")
	} else {
		runErr = showConsole(ctx, g, a, themeChoice, copts, addr)
	}
	cancel()
	<-fleetDone
	if err := wait(); err != nil && runErr == nil {
		runErr = err
	}
	if ctx.Err() != nil && runErr == context.Canceled {
		runErr = nil
	}
	return runErr
}

// demoSummary prints a one-line summary of the fleet every second (in place
// on a terminal; a line every five seconds otherwise) until ctx ends.
func demoSummary(ctx context.Context, w io.Writer, reg *registry.Registry, fleet *demo.Fleet, inPlace bool) error {
	every := time.Second
	if !inPlace {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			if inPlace {
				fmt.Fprintln(w)
			}
			return nil
		case <-t.C:
		}
		line, err := summarize(ctx, reg, fleet, time.Since(start))
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return err
		}
		if inPlace {
			fmt.Fprintf(w, "\r\x1b[K%s", line)
		} else {
			fmt.Fprintln(w, line)
		}
	}
}

func summarize(ctx context.Context, reg *registry.Registry, fleet *demo.Fleet, elapsed time.Duration) (string, error) {
	clusters, err := reg.ListClusters(ctx, registry.ClusterListParams{})
	if err != nil {
		return "", err
	}
	now := reg.Now()
	active, silent, degraded := 0, 0, 0
	for i := range clusters {
		c := &clusters[i]
		if c.State == registry.ClusterActive {
			active++
		}
		if c.Silent(now) {
			silent++
		}
		if len(c.FalseConditions()) > 0 {
			degraded++
		}
	}
	counts, err := reg.JobCounts(ctx)
	if err != nil {
		return "", err
	}
	by := map[registry.JobState]int64{}
	for _, c := range counts {
		by[c.State] += c.Count
	}
	stuck, err := reg.CountJobs(ctx, registry.JobListParams{States: []registry.JobState{registry.JobInProgress}, NoLease: true, ActivityBefore: now.Add(-2 * time.Minute)})
	if err != nil {
		return "", err
	}
	parts := []string{
		fmt.Sprintf("clusters %d active/%d", active, len(clusters)),
		fmt.Sprintf("%d silent", silent),
		fmt.Sprintf("%d degraded", degraded),
		fmt.Sprintf("jobs queued %d in progress %d", by[registry.JobQueued], by[registry.JobInProgress]),
		fmt.Sprintf("done %d failed %d conflict %d noop %d", by[registry.JobSucceeded], by[registry.JobFailed], by[registry.JobConflict], by[registry.JobNoop]),
		fmt.Sprintf("stuck %d", stuck),
		fmt.Sprintf("submitted %d (%.1f/s)", fleet.Submitted(), float64(fleet.Submitted())/elapsed.Seconds()),
	}
	return strings.Join(parts, " | "), nil
}
