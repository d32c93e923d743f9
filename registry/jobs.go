package registry

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"
)

// Poll limits (docs/protocol.md). A poll that names no limit gets one job.
// The public operator names none: it works through a poll's jobs one at a
// time, acks each only when it reaches it, and takes a 409 on ack for
// success. Handed ten jobs that took 4 s each to apply, it still held the
// last ones unacked when the visibility window (30 s) ended; another of its
// replicas received and acked them, and it then applied them a second time
// (2 of 10, issue 28). A single job is acked as soon as it arrives, and the
// operator applies serially and polls again at once after a poll that
// returned a job, so it loses one round trip per job, nothing else. A
// client that names a limit acks what it gets within the window (the
// reference agent asks for as many as it has free slots, and acks each at
// once).
const (
	DefaultPollLimit = 1
	MaxPollLimit     = 100
)

// SubmitJob checks a submission against its cluster's identity record and
// queues it. If its idempotency key answers a job of the cluster already (an
// open job with the key, or one created with it within the retention,
// whatever its state), that job is returned instead, with created=false;
// CodeConflict if that job was made from another kind or payload, or was
// deleted.
func (r *Registry) SubmitJob(ctx context.Context, s JobSubmission) (job *Job, created bool, err error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, false, err
	}
	s.RetryOf = "" // RetryJob's alone: a retry takes its original's key
	return r.submit(ctx, s, AuditJobSubmit, "")
}

// submit is SubmitJob once authorized, audited as action.
func (r *Registry) submit(ctx context.Context, s JobSubmission, action, reason string) (job *Job, created bool, err error) {
	c, err := r.clusterForSubmit(ctx, s.ClusterID)
	if err != nil {
		return nil, false, err
	}
	if c.State == ClusterDisabled {
		return nil, false, Errorf(CodeForbidden, "cluster %s (%s) is disabled; enable it before submitting jobs", c.Name, c.ID)
	}
	s.Payload = bytes.TrimSpace(s.Payload)
	if err := PayloadJSONError(s.Payload); err != nil {
		return nil, false, err
	}
	checked, err := checkPayload(c, s.Kind, s.Payload)
	if err != nil {
		return nil, false, err
	}
	if err := checkIdempotencyKey(s.IdempotencyKey); err != nil {
		return nil, false, err
	}
	if !ValidTraceparent(s.Traceparent) {
		return nil, false, Errorf(CodeInvalid, "traceparent %q is not a W3C trace context (00-<32 hex>-<16 hex>-<2 hex>)", truncateText(s.Traceparent, 80))
	}
	now := r.Now()
	j := Job{
		ID: newJobID(), ClusterID: c.ID, Kind: s.Kind, Intent: checked.intent, Target: checked.target,
		Payload: s.Payload, IdempotencyKey: s.IdempotencyKey, State: JobQueued, Attempt: 1,
		CreatedAt: now, UpdatedAt: now, SubmittedBy: ActorFrom(ctx).String(), RetryOf: s.RetryOf,
		Traceparent: s.Traceparent,
	}
	if s.ExpiresIn != 0 {
		if s.ExpiresIn < MinJobExpiry || s.ExpiresIn > MaxJobExpiry {
			return nil, false, Errorf(CodeInvalid, "expires-in %s must be between 1s and 8760h (365 days)", s.ExpiresIn)
		}
		j.ExpiresAt = now.Add(s.ExpiresIn)
	}
	if err := r.sealJob(c, &j); err != nil {
		return nil, false, err
	}
	msg := "submitted " + string(j.Kind) + " " + j.Target.String()
	if j.RetryOf != "" {
		msg += ", retrying " + j.RetryOf
	}
	job, created, err = r.store.JobInsert(ctx, JobInsertParams{
		Job:     j,
		History: JobHistoryEntry{At: now, Type: HistorySubmitted, Actor: j.SubmittedBy, Message: msg},
		Audit:   r.auditEntry(ctx, action, c.ID, "job", j.ID, reason),
		// A retry is an admin's decision to run the request again: it
		// takes the key, and a producer's replay then answers the retry.
		KeyUntil: r.keyUntil(j.IdempotencyKey, now), TakeKey: s.RetryOf != "",
	})
	if err == nil && !created && s.RetryOf == "" {
		err = r.checkReplay(s, job)
	}
	if err != nil {
		return nil, false, err
	}
	return job, created, nil
}

// AuditJobRetry is the audit action of RetryJob.
const AuditJobRetry = "job.retry"

// Retryable reports whether an admin may retry the job: it ended without
// doing its work (failed, conflicted, expired or canceled).
func (j *Job) Retryable() bool {
	switch j.State {
	case JobFailed, JobConflict, JobExpired, JobCanceled:
		return true
	}
	return false
}

