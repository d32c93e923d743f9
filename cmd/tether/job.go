package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
)

func init() { register(newJobCmd) }

func newJobCmd(g *globals) *cobra.Command {
	return groupCommand("job", "Submit, list, inspect, requeue, cancel, retry and delete jobs",
		newJobSubmitCmd(g),
		newJobListCmd(g),
		newJobGetCmd(g),
		newJobRequeueCmd(g),
		newJobCancelCmd(g),
		newJobRetryCmd(g),
		newJobDeleteCmd(g),
		newJobExtendLeaseCmd(g),
	)
}

func parseKind(s string) (registry.JobKind, error) {
	k := registry.JobKind(strings.TrimSpace(s))
	switch k {
	case registry.KindApply, registry.KindDelete, registry.KindIntent:
		return k, nil
	}
	return "", usagef("--kind %q is not one of apply, delete, intent", s)
}

func parseStates(in []string) ([]registry.JobState, error) {
	var out []registry.JobState
	for _, s := range in {
		st := registry.JobState(strings.TrimSpace(s))
		if st == "" {
			continue
		}
		if !st.Valid() {
			names := make([]string, len(registry.JobStates))
			for i, v := range registry.JobStates {
				names[i] = string(v)
			}
			return nil, usagef("--state %q is not one of %s", s, strings.Join(names, ", "))
		}
		out = append(out, st)
	}
	return out, nil
}

// submittedJob is the -o json output of job submit.
type submittedJob struct {
	*registry.Job
	// Created is false when the idempotency key matched an open job, which
	// is returned instead of a new one.
	Created bool `json:"created"`
}

