package registry

import (
	"context"
	"time"
)

// RolloutStore is the part of Store that keeps rollouts and their targets.
// Every method that writes is atomic, as Store's are.
type RolloutStore interface {
	// RolloutCreate inserts a rollout, its targets and p.Audit. CodeConflict
	// if the name is taken.
	RolloutCreate(ctx context.Context, p RolloutCreateParams) error
	// RolloutGet returns a rollout with its targets in order, each with the
	// state of its current job (empty when it has none, or the job no longer
	// exists).
	RolloutGet(ctx context.Context, id string) (*Rollout, error)
	// RolloutGetByName finds a rollout by name (case-insensitive).
	RolloutGetByName(ctx context.Context, name string) (*Rollout, error)
	// RolloutList returns rollouts newest first, with their target counts but
	// not the targets.
	RolloutList(ctx context.Context, p RolloutListParams) ([]Rollout, error)
	// RolloutApply makes one step of a rollout in one transaction, provided
	// its version is still p.Version (CodeConflict otherwise, naming the
	// current version): it applies p.Set and p.Targets, inserts each target's
	// NewJob (the job its idempotency key answers, as JobInsert finds it,
	// is linked instead of a new one), cancels the jobs of p.Cancel that are
	// still queued, writes p.Audit, and increments the version. It returns
	// the rollout as RolloutGet would.
	RolloutApply(ctx context.Context, p RolloutApplyParams) (*Rollout, error)
}

type RolloutCreateParams struct {
	Rollout Rollout // with its Targets
	Audit   []AuditEntry
}

type RolloutListParams struct {
	// Organization, when set, lists only that organization's rollouts.
	Organization string
	States       []RolloutState
	// Active lists only rollouts that may still change by themselves: running
	// ones, and any with a target whose job is running.
	Active bool
	// After, when set, lists only the rollouts that come after this one in
	// the list's order (created_at, then id, both descending): keyset
	// paging, as for jobs, so a later page reads only its own rows.
	After *RolloutCursor
	Limit int
}

// RolloutCursor is a position in a list of rollouts: the last rollout of a
// page.
type RolloutCursor struct {
	CreatedAt time.Time
	ID        string
}

type RolloutApplyParams struct {
	ID      string
	Version int64
	Now     time.Time
	Set     RolloutSet
	Targets []RolloutTargetSet
	// Cancel lists conditional job updates (cancel if still queued), applied
	// as JobUpdate applies them; one whose condition fails is skipped.
	Cancel []JobUpdateParams
	Audit  []AuditEntry
}

// RolloutSet lists what a step changes on the rollout; zero fields are
// unchanged.
type RolloutSet struct {
	State       RolloutState
	FailureBase *int
	// NextWaveAt, when non-nil, sets when the next wave may start (zero
	// clears it).
	NextWaveAt *time.Time
	// FinishedAt, when non-nil, sets when the rollout ended (zero clears it:
	// retry-failed reopens a completed rollout).
	FinishedAt *time.Time
}

// RolloutTargetSet replaces the mutable fields of one target.
type RolloutTargetSet struct {
	Position   int
	State      TargetState
	Reason     string
	JobID      string
	Attempts   int
	StartedAt  time.Time
	FinishedAt time.Time
	// NewJob, when set, is inserted and becomes the target's job.
	NewJob *JobInsertParams
}
