package registry

import (
	"context"
	"time"
)

// every calls f at once and then every interval until ctx ends: the loop of
// the registry's background services (reaper, pruner, retention, rollouts).
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