// RetryJob submits a new job with the payload of a job that ended without
// doing its work, linked to it (RetryOf) and with its idempotency key, after
// the same policy checks as any submission (the cluster's allowlists may
// have changed since). The original stays as it ended; the key answers the
// retry from then on.
func (r *Registry) RetryJob(ctx context.Context, id, reason string) (*Job, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	j, err := r.getJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if !j.Retryable() {
		return nil, Errorf(CodeConflict, "job %s is %s; only failed, conflicting, expired or canceled jobs can be retried (requeue fences off a running one)", j.ID, describeState(j))
	}
	payload, err := r.openPayload(j)
	if err != nil {
		return nil, err
	}
	why := "retry of " + j.ID
	if reason != "" {
		why += ": " + reason
	}
	next, created, err := r.submit(ctx, JobSubmission{ClusterID: j.ClusterID, Kind: j.Kind, Payload: payload, IdempotencyKey: j.IdempotencyKey, RetryOf: j.ID}, AuditJobRetry, why)
	if err != nil {
		return nil, withholdSealedRefusal(ctx, j, err)
	}
	if !created {
		return nil, Errorf(CodeConflict, "job %s has an open job with the same idempotency key already (%s); it is the retry", j.ID, next.ID)
	}
	return next, nil
}

// withholdSealedRefusal rewords a policy refusal of a sealed job's retry for
// a caller who may not see sealed payloads (an operator): the refusal names
// what the payload holds (a catalog entry, an operation template), which
// --show-payload keeps for admins. The code stays, so a program still knows
// which rule refused it.
func withholdSealedRefusal(ctx context.Context, j *Job, err error) error {
	if !j.PayloadSealed || (!IsPolicyRefusal(err) && ErrorCode(err) != CodeInvalid) || authorize(ctx, PermAdmin) == nil {
		return err
	}
	return Errorf(ErrorCode(err), "job %s's sealed payload is now refused by its cluster's policy (%s), so it cannot be retried; the reason names what the payload holds, which only an admin may see (tether job retry %s as an admin, or job get %s --show-payload)", j.ID, ErrorCode(err), j.ID, j.ID)
}

// maxRetriedBy bounds a job's RetriedBy: a job is retried a handful of
// times at most, and a retry that ends badly is retried itself (its own
// RetriedBy), not its original again.
const maxRetriedBy = 100

// GetJob returns a job, with the jobs retried from it (RetriedBy): the
// detail that on-call opens before retrying it.
func (r *Registry) GetJob(ctx context.Context, id string) (*Job, error) {
	j, err := r.getJob(ctx, id)
	if err != nil {
		return nil, err
	}
	// A retry runs on its original's cluster, which the caller may see
	// (getJob checked): the cluster filter keeps the scope all the same.
	retries, err := r.store.JobList(ctx, JobListParams{RetryOf: j.ID, OldestFirst: true, Limit: maxRetriedBy})
	if err != nil {
		return nil, err
	}
	for _, next := range retries {
		if next.ClusterID == j.ClusterID {
			j.RetriedBy = append(j.RetriedBy, next.ID)
		}
	}
	return j, nil
}

// getJob is GetJob without the retries, for the operations that read a job
// to check it.
func (r *Registry) getJob(ctx context.Context, id string) (*Job, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	j, err := r.store.JobGet(ctx, strings.TrimSpace(id))
	if err == nil && orgScope(ctx) != "" {
		if _, cerr := r.GetCluster(ctx, j.ClusterID); cerr != nil {
			j, err = nil, cerr
		}
	}
	if ErrorCode(err) == CodeNotFound {
		return nil, Errorf(CodeNotFound, "no job has the id %q", id)
	}
	return j, err
}

// JobHistory returns a job's timeline, oldest first.
func (r *Registry) JobHistory(ctx context.Context, id string) ([]JobHistoryEntry, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	if orgScope(ctx) != "" { // the job's cluster must be visible
		if _, err := r.getJob(ctx, id); err != nil {
			return nil, err
		}
	}
	return r.store.JobHistory(ctx, id)
}

// ListJobs returns jobs matching p, newest first unless p.OldestFirst.
func (r *Registry) ListJobs(ctx context.Context, p JobListParams) ([]Job, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	ids, visible, err := r.scopedClusterIDs(ctx, p.ClusterIDs)
	if err != nil || !visible {
		return []Job{}, err
	}
	p.ClusterIDs = ids
	for _, s := range p.States {
		if !s.Valid() {
			return nil, Errorf(CodeInvalid, "job state %q is not one of %v", s, JobStates)
		}
	}
	if err := checkJobFilters(p); err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	return r.store.JobList(ctx, p)
}

// MaxSearchWords bounds a job search: each word is a condition of the
// store's query, and SQLite refuses a query of a thousand or so.
const MaxSearchWords = 32

