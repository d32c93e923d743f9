package registry

import (
	"context"
	"time"
)

// Store is the persistence the registry needs. Implementations (store/sqlite,
// store/postgres) make every method that writes atomic: one conditional
// statement or one transaction, with its audit entries and change-feed rows in
// the same transaction. They enforce no business rules beyond the conditions
// the params spell out; the registry decides what to ask for and what a refusal
// means. store/storetest holds the behaviour every implementation must pass.
//
// Errors: CodeNotFound for a missing record, CodeConflict for a lost
// compare-and-swap or a broken uniqueness rule, CodeUnavailable after Close
// and whenever the database cannot serve for now but may once its cause is
// gone (read-only, disk full, down, locked, shutting down), CodeInternal for
// anything else. Methods document other codes they return. A CodeUnavailable
// message says what failed, never where (no file path, no database URL): it
// reaches agents and unauthenticated probes; the cause, kept in Err, reaches
// the log.
type Store interface {
	// Areas added after the first release each have their own file
	// (store_<area>.go), so that they are read and grown on their own.
	AdminTokenStore
	WebhookStore
	KeyStore
	CAStore
	SSHHostKeyStore
	ResealStore
	RetentionStore
	RolloutStore
	QueueStatsStore

	// ClusterCreate inserts a cluster, its first registration token (optional)
	// and audit entries. CodeConflict if the name is taken.
	ClusterCreate(ctx context.Context, p ClusterCreateParams) error
	// ClusterGet returns a cluster with its observed status.
	ClusterGet(ctx context.Context, id string) (*Cluster, error)
	// ClusterGetByName finds a cluster by its display name (case-insensitive).
	ClusterGetByName(ctx context.Context, name string) (*Cluster, error)
	// ClusterList returns clusters ordered by name.
	ClusterList(ctx context.Context, p ClusterListParams) ([]Cluster, error)
	// ClusterUpdate replaces the spec if the stored version is p.Version, and
	// increments the version. A stale version is CodeConflict, and the error
	// message names the current version.
	ClusterUpdate(ctx context.Context, p ClusterUpdateParams) (*Cluster, error)
	// ClusterSetEnabled disables a cluster, or enables it back to Active
	// (Pending if it never registered). It increments the version.
	ClusterSetEnabled(ctx context.Context, p ClusterSetEnabledParams) (*Cluster, error)
	// ClusterSetPaused pauses a cluster's queue (PausedAt = p.Now, with
	// p.Reason) or resumes it, and increments the version.
	ClusterSetPaused(ctx context.Context, p ClusterSetPausedParams) (*Cluster, error)
	// ClusterDelete deletes a cluster and everything it owns (status, tokens,
	// credentials, jobs and their history, events) in one transaction.
	ClusterDelete(ctx context.Context, p ClusterDeleteParams) error

	// TokenCreate inserts a registration token and voids the cluster's older
	// unused tokens (revoked, reason "superseded").
	TokenCreate(ctx context.Context, p TokenCreateParams) error
	TokenGet(ctx context.Context, id string) (*RegistrationToken, error)
	// TokenList returns a cluster's tokens, newest first; all tokens if
	// clusterID is empty.
	TokenList(ctx context.Context, clusterID string) ([]RegistrationToken, error)
	// TokenRevoke revokes an unused, unrevoked token. CodeConflict if it was
	// already used or revoked.
	TokenRevoke(ctx context.Context, p TokenRevokeParams) (*RegistrationToken, error)
	// TokenRedeem is registration. In one transaction it reads the token and
	// its cluster, runs p.Check on them (which must have no side effects: a
	// store may run it again when it retries the transaction) (an error from Check aborts and is
	// returned as is), marks the token used only if it still is unused,
	// inserts p.Credential for the token's cluster, makes the cluster Active,
	// records the negotiated capabilities in its status, and writes p.Audit.
	// Of concurrent redemptions of one token exactly one succeeds; the others
	// get the error Check returns for a used token. CodeNotFound: no such token.
	TokenRedeem(ctx context.Context, p TokenRedeemParams) (*Cluster, error)

	CredentialGet(ctx context.Context, id string) (*Credential, error)
	// CredentialList returns a cluster's credentials, newest first.
	CredentialList(ctx context.Context, clusterID string) ([]Credential, error)
	// CredentialRotate inserts p.New and marks p.OldID superseded, cutting its
	// full access to p.OldExpiresAt (never extending it), provided the old
	// credential is unrevoked, not yet superseded (a credential rotates once)
	// and may still rotate at p.Now. CodeConflict if it was already rotated,
	// CodeUnauthorized otherwise.
	CredentialRotate(ctx context.Context, p CredentialRotateParams) error
	// CredentialRestrict cuts the access windows of a cluster's live
	// credentials (or of one) to the given times, never extending them, and
	// optionally marks them revoked. It returns how many it changed.
	CredentialRestrict(ctx context.Context, p CredentialRestrictParams) (int, error)

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

	// EventsAppend stores a batch of a cluster's events, dropping those whose
	// eventKey was already seen at or after p.DedupeAfter (an older sighting is
	// renewed instead), and applies p.Heartbeat to the cluster's status. It
	// returns how many events were stored.
	EventsAppend(ctx context.Context, p EventsAppendParams) (int, error)
	// EventList returns events matching p, newest first.
	EventList(ctx context.Context, p EventListParams) ([]Event, error)
	// EventsPrune deletes events older than p.OlderThan and beyond the newest
	// p.KeepPerCluster of each cluster, and forgets event keys last seen
	// before p.KeysBefore. It returns how many events it deleted.
	EventsPrune(ctx context.Context, p EventsPruneParams) (int, error)

	// AuditAppend writes audit entries that accompany no other change (for
	// example a refused registration).
	AuditAppend(ctx context.Context, entries ...AuditEntry) error
	// AuditList returns audit entries matching p, newest first.
	AuditList(ctx context.Context, p AuditListParams) ([]AuditEntry, error)

	// ChangesSince returns change-feed entries with Seq > after, oldest first.
	ChangesSince(ctx context.Context, after int64, limit int) ([]Change, error)
	// ChangesLatest returns the newest change's Seq and the oldest position a
	// watcher can resume from (every entry after it is still kept). A new store's feed holds one bookkeeping entry, so that the latest
	// Seq is never 0 (zero asks Watch for a snapshot).
	ChangesLatest(ctx context.Context) (latest, oldest int64, err error)
	// ChangesPrune forgets change-feed entries written before p.Before, but
	// always keeps the newest p.Keep.
	ChangesPrune(ctx context.Context, p ChangesPruneParams) (int, error)
	// NotifyChanges sends on ch (without blocking; a full channel already
	// holds a wake-up) once as soon as it is listening, and then whenever the
	// change feed may have grown: at once for writes through this Store, and
	// within a short interval for writes by other processes. It returns when
	// ctx is done.
	NotifyChanges(ctx context.Context, ch chan<- struct{}) error

	// Ping checks the store is reachable and its schema current.
	Ping(ctx context.Context) error
	// CheckWritable makes one small real write and commits it, so that a
	// store that can be read but not written (a read-only file, directory or
	// file system, a full disk, a PostgreSQL standby or a database that is
	// down) is seen before a caller's write fails. It writes no change-feed
	// entry. CodeUnavailable when the write failed.
	CheckWritable(ctx context.Context) error
	Close() error
}

