package main

import (
	"context"
	"fmt"
	"io"
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
	f.StringVar(&search, "search", "", "only jobs whose id, idempotency key, target namespace or name, error, kind or cluster name (with --stuck, or the reason it is stuck: silent, disabled, pending) contains each of these words")
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
		// A finished job holds no lease: the advice for an unleased claim
		// (requeue it if its agent is gone) would send a reader of a
		// succeeded job after an agent that did its work.
		if !j.State.Terminal() {
			lease := "none: never reclaimed automatically; requeue it if its agent is gone"
			if j.Leased() {
				lease = fmt.Sprintf("%ds, ends %s", j.LeaseSeconds, stamp(now, j.LeaseExpiresAt))
			}
			kv.row("Lease:", lease)
		}
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
