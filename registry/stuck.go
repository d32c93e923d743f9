package registry

import "time"

// NoLeaseStuckAfter is how long an in_progress job without a lease may go
// without a word from its holder before it counts as stuck: nothing will
// reclaim it, so a person must look.
const NoLeaseStuckAfter = 10 * time.Minute

// StuckFilters returns job filters whose union is every stuck job at now:
// leased jobs whose lease has run out (the reaper will reclaim them), and
// unleased ones silent for NoLeaseStuckAfter.
func StuckFilters(now time.Time) []JobListParams {
	return []JobListParams{
		{States: []JobState{JobInProgress}, LeaseExpiredBefore: now},
		{States: []JobState{JobInProgress}, NoLease: true, ActivityBefore: now.Add(-NoLeaseStuckAfter)},
	}
}
