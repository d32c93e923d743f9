package registry

import (
	"context"
	"time"
)

// Retention defaults: finished jobs are kept 30 days, the audit trail a year.
const (
	DefaultJobRetention   = 30 * 24 * time.Hour
	DefaultAuditRetention = 365 * 24 * time.Hour
	DefaultRetentionBatch = 1000
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
	// Interval between runs (DefaultRetentionInterval), BatchSize per
	// transaction (DefaultRetentionBatch).
	Interval  time.Duration
	BatchSize int
}

// Retention deletes finished jobs and audit entries past their retention,
// batch by batch.
type Retention struct {
	reg *Registry
	cfg RetentionConfig
}

// RetentionReport says what one run deleted.
type RetentionReport struct {
	Jobs  int
	Audit int
}

// NewRetention returns the retention service over reg.
func NewRetention(reg *Registry, cfg RetentionConfig) *Retention {
	if cfg.Jobs == 0 {
		cfg.Jobs = DefaultJobRetention
	}
	if cfg.Audit == 0 {
		cfg.Audit = DefaultAuditRetention
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
		for {
			n, err := r.reg.store.JobsPrune(ctx, JobsPruneParams{State: s, FinishedBefore: now.Add(-r.keepFor(s)), Limit: r.cfg.BatchSize})
			rep.Jobs += n
			if err != nil {
				return rep, err
			}
			if n < r.cfg.BatchSize || ctx.Err() != nil {
				break
			}
		}
	}
	if r.cfg.Audit > 0 {
		for {
			n, err := r.reg.store.AuditPrune(ctx, now.Add(-r.cfg.Audit), r.cfg.BatchSize)
			rep.Audit += n
			if err != nil {
				return rep, err
			}
			if n < r.cfg.BatchSize || ctx.Err() != nil {
				break
			}
		}
	}
	return rep, nil
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
