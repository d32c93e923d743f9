package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
)

// Job actions (requeue, cancel, extend a lease), shared by the jobs list and the job detail.

// Job actions, shared by the list and the detail.

func canRequeue(j *registry.Job) bool { return j.Requeueable() }

func describeJob(ctx *Context, j *registry.Job) string {
	s := string(j.Kind) + " " + display.Safe(j.Target.String()) + " on " + ctx.Fleet.clusterName(j.ClusterID) + ", attempt " + fmt.Sprint(j.Attempt) + ", " + stateLabel(j.State)
	if j.State == registry.JobInProgress && !j.ClaimedAt.IsZero() {
		s += " (claimed " + ago(ctx.Now, j.ClaimedAt) + ")"
	}
	return s
}

func requeueJobs(ctx *Context, jobs []registry.Job) tea.Cmd {
	var ok, skip []registry.Job
	for _, j := range jobs {
		if canRequeue(&j) {
			ok = append(ok, j)
		} else {
			skip = append(skip, j)
		}
	}
	if len(ok) == 0 {
		// Say what would help: a job that ended can be retried (F), as a new job.
		retry := slices.ContainsFunc(jobs, func(j registry.Job) bool { return j.Retryable() })
		what := ""
		if len(jobs) == 1 {
			if retry {
				what = "; F retries it as a new job"
			}
			return failed("cannot requeue " + jobs[0].ID + ": it is " + stateLabel(jobs[0].State) + what + " (only in-progress jobs and jobs that ran out of attempts can be requeued)")
		}
		if retry {
			what = "; F retries those that failed, conflicted, expired or were canceled as new jobs"
		}
		return failed("none of the marked jobs can be requeued" + what + " (only in-progress jobs and jobs that ran out of attempts can be)")
	}
	var title, body string
	if len(ok) == 1 {
		j := ok[0]
		title = "Requeue job " + j.ID + "?"
		body = describeJob(ctx, &j) + ". It goes back to the queue as attempt " + fmt.Sprint(j.Attempt+1) + "."
		if j.ClaimID != "" {
			body += " The old holder is fenced off: its claim " + j.ClaimID + " no longer matches, so any status, heartbeat or result it sends for this job is refused (409 stale_claim) and it is told to stop."
		}
	} else {
		title = fmt.Sprintf("Requeue %s?", plural(len(ok), "job", "jobs"))
		body = "Each goes back to the queue as a new attempt. Their old holders are fenced off: their claims no longer match, so anything they send for these jobs is refused (409 stale_claim)."
	}
	if len(skip) > 0 {
		body += fmt.Sprintf(" %s cannot be requeued (neither in progress nor out of attempts) and will be left alone.", plural(len(skip), "marked job", "marked jobs"))
	}
	expiring := 0
	for _, j := range ok {
		if j.ExpiresOnRequeue(ctx.Now) {
			expiring++
		}
	}
	if expiring > 0 {
		body += " " + expiryWarning(ctx, ok, expiring)
	}
	b := ctx.Backend
	ids := make([]string, len(ok))
	for i, j := range ok {
		ids[i] = j.ID
	}
	label := "requeue " + ids[0]
	if len(ids) > 1 {
		label = fmt.Sprintf("requeue %d jobs", len(ids))
	}
	seen := seenJobs(ok)
	run := func(extend time.Duration) tea.Cmd {
		return runAction(label, func(cx context.Context) outcome {
			return bulk(cx, ids, idsOf(skip), "requeued", unchanged(b, seen, func(cx context.Context, id string) error {
				// The attempt confirmed, for the registry to check against
				// its own read: the job may move on after unchanged's.
				_, err := b.RequeueJobWith(cx, id, registry.RequeueOptions{Reason: "requeued from the console", ExtendExpiry: extend, Attempt: seen[id].attempt})
				return err
			}))
		})
	}
	c := newConfirm(ctx, title, body, "requeue", true, run(0)).withAlt(extendChoice(expiring, run))
	if len(ok) == 1 {
		// One job, named with its attempt and claim: a change closes the
		// dialog. Many are each checked as they are requeued (unchanged),
		// so that a busy queue does not close the dialog under the person.
		c.watchJobs(ok)
	}
	return ctx.showModal(c)
}

// requeueExpiryExtension is how far from now the console's requeue moves the
// expiry of a job that would expire at once.
const requeueExpiryExtension = time.Hour

// expiryWarning says which of the jobs to requeue would expire at once
// (registry.Job.ExpiresOnRequeue) and what e does about it.
func expiryWarning(ctx *Context, jobs []registry.Job, expiring int) string {
	if len(jobs) == 1 {
		j := jobs[0]
		when := "expired " + until(ctx.Now, j.ExpiresAt) // "5m ago"
		if j.ExpiresAt.After(ctx.Now) {
			when = "expires " + until(ctx.Now, j.ExpiresAt) // "in 30s"
		}
		return "⚠ It " + when + " (" + clock(j.ExpiresAt) + "): requeued as it is, it expires at once, before an agent can take it. e requeues it with its expiry moved to " + humanDuration(requeueExpiryExtension) + " from now."
	}
	return fmt.Sprintf("⚠ %s of the %d are past their expiry or within a minute of it: requeued as they are, they expire at once. e requeues them all with those expiries moved to %s from now.",
		plural(expiring, "job", "jobs"), len(jobs), humanDuration(requeueExpiryExtension))
}