func newJobSubmitCmd(g *globals) *cobra.Command {
	var (
		cluster, kind, file, payload, key string
		expiresIn, timeout                time.Duration
		wait                              bool
	)
	cmd := &cobra.Command{
		Use:   "submit --cluster CLUSTER --kind KIND (-f FILE | -f - | --payload JSON)",
		Short: "Submit a job to a cluster's agent, optionally waiting for its outcome",
		Long: `Submit a job to a cluster's agent. The payload is checked against the
cluster's allowlists (namespaces, catalog entries, operation templates).

With --wait the command blocks until the job ends, prints it, and exits
with a code a script can act on:

  0  the job succeeded, or was a no-op
  1  an error: the job could not be submitted, or waiting failed
  2  the command line was wrong
  3  the job ended unsuccessfully: failed, conflict, canceled or expired
  4  --timeout passed before the job ended (the job carries on)`,
		Example: `  tether job submit --cluster prod-eu --kind apply -f deployment.json
  tether job submit --cluster prod-eu --kind delete --payload '{"apiVersion":"v1","kind":"ConfigMap","name":"x","namespace":"apps"}'
  tether job submit --cluster prod-eu --kind intent -f backup.json --idempotency-key nightly-2024-05-01 --wait --timeout 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(cluster) == "" {
				return usagef("job submit needs --cluster CLUSTER, the id or name of the cluster to run the job")
			}
			if kind == "" {
				return usagef("job submit needs --kind apply, delete or intent")
			}
			k, err := parseKind(kind)
			if err != nil {
				return err
			}
			fl := cmd.Flags()
			if fl.Changed("file") == fl.Changed("payload") {
				return usagef("job submit needs the payload from exactly one of -f FILE, -f - (standard input) or --payload JSON")
			}
			if fl.Changed("timeout") && !wait {
				return usagef("--timeout applies only with --wait")
			}
			body := []byte(payload)
			if fl.Changed("file") {
				if body, err = readPayload(g.stdin, file); err != nil {
					return err
				}
			}

			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			j, created, err := api.SubmitJob(adminContext(ctx), registry.JobSubmission{
				ClusterID: cluster, Kind: k, Payload: body, IdempotencyKey: key, ExpiresIn: expiresIn,
			})
			if err != nil {
				return err
			}
			if !wait {
				return printSubmitted(g, j, created)
			}
			if g.output == "table" {
				fmt.Fprintf(g.stderr, "Submitted job %s; waiting for it to end (Ctrl-C stops waiting, not the job).\n", j.ID)
			}
			return waitJob(ctx, g, api, j, created, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "cluster id or name (required)")
	f.StringVar(&kind, "kind", "", "apply, delete or intent (required)")
	f.StringVarP(&file, "file", "f", "", "read the JSON payload from FILE, or from standard input with -")
	f.StringVar(&payload, "payload", "", "the JSON payload")
	f.StringVar(&key, "idempotency-key", "", "return the cluster's open job with this key instead of submitting another")
	f.Var(newDuration(&expiresIn, 0), "expires-in", "how long the job may wait to be claimed before it expires")
	f.BoolVar(&wait, "wait", false, "wait until the job ends; exit 0 if it succeeded or was a no-op, 3 if it ended otherwise, 4 on --timeout")
	f.Var(newDuration(&timeout, 0), "timeout", "with --wait, give up waiting after this long (the job carries on)")
	return cmd
}

// readPayload reads a payload file, or standard input for "-".
func readPayload(stdin io.Reader, file string) ([]byte, error) {
	if file == "-" {
		// One byte over the limit is enough for the registry to refuse it
		// with its own message.
		b, err := io.ReadAll(io.LimitReader(stdin, registry.MaxPayloadBytes+1))
		if err != nil {
			return nil, failf("cannot read the payload from standard input: %v", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, failf("cannot read the payload file: %v", err)
	}
	return b, nil
}

func printSubmitted(g *globals, j *registry.Job, created bool) error {
	if g.output == "json" {
		return printJSON(g.stdout, submittedJob{Job: j, Created: created})
	}
	if !created {
		_, err := fmt.Fprintf(g.stdout, "Cluster %s already has open job %s with idempotency key %q (%s); no new job was submitted.\n", j.ClusterID, j.ID, j.IdempotencyKey, j.State)
		return err
	}
	_, err := fmt.Fprintf(g.stdout, "Submitted job %s (%s %s) to cluster %s; it is %s.\n", j.ID, describeKind(j), orDash(j.Target.String()), j.ClusterID, j.State)
	return err
}

// waitJob blocks until the job ends, prints it, and turns its outcome into
// the exit code: 0 for succeeded and noop, 3 for another end, 4 when
// --timeout passed first.
func waitJob(ctx context.Context, g *globals, reg adminAPI, j *registry.Job, created bool, timeout time.Duration) error {
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	final, err := reg.WaitJob(wctx, j.ID)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return failf("stopped waiting for job %s, which carries on; look at it with: tether job get %s", j.ID, j.ID)
	case wctx.Err() != nil:
		if cur, gerr := reg.GetJob(ctx, j.ID); gerr == nil {
			j = cur
		}
		if perr := printSubmitted(g, j, created); perr != nil {
			return perr
		}
		return &exitCodeError{code: exitWaitTimeout, msg: sentence(fmt.Sprintf("timed out after %s waiting for job %s, which is still %s and carries on; look at it with: tether job get %s", timeout, j.ID, j.State, j.ID))}
	default:
		return err
	}
	if g.output == "json" {
		if err := printJSON(g.stdout, submittedJob{Job: final, Created: created}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "Job %s ended %s.\n", final.ID, describeEnd(final))
	}
	if final.State == registry.JobSucceeded || final.State == registry.JobNoop {
		return nil
	}
	return &exitCodeError{code: exitJobUnsuccessful, msg: sentence(fmt.Sprintf("job %s ended %s", final.ID, describeEnd(final)))}
}

// describeEnd says how a finished job ended, with the error that ended it.
func describeEnd(j *registry.Job) string {
	s := string(j.State)
	if j.Error != "" && j.Error != string(j.State) {
		s += ": " + oneLine(j.Error, 300)
	}
	return s
}

func describeKind(j *registry.Job) string {
	if j.Intent != "" {
		return string(j.Kind) + " " + j.Intent
	}
	return string(j.Kind)
}

func newJobListCmd(g *globals) *cobra.Command {
	var (
		cluster, kind, search string
		states                []string
		limit                 int
		stuck                 bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p := registry.JobListParams{Search: search, Limit: limit}
			var err error
			if p.States, err = parseStates(states); err != nil {
				return err
			}
			if kind != "" {
				if p.Kind, err = parseKind(kind); err != nil {
					return err
				}
			}
			if limit < 1 {
				return usagef("--limit %d must be at least 1", limit)
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			if cluster != "" {
				c, err := api.GetCluster(ctx, cluster)
				if err != nil {
					return err
				}
				p.ClusterIDs = []string{c.ID}
			}
			var jobs []registry.Job
			if stuck {
				jobs, err = api.ListStuckJobs(ctx, p)
			} else {
				jobs, err = api.ListJobs(ctx, p)
			}
			if err != nil {
				return err
			}
			if jobs == nil {
				jobs = []registry.Job{}
			}
			if g.output == "json" {
				return printJSON(g.stdout, jobs)
			}
			clusters, err := api.ListClusters(ctx, registry.ClusterListParams{})
			if err != nil {
				return err
			}
			names, byID := map[string]string{}, map[string]*registry.Cluster{}
			for i := range clusters {
				names[clusters[i].ID], byID[clusters[i].ID] = clusters[i].Name, &clusters[i]
			}
			now := api.Now()
			headers := []string{"ID", "CLUSTER", "KIND", "TARGET", "STATE", "ATTEMPT", "CREATED", "UPDATED", "NOTE"}
			if g.wide { // -o wide
				headers = append(headers, "IDEMPOTENCY KEY", "SUBMITTED BY", "CLAIMED BY", "PHASE", "FINISHED")
			}
			t := newTable(g.stdout, headers...)
			for i := range jobs {
				j := &jobs[i]
				row := []string{j.ID, nameOf(names, j.ClusterID), describeKind(j), orDash(j.Target.String()), string(j.State),
					strconv.Itoa(j.Attempt), ago(now, j.CreatedAt), ago(now, j.UpdatedAt), jobNote(now, j, byID[j.ClusterID])}
				if g.wide {
					row = append(row, orDash(oneLine(j.IdempotencyKey, 40)), orDash(j.SubmittedBy), orDash(j.ClaimedBy),
						orDash(oneLine(j.Phase, 30)), ago(now, j.FinishedAt))
				}
				t.row(row...)
			}
			return t.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "only jobs of this cluster (id or name)")
	f.StringSliceVar(&states, "state", nil, "only jobs in these states (comma-separated): queued, in_progress, succeeded, failed, noop, conflict, canceled, expired")
	f.StringVar(&kind, "kind", "", "only jobs of this kind: apply, delete or intent")
	f.StringVar(&search, "search", "", "only jobs whose id, idempotency key, target namespace or name, error, kind or cluster name (with --stuck, or the reason it is stuck: silent, disabled) contains each of these words")
	f.IntVar(&limit, "limit", 100, "at most this many jobs")
	f.BoolVar(&stuck, "stuck", false, "only stuck jobs, as the console's stuck tab: lease run out, no lease and silent 10 minutes, failed lease_expired on the last attempt, or waiting on a silent or disabled cluster")
	return cmd
}

// jobNote is the one thing worth knowing about a job in a list: why it is
// stuck, why it ended, or how its claim stands.
func jobNote(now time.Time, j *registry.Job, c *registry.Cluster) string {
	// A stuck job says why first, by the registry's rule, as the console's
	// stuck tab does.
	if why := j.Diagnose(c, now); why != registry.NotStuck {
		if note := jobState(now, j); note != "-" {
			return "stuck: " + why.String() + "; " + note
		}
		return "stuck: " + why.String()
	}
	return jobState(now, j)
}

// jobState is what a job's state leaves to say: its error, its lease, its
// expiry.
func jobState(now time.Time, j *registry.Job) string {
	switch {
	case j.State.Terminal():
		return orDash(oneLine(j.Error, 60))
	case j.State == registry.JobInProgress && j.Leased():
		return "lease ends " + until(now, j.LeaseExpiresAt)
	case j.State == registry.JobInProgress:
		return "no lease; last activity " + ago(now, j.LastActivityAt)
	case !j.ExpiresAt.IsZero():
		return "expires " + until(now, j.ExpiresAt)
	}
	return "-"
}

// jobDetail is the -o json output of job get: the job and its timeline.
type jobDetail struct {
	*registry.Job
	History []registry.JobHistoryEntry `json:"history"`
}

func newJobGetCmd(g *globals) *cobra.Command {
	var showPayload bool
	cmd := &cobra.Command{
		Use:   "get JOB_ID",
		Short: "Show a job: claim, lease, attempts, timeline, conditions and result",
		Long: `Show a job: claim, lease, attempts, timeline, conditions and result.

The payload of a job whose cluster requires encrypted payloads is stored
sealed and withheld ("payload": null, "payloadSealed": true); --show-payload
shows it, which takes an admin and is recorded in the audit trail
(job.payload_viewed).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			get := api.GetJob
			if showPayload {
				get = func(ctx context.Context, id string) (*registry.Job, error) {
					return api.ShowJobPayload(adminContext(ctx), id)
				}
			}
			j, err := get(ctx, args[0])
			if err != nil {
				return err
			}
			history, err := api.JobHistory(ctx, j.ID)
			if err != nil {
				return err
			}
			if history == nil {
				history = []registry.JobHistoryEntry{}
			}
			if g.output == "json" {
				return printJSON(g.stdout, jobDetail{Job: j, History: history})
			}
			c, err := api.GetCluster(ctx, j.ClusterID)
			if err != nil {
				return err
			}
			return printJobDetail(g.stdout, api.Now(), c, j, history)
		},
	}
	cmd.Flags().BoolVar(&showPayload, "show-payload", false, "show a sealed payload (admin only; audited as job.payload_viewed)")
	return cmd
}

