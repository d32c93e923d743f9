package sshconsole

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxTrackedAddrs bounds the addresses the limiter remembers; past it,
// those back at a full allowance are forgotten.
const maxTrackedAddrs = 4096

// failureLimiter rate-limits failed authentications per source address: an
// address has a burst of failures, refilled at a steady rate; one with none
// left has its connections closed before the SSH handshake, so it learns
// nothing and costs nothing until its allowance refills.
type failureLimiter struct {
	mu    sync.Mutex
	every rate.Limit
	burst int
	now   func() time.Time
	addrs map[string]*rate.Limiter
}

func newFailureLimiter(perMinute float64, burst int, now func() time.Time) *failureLimiter {
	return &failureLimiter{every: rate.Limit(perMinute / 60), burst: burst, now: now, addrs: map[string]*rate.Limiter{}}
}

// allowed reports whether addr may still try to authenticate.
func (l *failureLimiter) allowed(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.addrs[addr]
	return !ok || lim.TokensAt(l.now()) >= 1
}

// fail charges addr one failure.
func (l *failureLimiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lim, ok := l.addrs[addr]
	if !ok {
		if len(l.addrs) >= maxTrackedAddrs {
			for a, other := range l.addrs {
				if other.TokensAt(now) >= float64(l.burst) {
					delete(l.addrs, a)
				}
			}
		}
		lim = rate.NewLimiter(l.every, l.burst)
		l.addrs[addr] = lim
	}
	lim.AllowN(now, 1)
}