// extendChoice is the dialog's e when some jobs would expire at once (nil
// when none would).
func extendChoice(expiring int, run func(extend time.Duration) tea.Cmd) *confirmAlt {
	if expiring == 0 {
		return nil
	}
	return &confirmAlt{label: "requeue, expiry +" + humanDuration(requeueExpiryExtension), run: run(requeueExpiryExtension)}
}

func cancelJobs(ctx *Context, jobs []registry.Job) tea.Cmd {
	var ok []registry.Job
	for _, j := range jobs {
		if !j.State.Terminal() {
			ok = append(ok, j)
		}
	}
	if len(ok) == 0 {
		if len(jobs) == 1 {
			return failed("cannot cancel " + jobs[0].ID + ": it is already " + stateLabel(jobs[0].State))
		}
		return failed("none of the marked jobs can be canceled: they have all ended")
	}
	var title, body string
	if len(ok) == 1 {
		j := ok[0]
		title = "Cancel job " + j.ID + "?"
		body = describeJob(ctx, &j) + ". It ends as canceled."
	} else {
		title = fmt.Sprintf("Cancel %s?", plural(len(ok), "job", "jobs"))
		body = "They end as canceled."
	}
	if n := len(jobs) - len(ok); n > 0 {
		body += fmt.Sprintf(" %s already ended and will be left alone.", plural(n, "marked job", "marked jobs"))
	}
	body += " An agent holding one gets 409 job_canceled on its next status, heartbeat or result, which tells it to stop."
	b := ctx.Backend
	ids := make([]string, len(ok))
	for i, j := range ok {
		ids[i] = j.ID
	}
	label := "cancel " + ids[0]
	if len(ids) > 1 {
		label = fmt.Sprintf("cancel %d jobs", len(ids))
	}
	var ended []registry.Job
	for _, j := range jobs {
		if j.State.Terminal() {
			ended = append(ended, j)
		}
	}
	return ctx.showModal(newConfirm(ctx, title, body, "cancel the job", true, runAction(label, func(cx context.Context) outcome {
		return bulk(cx, ids, idsOf(ended), "canceled", func(cx context.Context, id string) error {
			_, err := b.CancelJob(cx, id, "canceled from the console")
			return err
		})
	})))
}

// retryJobs asks, then submits each retryable one of jobs again as a new
// job linked to it (registry.Registry.RetryJob).
func retryJobs(ctx *Context, jobs []registry.Job) tea.Cmd {
	var ok, skip []registry.Job
	for _, j := range jobs {
		if j.Retryable() {
			ok = append(ok, j)
		} else {
			skip = append(skip, j)
		}
	}
	if len(ok) == 0 {
		if len(jobs) == 1 {
			return failed("cannot retry " + jobs[0].ID + ": it is " + stateLabel(jobs[0].State) + "; " + registry.ActionRetry.Rule())
		}
		return failed("none of the marked jobs can be retried: " + registry.ActionRetry.Rule())
	}
	title := fmt.Sprintf("Retry %s?", plural(len(ok), "job", "jobs"))
	body := "Each is submitted again as a new job with the same payload and idempotency key, linked to it (retry of) and checked against the cluster's allowlists again; the original stays as it ended."
	if len(ok) == 1 {
		title = "Retry job " + ok[0].ID + "?"
		body = describeJob(ctx, &ok[0]) + ". " + body
		if r := ok[0].RetriedBy; len(r) > 0 { // known from its detail
			body += " It was retried already, as " + strings.Join(r, ", ") + "."
		}
	}
	if len(skip) > 0 {
		body += fmt.Sprintf(" %s will be left alone (%s).", plural(len(skip), "marked job", "marked jobs"), registry.ActionRetry.Rule())
	}
	b := ctx.Backend
	ids := idsOf(ok)
	label := "retry " + ids[0]
	if len(ids) > 1 {
		label = fmt.Sprintf("retry %d jobs", len(ids))
	}
	return ctx.showModal(newConfirm(ctx, title, body, "retry", false, runAction(label, func(cx context.Context) outcome {
		return bulk(cx, ids, idsOf(skip), "retried", func(cx context.Context, id string) error {
			_, err := b.RetryJob(cx, id, "retried from the console")
			return err
		})
	})))
}

