package registry

import (
	"context"
	"time"
)

// JobStore is the part of Store that keeps jobs, their claims and their history.
// Every method that writes is atomic, as Store's are.
type JobStore interface {
	// JobInsert inserts a job, unless its idempotency key (when it has one)
	// answers another job of the cluster: an open (queued or in_progress)
	// job with the key; or, when p.KeyUntil is set and not p.TakeKey, the
	// job the key was last given to, while the key lasts (a key whose end is
	// at or before p.Job.CreatedAt has expired). It then returns that job
	// and created=false, or KeyOfDeletedJob (CodeConflict) if the key's job
	// no longer exists. A job inserted with p.KeyUntil set becomes its key's
	// answer until then.
	// Of concurrent inserts with one key, on any number of connections or
	// replicas, one inserts and the others return its job.
	JobInsert(ctx context.Context, p JobInsertParams) (job *Job, created bool, err error)
	JobGet(ctx context.Context, id string) (*Job, error)
	// JobList returns jobs matching every set filter, newest first unless
	// p.OldestFirst.
	JobList(ctx context.Context, p JobListParams) ([]Job, error)
	// JobCount counts jobs matching p's filters (Limit and Offset ignored).
	JobCount(ctx context.Context, p JobListParams) (int, error)
	// JobsDeliver is what a poll hands out: up to p.Limit of a cluster's
	// queued jobs that have not expired at p.Now and are not hidden, oldest
	// first. It hides them until p.HideUntil (unless zero) in the same
	// atomic statement, so concurrent polls never receive the same job while
	// it is hidden. A requeue (JobSet.Reopen) makes a job visible again.
	JobsDeliver(ctx context.Context, p JobsDeliverParams) ([]Job, error)
	// JobsUnhide undoes a JobsDeliver's hiding for the jobs of p.IDs that
	// are still queued in p.ClusterID and hidden until exactly
	// p.HiddenUntil (a later poll's hiding is left alone): the next poll
	// sees them at once. Like the hiding, it writes no change-feed row, so
	// it wakes no held poll.
	JobsUnhide(ctx context.Context, p JobsUnhideParams) error
	// JobHistory returns a job's timeline, oldest first.
	JobHistory(ctx context.Context, jobID string) ([]JobHistoryEntry, error)
	// JobCounts returns the number of jobs per cluster and state, kept by the
	// store as jobs change so it costs nothing to read.
	JobCounts(ctx context.Context) ([]JobCount, error)
	// JobUpdate applies p.Set to the job if every condition of p holds, in one
	// conditional statement, with p.History and p.Audit. It returns the job as
	// updated and applied=true (only its key fields unless p.FullJob; see
	// JobUpdateParams); or, when a condition failed, the whole job as it is
	// (nil if it does not exist) and applied=false, so that the caller can say
	// which condition failed.
	JobUpdate(ctx context.Context, p JobUpdateParams) (job *Job, applied bool, err error)
	// JobRenewLease is a lease heartbeat: if the job is in_progress under
	// p.ClusterID and p.ClaimID (when set) and has a lease, its lease ends
	// at p.Now + its lease seconds and its agent was last heard at p.Now.
	// It writes only the job's claim (seed 004's job_claim: a narrow row of
	// its own), never the job's row, its indexes, its history or the change
	// feed: heartbeats are a fleet's most frequent write. It returns the
	// job's key fields (as JobUpdate without FullJob) and applied=true; or
	// the whole job as it is (nil if none) and applied=false.
	JobRenewLease(ctx context.Context, p JobRenewLeaseParams) (job *Job, applied bool, err error)
	// JobDelete deletes the job if it is in one of p.States, with its history,
	// in one transaction that writes p.Audit, keeps the job counts right and
	// feeds a job delete to watchers. It returns the job as it was and
	// deleted=true; or the job as it is and deleted=false when it is in
	// another state; CodeNotFound when there is no such job.
	JobDelete(ctx context.Context, p JobDeleteParams) (job *Job, deleted bool, err error)
	// JobsReclaim handles in_progress jobs whose lease expired before p.Now, at
	// most p.Limit of them: a job below its cluster's max attempts goes back to
	// queued with attempt+1 and no claim, visible to the next poll at once
	// (whatever window its last delivery hid it for); the others end failed with error
	// lease_expired. Each gets a history entry and an audit entry by p.Actor.
	JobsReclaim(ctx context.Context, p JobsReclaimParams) (ReclaimCounts, error)
	// JobsExpire ends queued jobs whose expiresAt is before p.Now as expired,
	// at most p.Limit of them, with history and audit entries.
	JobsExpire(ctx context.Context, p JobsExpireParams) (int, error)
}

type JobInsertParams struct {
	Job     Job
	History JobHistoryEntry
	Audit   AuditEntry
	// KeyUntil is until when the job's idempotency key answers it,
	// whatever its state; zero: only while it is open (no key, or keys
	// kept for open jobs only).
	KeyUntil time.Time
	// TakeKey makes the job its key's answer even while the key answers
	// another job still (a retry takes its original's key). An open job
	// with the key still wins.
	TakeKey bool
}

