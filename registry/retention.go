package registry

import (
	"context"
	"time"
)

// Retention defaults: finished jobs and webhook deliveries are kept 30 days,
// the audit trail a year.
const (
	DefaultJobRetention             = 30 * 24 * time.Hour
	DefaultAuditRetention           = 365 * 24 * time.Hour
	DefaultWebhookDeliveryRetention = 30 * 24 * time.Hour
	DefaultRetentionBatch           = 1000
	// DefaultRetentionInterval is how often the retention service looks.
	DefaultRetentionInterval = 10 * time.Minute
)

// RetentionConfig says how long what is kept. A zero duration takes the
// default; a negative one keeps forever.
type RetentionConfig struct {
	// Jobs is how long a finished job is kept after it finished; ByState
	// overrides it for some terminal states (keep failures longer, say).
	Jobs    time.Duration
	ByState map[JobState]time.Duration
	Audit   time.Duration
	// WebhookDeliveries is how long a delivery that ended (delivered, or
	// failed for good) is kept after it ended; pending ones are never
	// deleted.
	WebhookDeliveries time.Duration
	// Interval between runs (DefaultRetentionInterval), BatchSize per
	// transaction (DefaultRetentionBatch).
	Interval  time.Duration
	BatchSize int
}

// Retention deletes finished jobs, audit entries and ended webhook
// deliveries past their retention, and idempotency keys past theirs
// (Config.IdempotencyRetention), batch by batch.
type Retention struct {
	reg *Registry
	cfg RetentionConfig
}

// RetentionReport says what one run deleted.
type RetentionReport struct {
	Jobs              int
	Audit             int
	WebhookDeliveries int
	IdempotencyKeys   int
}

// Total is how many records the run deleted in all.
func (r RetentionReport) Total() int {
	return r.Jobs + r.Audit + r.WebhookDeliveries + r.IdempotencyKeys
}

// NewRetention returns the retention service over reg.
func NewRetention(reg *Registry, cfg RetentionConfig) *Retention {
	if cfg.Jobs == 0 {
		cfg.Jobs = DefaultJobRetention
	}
	if cfg.Audit == 0 {
		cfg.Audit = DefaultAuditRetention
	}
	if cfg.WebhookDeliveries == 0 {
		cfg.WebhookDeliveries = DefaultWebhookDeliveryRetention
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultRetentionInterval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultRetentionBatch
	}
	return &Retention{reg: reg, cfg: cfg}
}

// keepFor is how long finished jobs in state s are kept (negative: forever).
func (r *Retention) keepFor(s JobState) time.Duration {
	if d, ok := r.cfg.ByState[s]; ok && d != 0 {
		return d
	}
	return r.cfg.Jobs
}

// RunOnce deletes everything past its retention at the registry's time.
func (r *Retention) RunOnce(ctx context.Context) (RetentionReport, error) {
	var rep RetentionReport
	now := r.reg.Now()
	for _, s := range JobStates {
		if !s.Terminal() || r.keepFor(s) < 0 {
			continue
		}
		n, err := r.batches(ctx, func(limit int) (int, error) {
			return r.reg.store.JobsPrune(ctx, JobsPruneParams{State: s, FinishedBefore: now.Add(-r.keepFor(s)), Limit: limit})
		})
		if rep.Jobs += n; err != nil {
			return rep, err
		}
	}
	if r.cfg.Audit > 0 {
		n, err := r.batches(ctx, func(limit int) (int, error) { return r.reg.store.AuditPrune(ctx, now.Add(-r.cfg.Audit), limit) })
		if rep.Audit = n; err != nil {
			return rep, err
		}
	}
	if r.cfg.WebhookDeliveries > 0 {
		n, err := r.batches(ctx, func(limit int) (int, error) {
			return r.reg.store.WebhookDeliveriesPrune(ctx, now.Add(-r.cfg.WebhookDeliveries), limit)
		})
		if rep.WebhookDeliveries = n; err != nil {
			return rep, err
		}
	}
	// Expired keys go whatever the configuration: each carries its own end.
	n, err := r.batches(ctx, func(limit int) (int, error) { return r.reg.store.IdempotencyKeysPrune(ctx, now, limit) })
	rep.IdempotencyKeys = n
	return rep, err
}

// batches calls prune with the batch size until a batch deletes less than
// a full one (or ctx ends), and returns how many it deleted in all.
func (r *Retention) batches(ctx context.Context, prune func(limit int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := prune(r.cfg.BatchSize)
		total += n
		if err != nil || n < r.cfg.BatchSize || ctx.Err() != nil {
			return total, err
		}
	}
}

// Run calls RunOnce every interval until ctx ends, reporting each run.
func (r *Retention) Run(ctx context.Context, report func(RetentionReport, error)) {
	every(ctx, r.cfg.Interval, func() {
		rep, err := r.RunOnce(ctx)
		if report != nil && ctx.Err() == nil {
			report(rep, err)
		}
	})
}
