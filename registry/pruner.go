package registry

import (
	"context"
	"time"
)

// Pruner defaults.
const (
	DefaultPrunerInterval  = time.Minute
	DefaultChangeRetention = time.Hour
	DefaultChangesKept     = 10000
)

// PrunerConfig tunes retention.
type PrunerConfig struct {
	Interval         time.Duration // DefaultPrunerInterval
	EventRetention   time.Duration // DefaultEventRetention
	EventsPerCluster int           // DefaultEventsPerCluster
	ChangeRetention  time.Duration // DefaultChangeRetention: how far back a watcher may resume
	ChangesKept      int           // DefaultChangesKept: kept whatever their age
}

// Pruner deletes events past their retention, forgets event keys outside the
// replay window, and trims the change feed.
type Pruner struct {
	reg *Registry
	cfg PrunerConfig
}

// PruneReport says what one run did.
type PruneReport struct {
	Events  int
	Changes int
}

// NewPruner returns a pruner over reg.
func NewPruner(reg *Registry, cfg PrunerConfig) *Pruner {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultPrunerInterval
	}
	if cfg.EventRetention <= 0 {
		cfg.EventRetention = DefaultEventRetention
	}
	if cfg.EventsPerCluster <= 0 {
		cfg.EventsPerCluster = DefaultEventsPerCluster
	}
	if cfg.ChangeRetention <= 0 {
		cfg.ChangeRetention = DefaultChangeRetention
	}
	if cfg.ChangesKept <= 0 {
		cfg.ChangesKept = DefaultChangesKept
	}
	return &Pruner{reg: reg, cfg: cfg}
}

// RunOnce prunes once.
func (p *Pruner) RunOnce(ctx context.Context) (PruneReport, error) {
	now := p.reg.Now()
	var rep PruneReport
	var err error
	rep.Events, err = p.reg.store.EventsPrune(ctx, EventsPruneParams{
		OlderThan:      now.Add(-p.cfg.EventRetention),
		KeepPerCluster: p.cfg.EventsPerCluster,
		KeysBefore:     now.Add(-p.reg.cfg.EventReplayWindow),
	})
	if err != nil {
		return rep, err
	}
	rep.Changes, err = p.reg.store.ChangesPrune(ctx, ChangesPruneParams{Before: now.Add(-p.cfg.ChangeRetention), Keep: p.cfg.ChangesKept})
	if err != nil {
		return rep, err
	}
	_, err = p.reg.store.SignaturesPrune(ctx, now)
	return rep, err
}

// Run prunes every interval until ctx ends, reporting each run to report
// (which may be nil).
func (p *Pruner) Run(ctx context.Context, report func(PruneReport, error)) {
	every(ctx, p.cfg.Interval, func() {
		rep, err := p.RunOnce(ctx)
		if report != nil && ctx.Err() == nil {
			report(rep, err)
		}
	})
}