// JobListParams filters jobs; zero values do not filter.
type JobListParams struct {
	ClusterIDs []string
	States     []JobState
	Kind       JobKind
	// Search is words separated by spaces; each must be a substring (in
	// any ASCII case) of the id, idempotency key, target namespace or
	// name, error or kind, or of the job's cluster's name.
	// A cluster's name matches the jobs of that cluster; an org-scoped
	// caller's ClusterIDs keep other organizations' jobs out whatever
	// their cluster is named.
	Search string
	Error  string
	// RetryOf: only the retries of this job (RetryJob's jobs whose RetryOf
	// names it), read through an index of the retries alone.
	RetryOf string
	// LeaseExpiredBefore: only leased jobs whose lease ends before it.
	LeaseExpiredBefore time.Time
	// LeaseLiveAt: only jobs without a lease or whose lease ends at or
	// after it (what LeaseExpiredBefore leaves out).
	LeaseLiveAt time.Time
	// ExceptClusterIDs: only jobs of none of these clusters (a short
	// list: the stuck queries leave out the unreachable clusters).
	ExceptClusterIDs []string
	// NoLease with ActivityBefore: unleased jobs silent since before it.
	NoLease        bool
	ActivityBefore time.Time
	// FinishedAfter: only jobs that finished after it.
	FinishedAfter time.Time
	OldestFirst   bool
	// After, when set, lists only the jobs that come after this one in the
	// list's order: keyset paging, which costs the same however deep the
	// page and never skips a job when earlier ones change meanwhile.
	After  *JobCursor
	Limit  int
	Offset int
}

// JobCursor is a position in a list of jobs: the last job of a page.
type JobCursor struct {
	CreatedAt time.Time
	ID        string
}

type JobsDeliverParams struct {
	ClusterID string
	Now       time.Time
	HideUntil time.Time
	Limit     int
}

type JobsUnhideParams struct {
	ClusterID   string
	IDs         []string
	HiddenUntil time.Time
}

type JobCount struct {
	ClusterID string
	State     JobState
	Count     int64
}

// JobUpdateParams is one conditional transition of one job.
type JobUpdateParams struct {
	ID string
	// Conditions; zero values are not checked.
	ClusterID    string
	FromStates   []JobState // the job's state must be one of these
	ClaimID      string     // the job's current claim must be this
	NotExpiredAt time.Time  // expiresAt must be unset or after this
	Leased       bool       // the job must have a lease
	Error        string     // the job's error must be this
	Attempt      int        // the job must be at this attempt (when > 0)
	// Changes.
	Set     JobSet
	History *JobHistoryEntry // JobID, Attempt and State are filled in
	Audit   *AuditEntry
	// FullJob asks for the whole updated job. Without it an applied update
	// returns only ID, ClusterID, Kind, State, Attempt, ClaimID, LeaseExpiresAt
	// and UpdatedAt: agents' hot path (ack, status, heartbeat, result) needs no
	// more, and reading back every column (the payload included) was most of
	// its cost.
	FullJob bool
}

// JobSet lists what a transition changes; nil or zero fields are unchanged.
type JobSet struct {
	Now   time.Time // written to updatedAt
	State JobState
	// AttemptIncrement starts a new attempt.
	AttemptIncrement bool
	// Reopen clears the claim, lease, phase and everything a job's end
	// recorded (outcome, error, result, finish time).
	Reopen bool
	// Claim, when non-nil, replaces the claim (a zero Claim clears it,
	// leases included). A lease (a non-zero LeaseExpiresAt) is kept apart
	// from the job's row, in the job's claim (see JobRenewLease).
	Claim *JobClaimSet
	// LeaseExpiresAt, when non-nil, sets the lease end of a leased job
	// (zero ends the lease).
	LeaseExpiresAt *time.Time
	// RenewLease moves a leased job's lease end to Now + its lease seconds.
	RenewLease     bool
	LastActivityAt time.Time
	Phase          *string
	Outcome        Outcome
	Error          *string
	Result         []byte
	FinishedAt     time.Time
	// ExpiresAt, when non-zero, moves the job's expiry (a requeue that
	// extends it).
	ExpiresAt time.Time
}

// JobRenewLeaseParams names the lease JobRenewLease renews.
type JobRenewLeaseParams struct {
	ID        string
	ClusterID string
	ClaimID   string // checked when set
	Now       time.Time
}

type JobClaimSet struct {
	ClaimID        string
	ClaimedAt      time.Time
	ClaimedBy      string
	LeaseSeconds   int
	LeaseExpiresAt time.Time
}

type JobsReclaimParams struct {
	Now   time.Time
	Limit int
	Actor string
}

type ReclaimCounts struct {
	Requeued int
	Failed   int
	// ByCluster is the same counts by cluster id (clusters with none are
	// absent), for per-cluster metrics.
	ByCluster map[string]ClusterReclaims
}

// ClusterReclaims is one cluster's share of a ReclaimCounts.
type ClusterReclaims struct {
	Requeued int
	Failed   int
}

type JobsExpireParams struct {
	Now   time.Time
	Limit int
	Actor string
}
