package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tetherhq/tether/server"
)

// startPoll starts a long-poll that the test can cancel, and returns once
// the server holds it.
func startPoll(t *testing.T, e *env, a *agent) (cancel func(), answer <-chan *response) {
	t.Helper()
	before := e.reg.Waiting()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan *response, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/agent/jobs?cluster=%s&wait=300", e.url, a.clusterID), nil)
		req.Header.Set("Accept", mediaV1)
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := e.client.Do(req)
		if err != nil {
			ch <- nil // canceled
			return
		}
		resp.Body.Close()
		ch <- &response{status: resp.StatusCode, header: resp.Header}
	}()
	eventually(t, "the long-poll to be held", func() bool { return e.reg.Waiting() > before })
	t.Cleanup(cancel)
	return cancel, ch
}

func wantTooManyPolls(t *testing.T, r *response, says string) {
	t.Helper()
	ans := r.wantError(t, http.StatusTooManyRequests, "too_many_polls")
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("429 with Retry-After %q, want a delay in seconds", ra)
	}
	if !strings.Contains(ans.Message, says) {
		t.Fatalf("message %q does not say %q", ans.Message, says)
	}
}

// TestHeldPollsAreCappedPerCredentialAndAddress (issue 11, defect 1): a
// credential holds at most its cap of long-polls, a client address at most
// its own, and a poll past either cap gets a 429 that says which, with
// Retry-After; a poll that does not wait, and every other request, is not
// affected, and a slot is free again as soon as a held poll ends.
func TestHeldPollsAreCappedPerCredentialAndAddress(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxPollsPerCredential, c.MaxPollsPerAddress = 2, 3 })
	a := e.newAgent("prod")
	b := e.newAgent("staging")

	cancelA1, answerA1 := startPoll(t, e, a)
	startPoll(t, e, a)
	wantTooManyPolls(t, a.poll(300), "this credential already holds 2 long-polls")
	a.poll(0).want(t, http.StatusOK) // not held: not counted
	a.do(http.MethodPost, "/api/agent/events", withBody(`{"events":[{"kind":"Audit","eventKey":"k","message":"still here"}]}`)).wantNoContent(t)

	// Another credential from the same address: its own cap is not reached,
	// the address's is after one more.
	startPoll(t, e, b)
	wantTooManyPolls(t, b.poll(300), "client address 127.0.0.1 already holds 3 long-polls")

	// One of a's polls ends (its client goes away): both a and the address
	// have a slot again.
	cancelA1()
	<-answerA1
	eventually(t, "the ended poll to be released", func() bool { return e.reg.Waiting() == 2 })
	startPoll(t, e, b)
	wantTooManyPolls(t, a.poll(300), "client address 127.0.0.1 already holds 3 long-polls")
}

// TestHeldPollsUncapped: a negative cap turns it off.
func TestHeldPollsUncapped(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxPollsPerCredential, c.MaxPollsPerAddress = -1, -1 })
	a := e.newAgent("prod")
	for range server.DefaultMaxPollsPerCredential + 2 {
		startPoll(t, e, a)
	}
}
