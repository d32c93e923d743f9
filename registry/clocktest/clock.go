// Package clocktest provides a settable clock for tests of leases, expiries
// and the reaper.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a registry.Clock that only moves when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock set to a fixed, round instant.
func New() *Clock {
	return &Clock{now: time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)}
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
