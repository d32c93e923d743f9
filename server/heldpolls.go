package server

import (
	"fmt"
	"sync"
	"time"
)

// Caps on long-polls held at once. A held poll costs little (a goroutine, a
// timer, a subscription: a few KiB), but nothing else bounds how many one
// client keeps open: a stolen or runaway credential, or a host with many of
// them, could hold tens of thousands. Healthy agents hold one poll per
// replica (the public operator runs one or two replicas, three during a
// rolling update), so a credential gets room for several; an address may be
// a NAT in front of a whole fleet, so it gets far more.
const (
	DefaultMaxPollsPerCredential = 8
	DefaultMaxPollsPerAddress    = 512
	// pollsRetryAfter is the Retry-After of a poll over a cap: a held poll
	// ends within its wait (30 s by default), or at once when a job comes.
	pollsRetryAfter = 5 * time.Second
)

// heldPolls counts the long-polls held per credential and per client address.
type heldPolls struct {
	perCredential, perAddress int // 0: no cap

	mu     sync.Mutex
	byCred map[string]int
	byAddr map[string]int
}

// newHeldPolls takes Config's values: 0 is the default, negative no cap.
func newHeldPolls(perCredential, perAddress int) *heldPolls {
	pick := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return &heldPolls{
		perCredential: pick(perCredential, DefaultMaxPollsPerCredential),
		perAddress:    pick(perAddress, DefaultMaxPollsPerAddress),
		byCred:        map[string]int{}, byAddr: map[string]int{},
	}
}

// acquire counts one more poll for credential and addr, or refuses it with
// CodeTooManyPolls when either is at its cap. A nil error must be followed
// by release.
func (h *heldPolls) acquire(credential, addr string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.byCred[credential]; h.perCredential > 0 && n >= h.perCredential {
		return errf(CodeTooManyPolls, "this credential already holds %d long-polls, the most one credential may hold at once; let one end (each ends within its wait, or when a job comes) or run fewer pollers; retry after %d s",
			n, retryAfterSeconds(pollsRetryAfter))
	}
	if n := h.byAddr[addr]; h.perAddress > 0 && n >= h.perAddress {
		return errf(CodeTooManyPolls, "client address %s already holds %d long-polls, the most one address may hold at once; retry after %d s (a fleet behind one address needs serve --max-polls-per-address raised)",
			addr, n, retryAfterSeconds(pollsRetryAfter))
	}
	h.byCred[credential]++
	h.byAddr[addr]++
	return nil
}

// release undoes one acquire. Entries at zero are deleted, so the maps hold
// only the credentials and addresses with a poll held now.
func (h *heldPolls) release(credential, addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dec := func(m map[string]int, k string) {
		if m[k] <= 1 {
			delete(m, k)
		} else {
			m[k]--
		}
	}
	dec(h.byCred, credential)
	dec(h.byAddr, addr)
}

// holdPoll takes a held-poll slot for the call's credential and client
// address, which it returns for release, or answers why not (429 with
// Retry-After).
func (s *Server) holdPoll(c *call) (cred, addr string, err error) {
	cred, addr = c.agent.Credential.ID, s.clientAddr(c.r)
	if err := s.polls.acquire(cred, addr); err != nil {
		c.w.Header().Set("Retry-After", fmt.Sprint(retryAfterSeconds(pollsRetryAfter)))
		return "", "", err
	}
	return cred, addr, nil
}
