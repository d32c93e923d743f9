package registry

import (
	"context"
	"time"
)

// Reaper defaults.
const (
	DefaultReaperInterval = 5 * time.Second
	DefaultReaperBatch    = 1000
)

// ReaperConfig tunes the reaper.
type ReaperConfig struct {
	Interval  time.Duration // DefaultReaperInterval
	BatchSize int           // DefaultReaperBatch: jobs per transaction
}

// Reaper returns jobs whose lease expired to the queue (or fails them once
// their attempts run out) and ends queued jobs past their expiry. Each batch
// is one transaction, so a long backlog never holds the writer for long.
type Reaper struct {
	reg *Registry
	cfg ReaperConfig
}

// ReapReport says what one run did.
type ReapReport struct {
	Requeued int // lease expired, back in the queue
	Failed   int // lease expired on the last attempt
	Expired  int // never acked before expiresAt
	// ByCluster splits Requeued and Failed (the expired leases) by cluster
	// id.
	ByCluster map[string]ClusterReclaims
}

func (r ReapReport) Total() int { return r.Requeued + r.Failed + r.Expired }

// NewReaper returns a reaper over reg.
func NewReaper(reg *Registry, cfg ReaperConfig) *Reaper {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultReaperInterval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultReaperBatch
	}
	return &Reaper{reg: reg, cfg: cfg}
}

// RunOnce reaps everything due at the registry's current time, batch by
// batch.
func (r *Reaper) RunOnce(ctx context.Context) (ReapReport, error) {
	var rep ReapReport
	now := r.reg.Now()
	actor := Actor{Kind: ActorSystem, Name: "reaper"}.String()
	for {
		counts, err := r.reg.store.JobsReclaim(ctx, JobsReclaimParams{Now: now, Limit: r.cfg.BatchSize, Actor: actor})
		if err != nil {
			return rep, err
		}
		rep.Requeued += counts.Requeued
		rep.Failed += counts.Failed
		for id, c := range counts.ByCluster {
			if rep.ByCluster == nil {
				rep.ByCluster = map[string]ClusterReclaims{}
			}
			sum := rep.ByCluster[id]
			sum.Requeued += c.Requeued
			sum.Failed += c.Failed
			rep.ByCluster[id] = sum
		}
		if counts.Requeued+counts.Failed < r.cfg.BatchSize {
			break
		}
	}
	for {
		n, err := r.reg.store.JobsExpire(ctx, JobsExpireParams{Now: now, Limit: r.cfg.BatchSize, Actor: actor})
		if err != nil {
			return rep, err
		}
		rep.Expired += n
		if n < r.cfg.BatchSize {
			break
		}
	}
	return rep, nil
}

// Run calls RunOnce every interval until ctx ends, reporting each run (and
// its error, if any) to report, which may be nil.
func (r *Reaper) Run(ctx context.Context, report func(ReapReport, error)) {
	every(ctx, r.cfg.Interval, func() {
		rep, err := r.RunOnce(ctx)
		if report != nil && ctx.Err() == nil {
			report(rep, err)
		}
	})
}
