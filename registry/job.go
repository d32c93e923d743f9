package registry

import (
	"encoding/json"
	"time"
)

// JobKind is what a job asks the agent to do (seed 000).
type JobKind string

const (
	KindApply  JobKind = "apply"
	KindDelete JobKind = "delete"
	KindIntent JobKind = "intent"
)

// Intents of KindIntent jobs (PROTOCOL.md's producer table).
const (
	IntentEnsureApplicationInstance = "ensure-application-instance"
	IntentRequestOperation          = "request-operation"
	IntentDeleteApplicationInstance = "delete-application-instance"
)

// JobState is where a job is in its lifecycle (PROTOCOL.md).
type JobState string

const (
	JobQueued     JobState = "queued"
	JobInProgress JobState = "in_progress"
	JobSucceeded  JobState = "succeeded"
	JobFailed     JobState = "failed"
	JobNoop       JobState = "noop"
	JobConflict   JobState = "conflict"
	JobCanceled   JobState = "canceled"
	JobExpired    JobState = "expired"
)

// JobStates lists every state, open ones first.
var JobStates = []JobState{JobQueued, JobInProgress, JobSucceeded, JobFailed, JobNoop, JobConflict, JobCanceled, JobExpired}

// Terminal reports whether no further transition is possible without an
// admin requeue.
func (s JobState) Terminal() bool { return s != JobQueued && s != JobInProgress }

// Valid reports whether s is a known state.
func (s JobState) Valid() bool {
	for _, v := range JobStates {
		if v == s {
			return true
		}
	}
	return false
}

// Outcome is what an agent reports in a job's result.
type Outcome string

const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeNoop      Outcome = "noop"
	OutcomeConflict  Outcome = "conflict"
)

// State is the job state a result with this outcome leads to.
func (o Outcome) State() (JobState, bool) {
	switch o {
	case OutcomeSucceeded:
		return JobSucceeded, true
	case OutcomeFailed:
		return JobFailed, true
	case OutcomeNoop:
		return JobNoop, true
	case OutcomeConflict:
		return JobConflict, true
	}
	return "", false
}

// Error strings the system writes on jobs it ends itself.
const (
	ErrorLeaseExpired = "lease_expired"
	ErrorExpired      = "expired"
	ErrorCanceled     = "canceled"
)

// Job limits.
const (
	MaxPayloadBytes        = 1 << 20
	MaxIdempotencyKeyBytes = 512
	MinJobExpiry           = time.Second
	MaxJobExpiry           = 365 * 24 * time.Hour
)

// Target is the object a job is about, read from its payload: what the
// console shows in a job's target column.
type Target struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

func (t Target) String() string {
	s := t.Kind
	if t.Namespace != "" {
		s += "/" + t.Namespace
	}
	if t.Name != "" {
		s += "/" + t.Name
	}
	return s
}

