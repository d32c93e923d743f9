package registry

import (
	"context"
	"time"
)

// SearchMerger defaults. A step writes at most DefaultSearchMergePages
// pages of index (about 4 KB each on SQLite), and a run at most
// DefaultSearchMergeSteps steps, each a write request of its own: a run holds
// the writer a step at a time, never for the whole merge. See
// docs/performance.md for the figures behind them.
const (
	DefaultSearchMergeInterval = 10 * time.Second
	DefaultSearchMergePages    = 200
	DefaultSearchMergeSteps    = 20
)

// SearchMergerConfig tunes the search index's background merging.
type SearchMergerConfig struct {
	Interval time.Duration // DefaultSearchMergeInterval: between runs
	Pages    int           // DefaultSearchMergePages: pages one step writes at most
	Steps    int           // DefaultSearchMergeSteps: steps one run takes at most
}

// SearchMerger merges the job search index in the background. On SQLite
// the writes that fill the index (one new segment per batch of the writer)
// no longer merge it as they go (migration 0031 turned FTS5's automerge
// off): left alone, its segments pile up until FTS5's crisis merge folds
// them in the middle of a batch. The merger does that work instead, in
// bounded steps at its own pace, so that the word filter reads few segments
// and the writer's batches stay short. On PostgreSQL there is nothing to do.
type SearchMerger struct {
	reg *Registry
	cfg SearchMergerConfig
}

// SearchMergeReport says what one run did.
type SearchMergeReport struct {
	// Steps is how many steps found something to merge.
	Steps int
}

// NewSearchMerger returns a merger over reg.
func NewSearchMerger(reg *Registry, cfg SearchMergerConfig) *SearchMerger {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSearchMergeInterval
	}
	if cfg.Pages <= 0 {
		cfg.Pages = DefaultSearchMergePages
	}
	if cfg.Steps <= 0 {
		cfg.Steps = DefaultSearchMergeSteps
	}
	return &SearchMerger{reg: reg, cfg: cfg}
}

// RunOnce merges until the index has nothing left to merge or the run has
// taken its steps.
func (m *SearchMerger) RunOnce(ctx context.Context) (SearchMergeReport, error) {
	var rep SearchMergeReport
	for rep.Steps < m.cfg.Steps {
		merged, err := m.reg.store.SearchIndexMerge(ctx, m.cfg.Pages)
		if err != nil || !merged {
			return rep, err
		}
		rep.Steps++
	}
	return rep, nil
}

// Run merges every interval until ctx ends, reporting each run to report
// (which may be nil).
func (m *SearchMerger) Run(ctx context.Context, report func(SearchMergeReport, error)) {
	every(ctx, m.cfg.Interval, func() {
		rep, err := m.RunOnce(ctx)
		if report != nil && ctx.Err() == nil {
			report(rep, err)
		}
	})
}
