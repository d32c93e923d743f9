package registry

import "time"

// Clock is the registry's source of time, injected so that leases, expiries
// and the reaper are tested without sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }
