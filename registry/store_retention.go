package registry

import (
	"context"
	"time"
)

// RetentionStore is the part of Store that forgets what is kept no longer:
// finished jobs (with their history), audit entries and expired idempotency
// keys. Every method works in
// one bounded batch, one transaction, so that a long backlog never holds the
// writer for long.
type RetentionStore interface {
	// JobsPrune deletes up to p.Limit jobs in state p.State that finished
	// before p.FinishedBefore, with their history, keeping the job counts
	// right. It returns how many it deleted.
	JobsPrune(ctx context.Context, p JobsPruneParams) (int, error)
	// AuditPrune deletes up to limit audit entries written before before,
	// oldest first. It returns how many it deleted.
	AuditPrune(ctx context.Context, before time.Time, limit int) (int, error)
	// IdempotencyKeysPrune forgets up to limit idempotency keys that
	// expired at or before now (JobInsertParams.KeyUntil), soonest expired
	// first. It returns how many it deleted.
	IdempotencyKeysPrune(ctx context.Context, now time.Time, limit int) (int, error)
}

type JobsPruneParams struct {
	State          JobState // a terminal state
	FinishedBefore time.Time
	Limit          int
}