// Job is a unit of work for one cluster's agent.
type Job struct {
	ID        string          `json:"id"`
	ClusterID string          `json:"clusterId"`
	Kind      JobKind         `json:"kind"`
	Intent    string          `json:"intent,omitempty"`
	Target    Target          `json:"target"`
	Payload   json.RawMessage `json:"payload"`
	// PayloadSealed: the payload is stored sealed (its cluster required
	// encrypted payloads at submit) and withheld from reads: Payload is null
	// unless ShowJobPayload opened it.
	PayloadSealed bool `json:"payloadSealed,omitempty"`
	// SealedPayload is the sealed payload as stored; never shown.
	SealedPayload  []byte   `json:"-"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
	State          JobState `json:"state"`
	// Attempt is 1-based; each reclaim or requeue starts a new attempt.
	Attempt     int       `json:"attempt"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	SubmittedBy string    `json:"submittedBy,omitempty"`
	// RetryOf names the job this one retries (RetryJob).
	RetryOf string `json:"retryOf,omitempty"`
	// Traceparent is the W3C trace context of the job's submission (empty
	// when it was not traced): agents get it, so that their work and the
	// server's spans for ack, status and result join the submitter's trace,
	// whichever replica answers them.
	Traceparent string `json:"traceparent,omitempty"`
	// RetriedBy names the jobs retried from this one, oldest first: the
	// forward link of RetryOf, so that whoever opens a failed job sees it
	// was retried already. Only a single job's read (GetJob) fills it;
	// lists and the feed leave it empty.
	RetriedBy []string `json:"retriedBy,omitempty"`

	// The current claim (in_progress jobs). ClaimID is the fencing token.
	ClaimID        string    `json:"claimId,omitempty"`
	ClaimedAt      time.Time `json:"claimedAt,omitzero"`
	ClaimedBy      string    `json:"claimedBy,omitempty"` // credential id
	LeaseSeconds   int       `json:"leaseSeconds,omitempty"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt,omitzero"` // zero: no lease, never reclaimed automatically
	// LastActivityAt is the last ack, status or heartbeat from the holder.
	LastActivityAt time.Time `json:"lastActivityAt,omitzero"`
	Phase          string    `json:"phase,omitempty"` // from the last status

	// The end.
	Outcome    Outcome         `json:"outcome,omitempty"`
	Error      string          `json:"error,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	FinishedAt time.Time       `json:"finishedAt,omitzero"`
}

// PayloadWithheld reports whether the job's payload is sealed and not
// shown: null (or absent) rather than opened by ShowJobPayload.
func (j *Job) PayloadWithheld() bool {
	return j.PayloadSealed && (len(j.Payload) == 0 || string(j.Payload) == "null")
}

// Leased reports whether the current claim has a lease the reaper watches.
func (j *Job) Leased() bool { return !j.LeaseExpiresAt.IsZero() }

// LeaseLapsedSince reports whether the lease of the job as read at readAt
// ended after that read and by now. A lease heartbeat renews the lease
// without changing the job anyone watches (it writes only the job's claim,
// and the change feed does not carry it), so a copy of the job kept since
// readAt cannot tell a lease that ran out from one renewed meanwhile:
// whoever shows it as expired reads the job again first.
func (j *Job) LeaseLapsedSince(readAt, now time.Time) bool {
	return j.State == JobInProgress && j.Leased() && j.LeaseExpiresAt.After(readAt) && !j.LeaseExpiresAt.After(now)
}

// HistoryType names an entry of a job's timeline.
type HistoryType string

const (
	HistorySubmitted    HistoryType = "submitted"
	HistoryClaimed      HistoryType = "claimed"
	HistoryStatus       HistoryType = "status"
	HistoryResult       HistoryType = "result"
	HistoryRequeued     HistoryType = "requeued"  // by an admin
	HistoryReclaimed    HistoryType = "reclaimed" // by the reaper after a lease expired
	HistoryFailed       HistoryType = "failed"    // by the reaper (attempts exhausted), or by a poll (undeliverable)
	HistoryCanceled     HistoryType = "canceled"
	HistoryExpired      HistoryType = "expired"
	HistoryLeaseExtends HistoryType = "lease_extended"
)

// JobHistoryEntry is one line of a job's timeline: what the agent reported
// and every transition tether made.
type JobHistoryEntry struct {
	Seq        int64       `json:"seq"`
	JobID      string      `json:"jobId"`
	At         time.Time   `json:"at"`
	Type       HistoryType `json:"type"`
	Actor      string      `json:"actor"`
	Attempt    int         `json:"attempt"`
	State      JobState    `json:"state"` // the job's state after this entry
	Phase      string      `json:"phase,omitempty"`
	Message    string      `json:"message,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	// ReportedAt is the agent's own timestamp, when it sent one.
	ReportedAt time.Time `json:"reportedAt,omitzero"`
}

// JobSubmission is what a producer sends.
type JobSubmission struct {
	ClusterID      string
	Kind           JobKind
	Payload        json.RawMessage
	IdempotencyKey string
	// ExpiresIn, when set, is how long the job may wait to be acked.
	ExpiresIn time.Duration
	// RetryOf names the finished job this one retries (RetryJob sets it).
	RetryOf string
	// Traceparent is the W3C trace context the submission ran in
	// ("00-<trace id>-<span id>-<flags>"), stored with the job; empty for
	// none.
	Traceparent string
}

// StatusReport is a job's interim status from its agent (seed 000).
type StatusReport struct {
	Phase      string
	Conditions []Condition
	Message    string
	Timestamp  time.Time
}

// ResultReport is a job's terminal result from its agent (seed 000). Body is
// the whole result document as sent, kept for display.
type ResultReport struct {
	Outcome Outcome
	Error   string
	Body    json.RawMessage
}

// Claim is what an ack hands to the agent.
type Claim struct {
	ClaimID        string
	LeaseExpiresAt time.Time // zero unless the agent is a lease client and the cluster has leases
	// Job is the job as claimed: its key fields only (see
	// JobUpdateParams.FullJob), for the server's metrics and traces.
	Job *Job
}
