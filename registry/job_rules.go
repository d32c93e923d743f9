package registry

import "time"

// The rules of which job an admin operation applies to, in one place: the
// operations check them (RequeueJob, CancelJob, RetryJob, DeleteJob), and the
// console and the CLI use them to say beforehand what a bulk action will act
// on and what it will skip, and why.

// JobAction is an admin operation on a job.
type JobAction string

const (
	ActionRequeue JobAction = "requeue"
	ActionCancel  JobAction = "cancel"
	ActionRetry   JobAction = "retry"
	ActionDelete  JobAction = "delete"
)

// Requeueable reports whether an admin may requeue the job: it is in
// progress (its holder is fenced off), or it failed because its lease ran
// out on its last attempt.
func (j *Job) Requeueable() bool {
	return j.State == JobInProgress || (j.State == JobFailed && j.Error == ErrorLeaseExpired)
}

// RequeueExpiryMargin is how close to its expiry a requeued job may be and
// still be worth requeuing: an agent polls, acks and starts within it. A job
// nearer its expiry than that goes back in the queue only to expire there.
const RequeueExpiryMargin = time.Minute

// ExpiresOnRequeue reports whether requeuing the job at now would put it
// back in the queue only for it to expire at once: it may be requeued, and
// its expiry has passed or comes within RequeueExpiryMargin. The console,
// the CLI and the API warn of it and offer to extend the expiry
// (RequeueOptions.ExtendExpiry).
func (j *Job) ExpiresOnRequeue(now time.Time) bool {
	return j.Requeueable() && !j.ExpiresAt.IsZero() && j.ExpiresAt.Before(now.Add(RequeueExpiryMargin))
}

// Cancelable reports whether an admin may cancel the job: it has not ended.
func (j *Job) Cancelable() bool { return !j.State.Terminal() }

// Deletable reports whether an admin may delete the job: it has ended, so
// nothing an agent may still work on disappears.
func (j *Job) Deletable() bool { return j.State.Terminal() }

// Applies reports whether the action may act on the job.
func (a JobAction) Applies(j *Job) bool {
	switch a {
	case ActionRequeue:
		return j.Requeueable()
	case ActionCancel:
		return j.Cancelable()
	case ActionRetry:
		return j.Retryable()
	case ActionDelete:
		return j.Deletable()
	}
	return false
}

// Rule says in words which jobs the action applies to.
func (a JobAction) Rule() string {
	switch a {
	case ActionRequeue:
		return "only in-progress jobs and jobs that ran out of attempts can be requeued"
	case ActionCancel:
		return "only queued and in-progress jobs can be canceled"
	case ActionRetry:
		return "only failed, conflicting, expired or canceled jobs can be retried"
	case ActionDelete:
		return "only finished jobs can be deleted (cancel an open one first)"
	}
	return "unknown action " + string(a)
}

// Filters narrows p to the jobs the action applies to: the union of the
// lists returned, each a narrowing of p's states (and, for a requeue, of the
// error) that the store's indexes answer. None when no job of p can match.
func (a JobAction) Filters(p JobListParams) []JobListParams {
	var states []JobState
	for _, s := range JobStates {
		j := Job{State: s}
		switch {
		case a == ActionRequeue && s == JobFailed:
			continue // only those out of attempts: below
		case a.Applies(&j):
			states = append(states, s)
		}
	}
	asked := p.States
	if len(asked) == 0 {
		asked = nil // no state asked for: any
	}
	var out []JobListParams
	if st, ok := IntersectStates(asked, states); ok && len(states) > 0 {
		q := p
		q.States = st
		out = append(out, q)
	}
	if a == ActionRequeue && (p.Error == "" || p.Error == ErrorLeaseExpired) {
		if st, ok := IntersectStates(asked, []JobState{JobFailed}); ok {
			q := p
			q.States, q.Error = st, ErrorLeaseExpired
			out = append(out, q)
		}
	}
	return out
}