// checkJobFilters refuses a job list's free text that no store could look
// up: a search of too many words, or any filter longer than MaxQueryText.
func checkJobFilters(p JobListParams) error {
	if err := checkQueryText("search", p.Search); err != nil {
		return err
	}
	if err := checkQueryText("error", p.Error); err != nil {
		return err
	}
	if n := len(strings.Fields(p.Search)); n > MaxSearchWords {
		return Errorf(CodeInvalid, "search has %d words; at most %d", n, MaxSearchWords)
	}
	return nil
}

// CountJobs counts jobs matching p.
func (r *Registry) CountJobs(ctx context.Context, p JobListParams) (int, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return 0, err
	}
	ids, visible, err := r.scopedClusterIDs(ctx, p.ClusterIDs)
	if err != nil || !visible {
		return 0, err
	}
	p.ClusterIDs = ids
	if err := checkJobFilters(p); err != nil {
		return 0, err
	}
	return r.store.JobCount(ctx, p)
}

// JobCounts returns the number of jobs per cluster and state.
func (r *Registry) JobCounts(ctx context.Context) ([]JobCount, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, err
	}
	counts, err := r.store.JobCounts(ctx)
	if err != nil || orgScope(ctx) == "" {
		return counts, err
	}
	visible, _, err := r.scopedClusterIDs(ctx, nil)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(counts, func(c JobCount) bool { return !slices.Contains(visible, c.ClusterID) }), nil
}

func ptr[T any](v T) *T { return &v }

// RequeueOptions are a requeue's choices beyond the job.
type RequeueOptions struct {
	Reason string // for the job's timeline and the audit trail
	// ExtendExpiry, when set, moves the expiry of a job that has one to
	// now + ExtendExpiry, if that is later, in the requeue's own statement:
	// a job requeued past (or near) its expiry would otherwise expire again
	// at once (Job.ExpiresOnRequeue). A job without an expiry keeps none.
	ExtendExpiry time.Duration
	// Attempt, when > 0, is the attempt the caller means to requeue (as it
	// saw the job): if the job has moved on since (the reaper requeued it
	// and an agent claimed it again), the requeue is refused (CodeConflict)
	// rather than fencing off a holder the caller never saw.
	Attempt int
}

// RequeueJob puts a job back in the queue as a new attempt: an in_progress
// job (whose holder is fenced off: its claim no longer matches), or one that
// failed because its attempts ran out.
func (r *Registry) RequeueJob(ctx context.Context, id, reason string) (*Job, error) {
	return r.RequeueJobWith(ctx, id, RequeueOptions{Reason: reason})
}

// RequeueJobWith is RequeueJob with its options: the expiry extended with
// the requeue, atomically.
func (r *Registry) RequeueJobWith(ctx context.Context, id string, o RequeueOptions) (*Job, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	if o.ExtendExpiry != 0 && (o.ExtendExpiry < MinJobExpiry || o.ExtendExpiry > MaxJobExpiry) {
		return nil, Errorf(CodeInvalid, "expiry extension %s must be between 1s and 8760h (365 days)", o.ExtendExpiry)
	}
	if o.Attempt < 0 {
		return nil, Errorf(CodeInvalid, "attempt %d must be positive (the attempt you mean to requeue, as job get shows it), or left out", o.Attempt)
	}
	j, err := r.getJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if o.Attempt > 0 && j.Attempt != o.Attempt {
		return nil, attemptMoved(j, o.Attempt)
	}
	if !j.Requeueable() {
		return nil, Errorf(CodeConflict, "job %s is %s; only in_progress jobs and jobs that ran out of attempts can be requeued", j.ID, describeState(j))
	}
	// The update is conditioned on the job as read here, so that o.Attempt,
	// checked above against that read, holds when the update applies: an
	// in_progress job must still have the claim read (a claim belongs to one
	// attempt: a later attempt has another), a failed one must still be out
	// of attempts at the attempt read (a failed job requeued, claimed and
	// failed again meanwhile is at a later attempt with the same state and
	// error). Each condition is the update's own, so a read and a requeue of
	// the next attempt cannot slip in between.
	p := JobUpdateParams{ID: j.ID, FromStates: []JobState{JobInProgress}, ClaimID: j.ClaimID, Attempt: j.Attempt}
	if j.State == JobFailed { // out of attempts (Requeueable)
		p.FromStates, p.Error, p.ClaimID = []JobState{JobFailed}, ErrorLeaseExpired, ""
	}
	now := r.Now()
	msg := "requeued by an admin"
	if j.ClaimID != "" {
		msg += "; claim " + j.ClaimID + " is fenced off"
	}
	p.Set = JobSet{Now: now, State: JobQueued, AttemptIncrement: true, Reopen: true}
	if until := now.Add(o.ExtendExpiry); o.ExtendExpiry > 0 && !j.ExpiresAt.IsZero() && j.ExpiresAt.Before(until) {
		p.Set.ExpiresAt = until
		msg += "; expiry extended from " + j.ExpiresAt.UTC().Format(time.RFC3339) + " to " + until.UTC().Format(time.RFC3339)
	}
	if o.Reason != "" {
		msg += ": " + o.Reason
	}
	p.History = &JobHistoryEntry{At: now, Type: HistoryRequeued, Actor: ActorFrom(ctx).String(), Message: msg}
	p.Audit = ptr(r.auditEntry(ctx, AuditJobRequeue, j.ClusterID, "job", j.ID, msg))
	done, err := r.adminJobUpdate(ctx, p, "requeue")
	if ErrorCode(err) == CodeConflict && o.Attempt > 0 {
		// The job changed between the read and the update: say so in the
		// caller's terms when it moved to another attempt.
		if cur, gerr := r.getJob(ctx, id); gerr == nil && cur.Attempt != o.Attempt {
			return nil, attemptMoved(cur, o.Attempt)
		}
	}
	return done, err
}

