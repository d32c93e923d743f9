// Package clocktest provides a settable clock for tests of leases, expiries,
// the reaper and the services' backoff.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a registry.Clock that only moves when told to. Its timers (After)
// fire when Advance or Set moves it to or past their deadline.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []timer
	changed chan struct{} // closed and replaced when a timer is added
}

type timer struct {
	at time.Time
	c  chan time.Time
}

// New returns a clock set to a fixed, round instant.
func New() *Clock {
	return &Clock{now: time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC), changed: make(chan struct{})}
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once the clock has
// been moved d past now (at once when d <= 0), as time.After does.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, timer{at: c.now.Add(d), c: ch})
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// Timers returns how many timers wait for the clock to move.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitTimers blocks until at least n timers wait for the clock to move, so
// that a test advances the clock only once the code under test waits on it.
// It gives up when done is closed (nil: never), and says whether n were
// reached.
func (c *Clock) WaitTimers(n int, done <-chan struct{}) bool {
	for {
		c.mu.Lock()
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		have, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if have >= n {
			return true
		}
		select {
		case <-changed:
		case <-done:
			return false
		}
	}
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(c.now.Add(d))
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(t)
}

// set moves the clock and fires the timers due; c.mu is held.
func (c *Clock) set(t time.Time) {
	c.now = t
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(t) {
			kept = append(kept, tm)
			continue
		}
		tm.c <- t
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}