type ClusterCreateParams struct {
	Cluster Cluster
	Token   *RegistrationToken
	Audit   []AuditEntry
}

type ClusterListParams struct {
	State        ClusterState
	Organization string
	// Selector is a label selector (ParseSelector). The registry applies it;
	// stores ignore it (a fleet's clusters fit in memory, and label matching
	// is the Kubernetes library's, not SQL's).
	Selector string
	// After, when set, lists only the clusters that come after this one in
	// the list's order: name with ASCII letters folded to lower case and
	// every other byte compared as it is (SQLite's NOCASE), then id. Both
	// stores sort in exactly that order, so a page cut on one resumes on
	// the same cluster on the other.
	After *ClusterCursor
	// Limit, when positive, is the most clusters listed. With a selector
	// it counts the matching clusters (the registry reads on until it has
	// them).
	Limit int
}

// ClusterCursor is a position in a list of clusters: the last cluster of a
// page.
type ClusterCursor struct {
	Name string
	ID   string
}

type ClusterUpdateParams struct {
	ID      string
	Version int64
	Spec    ClusterSpec
	Now     time.Time
	Audit   AuditEntry
}

type ClusterSetEnabledParams struct {
	ID      string
	Enabled bool
	Now     time.Time
	Audit   AuditEntry
}

