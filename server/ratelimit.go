package server

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Per-cluster rate limit defaults: far above what a healthy agent needs (the
// public operator long-polls, heartbeats once a minute and reports a few
// times per job), low enough that a runaway agent cannot starve the others.
const (
	DefaultRateLimit = 50  // requests per second, sustained
	DefaultRateBurst = 200 // requests at once
)

// Registration attempts per client address.
const (
	RegisterRateLimit = 5  // per second, sustained
	RegisterRateBurst = 50 // at once (a fleet behind one address starting together)
)

// registerLimit turns registration limits off when the per-cluster ones are
// (a negative rate).
func registerLimit(clusterRate float64) float64 {
	if clusterRate < 0 {
		return -1
	}
	return RegisterRateLimit
}

// limiters holds one token bucket per key (a cluster, or a client address), created on first use and
// forgotten once idle and full again (so a fleet that churns does not grow the
// map forever).
type limiters struct {
	limit rate.Limit
	burst int

	mu        sync.Mutex
	m         map[string]*limiterEntry
	lastSweep time.Time
}

type limiterEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

const limiterIdle = 10 * time.Minute

func newLimiters(perSecond float64, burst int) *limiters {
	if perSecond < 0 {
		return nil // no limit
	}
	if perSecond == 0 {
		perSecond = DefaultRateLimit
	}
	if burst <= 0 {
		burst = DefaultRateBurst
	}
	return &limiters{limit: rate.Limit(perSecond), burst: burst, m: map[string]*limiterEntry{}}
}

// allow takes a token from key's bucket, or says how long until one is free.
func (l *limiters) allow(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > time.Minute {
		for k, e := range l.m {
			if now.Sub(e.seen) > limiterIdle && e.lim.TokensAt(now) >= float64(l.burst) {
				delete(l.m, k)
			}
		}
		l.lastSweep = now
	}
	e := l.m[key]
	if e == nil {
		e = &limiterEntry{lim: rate.NewLimiter(l.limit, l.burst)}
		l.m[key] = e
	}
	e.seen = now
	r := e.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request must not consume the next token
		return false, d
	}
	return true, 0
}

// retryAfterSeconds renders a delay as Retry-After: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