func printJobDetail(w io.Writer, now time.Time, c *registry.Cluster, j *registry.Job, history []registry.JobHistoryEntry) error {
	kv := newKV(w)
	kv.row("ID:", j.ID)
	kv.row("Cluster:", c.Name+" ("+c.ID+")")
	kv.row("Kind:", describeKind(j))
	kv.row("Target:", orDash(j.Target.String()))
	state := string(j.State)
	if j.Phase != "" && !j.State.Terminal() {
		state += " (phase " + j.Phase + ")"
	}
	kv.row("State:", state)
	kv.row("Attempt:", display.Attempt(j.Attempt, c.Policy.MaxAttempts))
	kv.row("Idempotency key:", orDash(j.IdempotencyKey))
	if j.RetryOf != "" {
		kv.row("Retry of:", j.RetryOf)
	}
	if len(j.RetriedBy) > 0 {
		kv.row("Retried as:", strings.Join(j.RetriedBy, ", "))
	}
	kv.row("Submitted:", stamp(now, j.CreatedAt)+" by "+orDash(j.SubmittedBy))
	kv.row("Expires:", stamp(now, j.ExpiresAt))
	if j.ClaimID != "" {
		kv.row("Claim:", j.ClaimID+" by credential "+orDash(j.ClaimedBy)+", "+ago(now, j.ClaimedAt))
		lease := "none: never reclaimed automatically; requeue it if its agent is gone"
		if j.Leased() {
			lease = fmt.Sprintf("%ds, ends %s", j.LeaseSeconds, stamp(now, j.LeaseExpiresAt))
		}
		kv.row("Lease:", lease)
		kv.row("Last activity:", stamp(now, j.LastActivityAt))
	}
	if j.State.Terminal() {
		kv.row("Outcome:", orDash(string(j.Outcome)))
		kv.row("Error:", orDash(oneLine(j.Error, 200)))
		kv.row("Finished:", stamp(now, j.FinishedAt))
	}
	if err := kv.flush(); err != nil {
		return err
	}

	// The conditions an agent reported last are the job's current ones.
	var conds []registry.Condition
	for _, h := range history {
		if len(h.Conditions) > 0 {
			conds = h.Conditions
		}
	}
	if len(conds) > 0 {
		fmt.Fprintln(w, "\nConditions:")
		t := newTable(w, "  TYPE", "STATUS", "REASON", "MESSAGE")
		for _, cond := range conds {
			t.row("  "+cond.Type, cond.Status, orDash(cond.Reason), orDash(oneLine(cond.Message, 80)))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\nTimeline:")
	t := newTable(w, "  AT", "EVENT", "ATTEMPT", "STATE", "ACTOR", "MESSAGE")
	for _, h := range history {
		msg := h.Message
		if h.Phase != "" {
			msg = "phase " + h.Phase + ": " + msg
		}
		t.row("  "+rfc3339(h.At), string(h.Type), strconv.Itoa(h.Attempt), string(h.State), h.Actor, orDash(oneLine(msg, 100)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(j.Result) > 0 {
		fmt.Fprintf(w, "\nResult:\n%s\n", indentJSON(j.Result, "  "))
	}
	if j.PayloadWithheld() {
		_, err := fmt.Fprintf(w, "\nPayload: sealed at rest and withheld (its cluster requires encrypted payloads); --show-payload shows it, recorded in the audit trail\n")
		return err
	}
	_, err := fmt.Fprintf(w, "\nPayload:\n%s\n", indentJSON(j.Payload, "  "))
	return err
}

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
	cmd := &cobra.Command{
		Use:   "requeue JOB_ID",
		Short: "Put an in-progress (or lease-exhausted) job back in the queue as a new attempt",
		Long: `Put a job back in the queue as a new attempt: an in_progress job whose
agent is stuck or gone, or a job that failed because its attempts ran out.
The old holder's claim is fenced off: its further reports are refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			j, err := api.RequeueJob(adminContext(ctx), args[0], reason)
			if err != nil {
				return err
			}
			return printJob(g, j, fmt.Sprintf("Requeued job %s: it is %s again, attempt %d; the previous claim is fenced off.", j.ID, j.State, j.Attempt))
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the job's timeline and the audit trail")
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