type ClusterSetPausedParams struct {
	ID     string
	Paused bool
	Now    time.Time
	Reason string
	Audit  AuditEntry
}

type ClusterDeleteParams struct {
	ID    string
	Audit AuditEntry
}

type TokenCreateParams struct {
	Token RegistrationToken
	Audit AuditEntry
}

type TokenRevokeParams struct {
	ID    string
	Now   time.Time
	Audit AuditEntry
}

type TokenRedeemParams struct {
	TokenID    string
	Now        time.Time
	Check      func(*RegistrationToken, *Cluster) error
	Credential Credential // ClusterID is filled in from the token
	// PublicKey, when set, becomes the cluster's public key (the agent's
	// encryption key), in the same transaction; the record's version
	// increases when it changes.
	PublicKey AgentPublicKey
	Audit     AuditEntry // ClusterID and TargetID are filled in
}

type CredentialRotateParams struct {
	OldID        string
	Now          time.Time
	OldExpiresAt time.Time
	New          Credential
	Audit        AuditEntry
}

type CredentialRestrictParams struct {
	ClusterID    string
	CredentialID string // empty: every live credential of the cluster
	Now          time.Time
	ExpiresAt    time.Time
	RotateUntil  time.Time
	RotateAfter  time.Time // zero: unchanged
	Revoke       bool
	Reason       string
	Audit        AuditEntry
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

type EventsAppendParams struct {
	ClusterID   string
	Events      []Event
	Now         time.Time
	DedupeAfter time.Time
	Heartbeat   *HeartbeatUpdate
}

// HeartbeatUpdate is what a ClusterHeartbeat changes in a cluster's status.
type HeartbeatUpdate struct {
	At time.Time
	// Conditions replace the stored ones when non-nil.
	Conditions []Condition
}

type EventListParams struct {
	ClusterID string
	// ClusterIDs, when set, keeps these clusters' only: the registry sets
	// it for an actor confined to an organization.
	ClusterIDs []string
	Kinds      []string
	FalseOnly  bool // only events with a False condition
	BeforeID   int64
	AfterID    int64
	Limit      int
}

type EventsPruneParams struct {
	OlderThan      time.Time
	KeepPerCluster int
	KeysBefore     time.Time
}

type AuditListParams struct {
	ClusterID string
	// ClusterIDs, when set, keeps these clusters' entries only: the
	// registry sets it for an actor confined to an organization.
	ClusterIDs []string
	Action     string // prefix, e.g. "job." or "credential.revoke"
	BeforeID   int64
	AfterID    int64
	Limit      int
}

type ChangesPruneParams struct {
	Before time.Time
	Keep   int
}

// EntityKind names what a change-feed entry is about.
type EntityKind string

const (
	EntityCluster    EntityKind = "cluster" // the record or its status
	EntityToken      EntityKind = "token"
	EntityCredential EntityKind = "credential"
	EntityJob        EntityKind = "job"
	EntityEvent      EntityKind = "event"
	EntityAudit      EntityKind = "audit"
	EntityRollout    EntityKind = "rollout"
)

// ChangeOp is what happened to the entity.
type ChangeOp string

const (
	OpUpsert ChangeOp = "upsert"
	OpDelete ChangeOp = "delete"
)

// Change is one change-feed entry, written in the transaction that made the
// change. It names the entity; watchers read the entity itself.
type Change struct {
	Seq       int64      `json:"seq"`
	Kind      EntityKind `json:"kind"`
	ID        string     `json:"id"`
	ClusterID string     `json:"clusterId,omitempty"`
	Op        ChangeOp   `json:"op"`
	// JobState is a job's state after the change, so that long-poll wake-ups
	// need not read the job.
	JobState JobState  `json:"jobState,omitempty"`
	At       time.Time `json:"at"`
}