func idsOf(jobs []registry.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// bulk applies op to every id and reports how it went, naming the first
// failure exactly. The marks of the jobs it acted on (or skipped) are
// cleared; those of failures stay, to retry.
func bulk(cx context.Context, ids, skipped []string, done string, op func(context.Context, string) error) outcome {
	var failures []string
	var firstErr error
	for _, id := range ids {
		if err := op(cx, id); err != nil {
			failures = append(failures, id)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	var settled []string
	for _, id := range append(ids, skipped...) {
		if !slices.Contains(failures, id) {
			settled = append(settled, id)
		}
	}
	clearMarks := []tea.Msg{unmarkJobsMsg{ids: settled}}
	switch {
	case len(failures) == 0 && len(ids) == 1:
		return outcome{ok: done + " " + ids[0], then: clearMarks}
	case len(failures) == 0:
		return outcome{ok: fmt.Sprintf("%s %s", done, plural(len(ids), "job", "jobs")), then: clearMarks}
	case len(ids) == 1:
		return outcome{err: firstErr, then: clearMarks}
	}
	return outcome{err: bulkError(firstErr, "%s %d of %d jobs; %s failed, first: %s: %s", done, len(ids)-len(failures), len(ids),
		plural(len(failures), "job", "jobs"), failures[0], errText(firstErr)), then: clearMarks}
}

// bulkError is the outcome of jobs acted on one by one of which some failed:
// with the code of the first failure, so that the status line shows the
// message (errText) rather than "internal error".
func bulkError(first error, format string, args ...any) error {
	return &registry.Error{Code: registry.ErrorCode(first), Message: fmt.Sprintf(format, args...)}
}

func extendLease(ctx *Context, j *registry.Job) tea.Cmd {
	if j.State != registry.JobInProgress || !j.Leased() {
		return failed("cannot extend the lease of " + j.ID + ": it has no lease (it is " + stateLabel(j.State) + ", claimed without a lease or not at all)")
	}
	b := ctx.Backend
	id := j.ID
	body := "The holder gets more time before the reaper reclaims the job. The lease now ends " + until(ctx.Now, j.LeaseExpiresAt) + "; the extension counts from then (or from now, if it already expired)."
	return ctx.showModal(newPrompt(ctx, "Extend the lease of "+id, body, "extend by", "5m", func(value string) (tea.Cmd, error) {
		d, err := durationInput(value)
		if err != nil {
			return nil, err
		}
		if d <= 0 || d > registry.MaxLeaseSeconds*time.Second {
			return nil, fmt.Errorf("the extension must be positive and at most 24h")
		}
		return runAction("extend the lease of "+id, func(cx context.Context) outcome {
			nj, err := b.ExtendLease(cx, id, d)
			if err != nil {
				return outcome{err: err}
			}
			return outcome{ok: "extended the lease of " + id + " to " + stamp(nj.LeaseExpiresAt)}
		}), nil
	}))
}

// jobSeen is a job as a confirmation showed it: what the person agreed to
// act on. A requeue fences off whoever holds the job when it runs, so one
// confirmed on attempt 1 must not run on attempt 2, claimed meanwhile by a
// healthy agent (the reaper requeued the job, its agent took it again).
type jobSeen struct {
	state   registry.JobState
	attempt int
	claim   string
}

func seenJobs(jobs []registry.Job) map[string]jobSeen {
	out := make(map[string]jobSeen, len(jobs))
	for _, j := range jobs {
		out[j.ID] = jobSeen{j.State, j.Attempt, j.ClaimID}
	}
	return out
}

// changed says how j moved on from what was seen ("" if it did not).
func (s jobSeen) changed(j *registry.Job) string {
	if j.State == s.state && j.Attempt == s.attempt && j.ClaimID == s.claim {
		return ""
	}
	now := stateLabel(j.State) + ", attempt " + fmt.Sprint(j.Attempt)
	if j.ClaimID != "" {
		now += ", claim " + j.ClaimID
	}
	return now
}

// unchanged wraps a job action: it reads the job again first and leaves it
// alone, saying why, if it is no longer as the confirmation showed it. What
// changes after this read is the action's to catch (a requeue passes the
// attempt confirmed, which the registry checks in its own update).
func unchanged(b Backend, seen map[string]jobSeen, op func(context.Context, string) error) func(context.Context, string) error {
	return func(cx context.Context, id string) error {
		s, ok := seen[id]
		if !ok {
			return op(cx, id)
		}
		j, err := b.GetJob(cx, id)
		if err != nil {
			return err
		}
		if now := s.changed(j); now != "" {
			return registry.Errorf(registry.CodeConflict, "job %s changed since you confirmed (now %s): nothing done; look again", id, now)
		}
		return op(cx, id)
	}
}

// watchJobs makes a confirmation close, doing nothing, when one of its jobs
// changes while it is open (the live feed says so).
func (c *confirm) watchJobs(jobs []registry.Job) *confirm {
	c.jobs = seenJobs(jobs)
	return c
}

// jobChanged is the message a confirmation closes with when the feed
// brings a change to one of its jobs ("" when none changed).
func (c *confirm) jobChanged(b *feedBatch) string {
	for _, j := range b.Jobs {
		if s, ok := c.jobs[j.ID]; ok {
			if now := s.changed(j); now != "" {
				return "job " + j.ID + " changed while you were deciding (now " + now + "): nothing done; look again before acting"
			}
		}
	}
	for _, id := range b.DeletedJobs {
		if _, ok := c.jobs[id]; ok {
			return "job " + id + " was deleted while you were deciding: nothing done"
		}
	}
	return ""
}