// attemptMoved is a requeue's refusal of a job that is no longer at the
// attempt the caller asked to requeue.
func attemptMoved(j *Job, asked int) error {
	now := describeState(j)
	if j.ClaimID != "" {
		now = "claim " + j.ClaimID + ", " + now
	}
	return Errorf(CodeConflict, "job %s is at attempt %d now (%s), not attempt %d that you asked to requeue: look at it again before requeuing", j.ID, j.Attempt, now, asked)
}

// CancelJob ends a queued or in_progress job as canceled. Its holder's next
// status, heartbeat or result gets job_canceled, which tells it to stop.
func (r *Registry) CancelJob(ctx context.Context, id, reason string) (*Job, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	j, err := r.getJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if !j.Cancelable() {
		return nil, Errorf(CodeConflict, "job %s is already %s", j.ID, describeState(j))
	}
	now := r.Now()
	var noLease time.Time
	errText := ErrorCanceled
	msg := "canceled by an admin"
	if reason != "" {
		msg += ": " + reason
	}
	return r.adminJobUpdate(ctx, JobUpdateParams{
		ID: j.ID, FromStates: []JobState{JobQueued, JobInProgress},
		Set:     JobSet{Now: now, State: JobCanceled, Error: &errText, FinishedAt: now, LeaseExpiresAt: &noLease},
		History: &JobHistoryEntry{At: now, Type: HistoryCanceled, Actor: ActorFrom(ctx).String(), Message: msg},
		Audit:   ptr(r.auditEntry(ctx, AuditJobCancel, j.ClusterID, "job", j.ID, msg)),
	}, "cancel")
}

// ExtendLease gives a leased in_progress job's holder more time: the lease
// ends by after the later of now and its current end.
func (r *Registry) ExtendLease(ctx context.Context, id string, by time.Duration) (*Job, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	if by <= 0 || by > MaxLeaseSeconds*time.Second {
		return nil, Errorf(CodeInvalid, "lease extension %s must be positive and at most 24h", by)
	}
	j, err := r.getJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if j.State != JobInProgress || !j.Leased() {
		return nil, Errorf(CodeConflict, "job %s has no lease to extend (it is %s)", j.ID, describeState(j))
	}
	now := r.Now()
	until := j.LeaseExpiresAt
	if until.Before(now) {
		until = now
	}
	until = until.Add(by)
	msg := "lease extended to " + until.Format(time.RFC3339) + " by an admin"
	return r.adminJobUpdate(ctx, JobUpdateParams{
		ID: j.ID, FromStates: []JobState{JobInProgress}, ClaimID: j.ClaimID, Leased: true,
		Set:     JobSet{Now: now, LeaseExpiresAt: &until},
		History: &JobHistoryEntry{At: now, Type: HistoryLeaseExtends, Actor: ActorFrom(ctx).String(), Message: msg},
		Audit:   ptr(r.auditEntry(ctx, AuditJobExtendLease, j.ClusterID, "job", j.ID, msg)),
	}, "extend the lease of")
}

func (r *Registry) adminJobUpdate(ctx context.Context, p JobUpdateParams, verb string) (*Job, error) {
	p.FullJob = true // the admin sees the job as it now is
	j, applied, err := r.store.JobUpdate(ctx, p)
	if err != nil {
		return nil, err
	}
	if !applied {
		if j == nil {
			return nil, Errorf(CodeNotFound, "job %s no longer exists", p.ID)
		}
		return nil, Errorf(CodeConflict, "could not %s job %s: it changed meanwhile and is now %s; look again and retry", verb, p.ID, describeState(j))
	}
	return j, nil
}

func describeState(j *Job) string {
	if j.Error != "" && j.State.Terminal() {
		return string(j.State) + " (" + j.Error + ")"
	}
	return string(j.State)
}
