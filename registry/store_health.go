package registry

import (
	"context"
	"time"
)

// QueueStatsStore reads the figures queue health is computed from. Every
// figure comes from an index the job writes already keep (a cluster's jobs by
// state and submit time), so reading it costs the same over a million
// finished jobs as over none, and the write path pays nothing for it.
type QueueStatsStore interface {
	// JobQueueStats returns one entry per cluster of p.ClusterIDs (every
	// cluster when empty), in that order; a cluster without jobs gets an
	// entry of zeros.
	JobQueueStats(ctx context.Context, p JobQueueStatsParams) ([]JobQueueStats, error)
}

type JobQueueStatsParams struct {
	ClusterIDs []string
	// SubmittedAfter bounds Ended: only jobs submitted at or after it count.
	SubmittedAfter time.Time
	// Claims is how many claimed jobs to return per cluster.
	Claims int
}

// JobQueueStats is what the store knows of one cluster's queue.
type JobQueueStats struct {
	ClusterID string
	// OldestQueuedAt is the submit time of the oldest queued job (zero when
	// none is queued).
	OldestQueuedAt time.Time
	// Ended counts, per terminal state, the jobs submitted since
	// SubmittedAfter that are in it.
	Ended map[JobState]int64
	// Claims are the most recently submitted jobs that were claimed and are
	// in progress or ended with an outcome (succeeded, failed, noop,
	// conflict), newest first, at most p.Claims of them.
	Claims []JobClaimTimes
}

// JobClaimTimes is when a job was submitted and when its current attempt
// was claimed.
type JobClaimTimes struct {
	CreatedAt time.Time
	ClaimedAt time.Time
}

// ClaimedStates are the states whose jobs keep the time of their claim: the
// ones JobQueueStats samples claims from. Canceled and expired jobs are left
// out: most never were claimed, and skipping them would cost a scan.
var ClaimedStates = []JobState{JobInProgress, JobSucceeded, JobFailed, JobNoop, JobConflict}

// TerminalStates are the states a job ends in.
var TerminalStates = []JobState{JobSucceeded, JobFailed, JobNoop, JobConflict, JobCanceled, JobExpired}
