package server

import "sync"

// MaxWaitsPerAdminToken caps the requests one admin token may hold waiting
// with ?wait= at once. A held wait costs a few goroutines, a timer and a
// subscription (tens of KiB), and nothing else bounds how many one token
// keeps open: the per-address connection cap does not stop a holder of
// many addresses (an IPv6 prefix), so any token, a viewer's included,
// could hold tens of thousands and exhaust the server's memory. A producer
// waits for the few jobs it just submitted; 64 is far above that.
const MaxWaitsPerAdminToken = 64

// waitsRetryAfter is the Retry-After of a wait over the cap.
const waitsRetryAfter = pollsRetryAfter

// heldWaits counts the ?wait= requests held per admin token.
type heldWaits struct {
	mu      sync.Mutex
	byToken map[string]int
}

// acquire counts one more wait for token, or reports false when it holds
// MaxWaitsPerAdminToken already. A true must be followed by release.
func (h *heldWaits) acquire(token string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byToken[token] >= MaxWaitsPerAdminToken {
		return false
	}
	if h.byToken == nil {
		h.byToken = map[string]int{}
	}
	h.byToken[token]++
	return true
}

func (h *heldWaits) release(token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byToken[token] <= 1 {
		delete(h.byToken, token)
	} else {
		h.byToken[token]--
	}
}
