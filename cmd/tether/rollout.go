package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/internal/humantime"
	"github.com/tetherhq/tether/registry"
)

func init() { register(newRolloutCmd) }

// exitRolloutUnsuccessful is rollout create --wait's exit code for a rollout
// that ended (or halted) with failures, as job submit --wait uses it for a
// job that ended unsuccessfully.
const exitRolloutUnsuccessful = 3

func newRolloutCmd(g *globals) *cobra.Command {
	return groupCommand("rollout", "Roll one job across the clusters a label selector picks, in waves",
		newRolloutCreateCmd(g),
		newRolloutListCmd(g),
		newRolloutGetCmd(g),
		newRolloutActionCmd(g, "pause", "Stop starting new waves; running jobs finish", admin.Service.PauseRollout),
		newRolloutActionCmd(g, "resume", "Continue a paused or halted rollout (a halted one accepts its failures so far)", admin.Service.ResumeRollout),
		newRolloutActionCmd(g, "abort", "End a rollout: cancel its queued jobs and skip the targets not reached", admin.Service.AbortRollout),
		newRolloutActionCmd(g, "retry-failed", "Give failed and refused targets a new job in a later wave", admin.Service.RetryFailedRollout),
	)
}

func newRolloutCreateCmd(g *globals) *cobra.Command {
	var (
		spec                 registry.RolloutSpec
		kind, file, payload  string
		wait                 bool
		timeout, pauseBetwen time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create --selector SELECTOR --kind KIND (-f FILE | --payload JSON)",
		Short: "Roll a job out across clusters by label, wave by wave",
		Long: `Create a rollout: one job (kind and payload) rolled across every cluster the
label selector matches now. The set of targets is frozen at creation and
listed; targets whose allowlists refuse the payload are shown as refused with
the rule before anything runs (--dry-run stops there).

Jobs are created wave by wave: a wave starts at most --max-parallel targets,
the next starts when the previous has finished (and --pause-between has
passed). A target whose job fails, conflicts, expires or is canceled, or whose
cluster is disabled or deleted, is a failure; past --max-failures the rollout
halts. 'tether serve' advances rollouts; so does --wait while it waits.

With --wait the command blocks until the rollout completes, halts or is
aborted, and exits 0 if every target succeeded, 3 otherwise, and 4 when
--timeout runs out first (the rollout carries on).`,
		Example: `  tether rollout create --selector 'env=prod,!canary' --kind apply -f app.json --max-parallel 5 --max-failures 1
  tether rollout create --selector 'region in (eu,us)' --kind intent -f backup.json --order label=wave --pause-between 10m
  tether rollout create --selector env=staging --kind apply -f app.json --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(spec.Selector) == "" {
				return usagef("rollout create needs --selector SELECTOR, such as env=prod")
			}
			if kind == "" {
				return usagef("rollout create needs --kind apply, delete or intent")
			}
			var err error
			if spec.Kind, err = parseKind(kind); err != nil {
				return err
			}
			fl := cmd.Flags()
			useFile, err := payloadFromFile(fl, "rollout create")
			if err != nil {
				return err
			}
			if typed(fl, "timeout") && !wait {
				return usagef("--timeout applies only with --wait")
			}
			if wait && spec.DryRun {
				return usagef("--wait and --dry-run cannot be combined: a dry run starts nothing to wait for")
			}
			spec.Payload = []byte(payload)
			if useFile {
				if spec.Payload, err = readPayload(g.stdin, file); err != nil {
					return err
				}
			}
			spec.PauseBetween = pauseBetwen
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			ro, err := api.CreateRollout(adminContext(ctx), spec)
			if err != nil {
				return err
			}
			if !wait {
				if g.output == "json" {
					return printJSON(g.stdout, ro)
				}
				if spec.DryRun {
					fmt.Fprintf(g.stdout, "Dry run: rollout %s would reach %d clusters; nothing was created.\n\n", ro.Name, len(ro.Targets))
				} else {
					fmt.Fprintf(g.stdout, "Created rollout %s (%s).\n\n", ro.Name, ro.ID)
				}
				return printRollout(g.stdout, api.Now(), ro)
			}
			if g.output == "table" {
				fmt.Fprintf(g.stderr, "Created rollout %s (%s) over %s; waiting for it to end (Ctrl-C stops waiting, not the rollout).\n", ro.Name, ro.ID, count(len(ro.Targets), "cluster", "clusters"))
			}
			return waitRollout(ctx, g, api, ro, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&spec.Selector, "selector", "l", "", "label selector of the target clusters, e.g. 'env=prod,region in (eu,us),!canary' (required)")
	f.StringVar(&kind, "kind", "", "apply, delete or intent (required)")
	f.StringVarP(&file, "file", "f", "", "read the JSON payload from FILE, or from standard input with -")
	f.StringVar(&payload, "payload", "", "the JSON payload")
	f.StringVar(&spec.Name, "name", "", "the rollout's name (default: KIND-<random>)")
	f.IntVar(&spec.MaxParallel, "max-parallel", registry.DefaultRolloutMaxParallel, "targets a wave starts at most")
	f.IntVar(&spec.MaxFailures, "max-failures", 0, "failures tolerated before the rollout halts")
	f.Var(newDuration(&pauseBetwen, 0), "pause-between", "wait this long after a wave ends before the next starts")
	f.StringVar(&spec.Order, "order", registry.RolloutOrderName, "order of the targets: name, or label=KEY (by that label's value, then name)")
	f.BoolVar(&spec.DryRun, "dry-run", false, "list the targets and refusals, create nothing")
	f.BoolVar(&wait, "wait", false, "wait until the rollout completes, halts or is aborted; exit 0 if every target succeeded, 3 otherwise, 4 if --timeout runs out first")
	f.Var(newDuration(&timeout, 0), "timeout", "with --wait, give up waiting after this long (exit 4; the rollout carries on)")
	return cmd
}

// waitRollout advances the rollout itself while it waits (safe alongside any
// number of servers doing the same), so that --wait works without one; over
// the admin API it reads the rollout, which the server advances.
func waitRollout(ctx context.Context, g *globals, reg admin.Service, ro *registry.Rollout, timeout time.Duration) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(registry.DefaultRolloutInterval)
	defer tick.Stop()
	for ro.State == registry.RolloutRunning || ro.State == registry.RolloutPaused || ro.Counts[registry.TargetRunning] > 0 {
		select {
		case <-ctx.Done():
			return failf("stopped waiting for rollout %s, which carries on; look at it with: tether rollout get %s", ro.Name, ro.Name)
		case <-deadline:
			return &exitCodeError{code: exitWaitTimeout, msg: sentence(fmt.Sprintf(
				"timed out after %s waiting for rollout %s, which is %s (%s) and carries on; look at it with: tether rollout get %s",
				timeout, ro.Name, ro.State, ro.Summary(), ro.Name))}
		case <-tick.C:
		}
		next, err := reg.StepRollout(ctx, ro.ID)
		if err != nil && registry.ErrorCode(err) != registry.CodeConflict {
			return err
		}
		if err == nil {
			ro = next
		}
	}
	if g.output == "json" {
		if err := printJSON(g.stdout, ro); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "Rollout %s is %s: %s.\n", ro.Name, ro.State, ro.Summary())
	}
	if ro.State == registry.RolloutCompleted && ro.Failures() == 0 && ro.Counts[registry.TargetRefused] == 0 {
		return nil
	}
	return &exitCodeError{code: exitRolloutUnsuccessful, msg: sentence(fmt.Sprintf("rollout %s did not succeed everywhere: %s; tether rollout get %s shows why", ro.Name, ro.Summary(), ro.Name))}
}

func newRolloutListCmd(g *globals) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List rollouts, newest first, with their progress",
		Example: `  tether rollout list --state running,halted`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p := registry.RolloutListParams{}
			for _, s := range states {
				st := registry.RolloutState(strings.TrimSpace(s))
				if !isRolloutState(st) {
					return usagef("--state %q is not one of running, paused, halted, completed, aborted", s)
				}
				p.States = append(p.States, st)
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			list, err := api.ListRollouts(ctx, p)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, list)
			}
			now := api.Now()
			t := newTable(g.stdout, "NAME", "STATE", "PROGRESS", "SUCCEEDED", "FAILED", "RUNNING", "PENDING", "SELECTOR", "KIND", "CREATED")
			for i := range list {
				ro := &list[i]
				t.row(ro.Name, string(ro.State), progress(ro, 10), strconv.Itoa(ro.Counts[registry.TargetSucceeded]),
					strconv.Itoa(ro.Failures()), strconv.Itoa(ro.Counts[registry.TargetRunning]), strconv.Itoa(ro.Counts[registry.TargetPending]),
					ro.Selector, string(ro.Kind), ago(now, ro.CreatedAt))
			}
			return t.flush()
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only rollouts in these states (comma-separated)")
	return cmd
}

func isRolloutState(s registry.RolloutState) bool {
	for _, v := range registry.RolloutStates {
		if v == s {
			return true
		}
	}
	return false
}

// progress renders "[####------] 4/10".
func progress(ro *registry.Rollout, width int) string {
	return bar(ro, width) + " " + strconv.Itoa(ro.Done()) + "/" + strconv.Itoa(ro.Total())
}

// bar renders the share of a rollout's targets that are done: "[####------]".
func bar(ro *registry.Rollout, width int) string {
	filled := 0
	if total := ro.Total(); total > 0 {
		filled = ro.Done() * width / total
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "]"
}

func newRolloutGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "get ROLLOUT",
		Short:   "Show a rollout and every target in order: state, job, attempts, duration, reason",
		Example: `  tether rollout get web-2026-11`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			ro, err := api.GetRollout(ctx, args[0])
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, ro)
			}
			return printRollout(g.stdout, api.Now(), ro)
		},
	}
}

func printRollout(w io.Writer, now time.Time, ro *registry.Rollout) error {
	kv := newKV(w)
	if ro.Version > 0 {
		kv.row("ID:", ro.ID)
	}
	kv.row("Name:", ro.Name)
	kv.row("State:", string(ro.State))
	kv.row("Progress:", bar(ro, 20)+" "+ro.Summary())
	kv.row("Selector:", ro.Selector)
	kv.row("Job:", string(ro.Kind))
	limits := fmt.Sprintf("max parallel %d, max failures %d", ro.MaxParallel, ro.MaxFailures)
	if ro.FailureBase > 0 {
		limits += fmt.Sprintf(" (beyond the %d accepted at resume)", ro.FailureBase)
	}
	if ro.PauseBetween > 0 {
		limits += ", pause between waves " + ro.PauseBetween.String()
	}
	kv.row("Limits:", limits)
	kv.row("Order:", ro.Order)
	if ro.Version > 0 {
		kv.row("Created:", stamp(now, ro.CreatedAt)+" by "+ro.CreatedBy)
		if !ro.NextWaveAt.IsZero() && ro.NextWaveAt.After(now) && ro.State == registry.RolloutRunning {
			kv.row("Next wave:", stamp(now, ro.NextWaveAt))
		}
		kv.row("Finished:", stamp(now, ro.FinishedAt))
	}
	if err := kv.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t := newTable(w, "#", "CLUSTER", "STATE", "JOB", "JOB STATE", "ATTEMPTS", "DURATION", "REASON")
	for _, tg := range ro.Targets {
		t.row(strconv.Itoa(tg.Position+1), tg.ClusterName, string(tg.State), orDash(tg.JobID), orDash(string(tg.JobState)),
			strconv.Itoa(tg.Attempts), targetDuration(now, &tg), orDash(display.Safe(oneLine(tg.Reason, 120))))
	}
	return t.flush()
}

// targetDuration is how long a target ran (or has been running): a span
// measured, so truncated as the console shows it (humantime.Duration), never
// rounded up as a lifetime granted is (humanDuration): 60 hours read "2d" in
// both.
func targetDuration(now time.Time, t *registry.RolloutTarget) string {
	switch {
	case t.StartedAt.IsZero():
		return "-"
	case t.FinishedAt.IsZero():
		return humantime.Duration(now.Sub(t.StartedAt))
	}
	return humantime.Duration(t.FinishedAt.Sub(t.StartedAt))
}

func newRolloutActionCmd(g *globals, verb, short string, act func(admin.Service, context.Context, string, string) (*registry.Rollout, error)) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     verb + " ROLLOUT",
		Short:   short,
		Example: "  tether rollout " + verb + " web-2026-11 --reason 'error rate up in eu'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			ro, err := act(api, adminContext(ctx), args[0], reason)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, ro)
			}
			fmt.Fprintf(g.stdout, "Rollout %s is %s: %s.\n", ro.Name, ro.State, ro.Summary())
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}
