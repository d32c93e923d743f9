package registry

import (
	"context"
	"time"
)

// DefaultRolloutInterval is how often the rollouts service looks at active
// rollouts: the delay between a job's end and its rollout's next wave.
const DefaultRolloutInterval = time.Second

// RolloutService advances active rollouts: it records their jobs' outcomes
// and starts their next waves. Every step is one compare-and-swap
// transaction, so any number of services (one per replica) may run at once,
// and a kill -9 at any moment leaves each rollout at its last committed step:
// no wave is started twice.
type RolloutService struct {
	reg      *Registry
	interval time.Duration
}

// NewRolloutService returns a service over reg; interval zero is
// DefaultRolloutInterval.
func NewRolloutService(reg *Registry, interval time.Duration) *RolloutService {
	if interval <= 0 {
		interval = DefaultRolloutInterval
	}
	return &RolloutService{reg: reg, interval: interval}
}

// RunOnce advances every active rollout once and returns how many changed.
func (s *RolloutService) RunOnce(ctx context.Context) (int, error) {
	ctx = WithActor(ctx, rolloutActor)
	active, err := s.reg.store.RolloutList(ctx, RolloutListParams{Active: true})
	if err != nil {
		return 0, err
	}
	changed := 0
	var firstErr error
	for _, ro := range active {
		after, err := s.reg.AdvanceRollout(ctx, ro.ID)
		switch ErrorCode(err) {
		case CodeNotFound, CodeConflict:
			continue // deleted meanwhile, or another replica keeps advancing it
		}
		if err != nil {
			// One rollout that cannot advance (say its next cluster needs
			// a key this tether lacks) must not stall all the others.
			if ctx.Err() != nil {
				return changed, err
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if after.Version != ro.Version {
			changed++
		}
	}
	return changed, firstErr
}

// Run calls RunOnce every interval until ctx ends, reporting each run's
// error (if any) to report, which may be nil.
func (s *RolloutService) Run(ctx context.Context, report func(changed int, err error)) {
	every(ctx, s.interval, func() {
		n, err := s.RunOnce(ctx)
		if report != nil && ctx.Err() == nil {
			report(n, err)
		}
	})
}
