package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

// The job commands that change a job: requeue, cancel, retry, delete,
// extend-lease.

// printJob shows a job after an admin changed it.
func printJob(g *globals, j *registry.Job, summary string) error {
	if g.output == "json" {
		return printJSON(g.stdout, j)
	}
	_, err := fmt.Fprintln(g.stdout, summary)
	return err
}

func newJobRequeueCmd(g *globals) *cobra.Command {
	var reason string
	var extend time.Duration
	var attempt int
	cmd := &cobra.Command{
		Use:   "requeue JOB_ID",
		Short: "Put an in-progress (or lease-exhausted) job back in the queue as a new attempt",
		Long: `Put a job back in the queue as a new attempt: an in_progress job whose
agent is stuck or gone, or a job that failed because its attempts ran out.
The old holder's claim is fenced off: its further reports are refused.

A job past its expiry, or within a minute of it, would expire again at once
once requeued: requeue refuses it and says so, unless --extend-expiry gives
it time (its expiry moves to that long from now, with the requeue).

--attempt N requeues the job only if it is still at attempt N, as you saw it
in tether job get: if meanwhile its lease ran out, it went back to the queue
and an agent took it again, requeue refuses (and says which attempt and claim
it is at now) rather than fence off an agent you never saw. Scripts that look
at a job before requeuing it should pass the attempt they looked at.`,
		Example: `  tether job requeue j-01hx... --reason "agent wedged"
  tether job requeue j-01hx... --attempt 2 --reason "agent wedged"
  tether job requeue j-01hx... --extend-expiry 1h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			actx := adminContext(ctx)
			if attempt < 0 {
				return usagef("--attempt %d must be a positive attempt number (as tether job get shows it), or left out", attempt)
			}
			if extend == 0 {
				// The registry's verdict, asked before acting: a requeue that
				// only lets the job expire helps no one.
				cur, err := api.GetJob(actx, args[0])
				if err != nil {
					return err
				}
				// A job at another attempt than asked is the registry's to
				// refuse, saying so (the expiry is beside the point then).
				if now := api.Now(); (attempt == 0 || cur.Attempt == attempt) && cur.ExpiresOnRequeue(now) {
					when := "expires"
					if !cur.ExpiresAt.After(now) {
						when = "expired"
					}
					return registry.Errorf(registry.CodeConflict, "job %s %s %s (%s): requeued, it would expire at once, before an agent takes it; requeue it with --extend-expiry DURATION (such as 1h) to give it time, or retry it as a new job once it has expired (tether job retry)",
						cur.ID, when, until(now, cur.ExpiresAt), rfc3339(cur.ExpiresAt))
				}
			}
			j, err := api.RequeueJobWith(actx, args[0], registry.RequeueOptions{Reason: reason, ExtendExpiry: extend, Attempt: attempt})
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("Requeued job %s: it is %s again, attempt %d; the previous claim is fenced off.", j.ID, j.State, j.Attempt)
			if extend > 0 && !j.ExpiresAt.IsZero() {
				msg += fmt.Sprintf(" It expires %s (%s).", until(api.Now(), j.ExpiresAt), rfc3339(j.ExpiresAt))
			}
			return printJob(g, j, msg)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the job's timeline and the audit trail")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "requeue only if the job is still at this attempt (as tether job get shows it); otherwise refuse and change nothing")
	cmd.Flags().Var(newDuration(&extend, 0), "extend-expiry", "move the expiry of a job that has one to this long from now (1s to 8760h), with the requeue")
	return cmd
}

func newJobCancelCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel JOB_ID",
		Short: "Cancel a queued or in-progress job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			j, err := api.CancelJob(adminContext(ctx), args[0], reason)
			if err != nil {
				return err
			}
			return printJob(g, j, fmt.Sprintf("Canceled job %s; if an agent holds it, its next report tells it to stop.", j.ID))
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the job's timeline and the audit trail")
	return cmd
}

func newJobRetryCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     "retry JOB_ID",
		Short:   "Submit a failed, conflicting, expired or canceled job again, as a new job linked to it",
		Example: `  tether job retry j-01hx... --reason "registry was down"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			j, err := api.RetryJob(adminContext(ctx), args[0], reason)
			if err != nil {
				return err
			}
			return printJob(g, j, fmt.Sprintf("Submitted job %s, retrying %s; it is %s.", j.ID, j.RetryOf, j.State))
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}

func newJobDeleteCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "delete JOB_ID",
		Short: "Delete a finished job and its timeline (the audit trail keeps the delete)",
		Long: `Delete a finished job (succeeded, failed, noop, conflict, canceled or
expired) with its timeline. The audit trail records who deleted it and why.
A queued or in-progress job is refused: cancel it first.`,
		Example: `  tether job delete j-01hx... --reason "test run"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			j, err := api.DeleteJob(adminContext(ctx), args[0], reason)
			if err != nil {
				return err
			}
			return printJob(g, j, fmt.Sprintf("Deleted %s job %s and its timeline.", j.State, j.ID))
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return cmd
}

func newJobExtendLeaseCmd(g *globals) *cobra.Command {
	var by time.Duration
	cmd := &cobra.Command{
		Use:   "extend-lease JOB_ID --by DURATION",
		Short: "Give a leased job's holder more time before the reaper reclaims it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if by == 0 {
				return usagef("extend-lease needs --by DURATION, for example --by 10m")
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			j, err := api.ExtendLease(adminContext(ctx), args[0], by)
			if err != nil {
				return err
			}
			return printJob(g, j, fmt.Sprintf("Extended the lease of job %s to %s (%s).", j.ID, rfc3339(j.LeaseExpiresAt), until(api.Now(), j.LeaseExpiresAt)))
		},
	}
	cmd.Flags().Var(newDuration(&by, 0), "by", "how much longer the lease lasts (at most 24h)")
	return cmd
}
