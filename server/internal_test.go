package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func TestReplayCacheRemembersUntilExpiryAndStaysBounded(t *testing.T) {
	now := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	c := newReplayCache(3)
	if !c.add("a", now.Add(time.Minute), now) {
		t.Fatal("first sighting refused")
	}
	if c.add("a", now.Add(time.Minute), now.Add(30*time.Second)) {
		t.Fatal("a replay inside the window was accepted")
	}
	// Past its expiry the key is forgotten (the timestamp check refuses such
	// a signature anyway).
	if !c.add("a", now.Add(3*time.Minute), now.Add(2*time.Minute)) {
		t.Fatal("a key past its expiry is still remembered")
	}
	later := now.Add(2 * time.Minute)
	for i := range 10 {
		c.add(fmt.Sprint("k", i), later.Add(time.Hour), later)
		if len(c.seen) > 3 || len(c.queue)-c.head > 3 {
			t.Fatalf("after %d adds: %d keys, %d queued; want at most 3", i+1, len(c.seen), len(c.queue)-c.head)
		}
	}
	if c.add("k9", later.Add(time.Hour), later) {
		t.Error("the newest key was forgotten")
	}
	if !c.add("k0", later.Add(time.Hour), later) {
		t.Error("the oldest key should have been evicted to stay within the bound")
	}
}

func TestLimitersPerKeyRetryAfterAndForgetting(t *testing.T) {
	now := time.Date(2026, 5, 28, 10, 0, 0, 0, time.UTC)
	l := newLimiters(1, 2)
	for i := range 2 {
		if ok, _ := l.allow("a", now); !ok {
			t.Fatalf("request %d within the burst refused", i)
		}
	}
	ok, wait := l.allow("a", now)
	if ok || wait != time.Second || retryAfterSeconds(wait) != 1 {
		t.Fatalf("over the burst: ok=%v wait=%s", ok, wait)
	}
	if ok, _ := l.allow("b", now); !ok {
		t.Fatal("another key shares the bucket")
	}
	// A refusal does not consume a token: one second later exactly one is free.
	if ok, _ := l.allow("a", now.Add(time.Second)); !ok {
		t.Fatal("the refill was consumed by the refused request")
	}
	// Idle, full buckets are forgotten.
	l.allow("c", now.Add(time.Hour))
	if _, kept := l.m["a"]; kept || len(l.m) != 1 {
		t.Errorf("idle buckets kept: %v", l.m)
	}
	if newLimiters(-1, 0) != nil {
		t.Error("a negative rate must turn limiting off")
	}
	if ok, _ := (*limiters)(nil).allow("x", now); !ok {
		t.Error("no limiter must allow everything")
	}
	if got := retryAfterSeconds(1500 * time.Millisecond); got != 2 {
		t.Errorf("Retry-After of 1.5 s = %d, want 2 (whole seconds, rounded up)", got)
	}
}

// TestStatusTable pins every code to the status PROTOCOL.md gives it, so
// that an edit to the table is a deliberate protocol change.
func TestStatusTable(t *testing.T) {
	want := map[registry.Code]int{
		registry.CodeInvalid: 400, registry.CodeCapabilityRequired: 400, registry.CodeInvalidOutcome: 400, registry.CodeErrorRequired: 400, registry.CodeNoCA: 400,
		registry.CodeUnauthorized: 401, registry.CodeRegistrationTokenInvalid: 401,
		CodeSignatureRequired: 401, CodeSignatureInvalid: 401, CodeSignatureExpired: 401, CodeSignatureReplayed: 401, CodeClientCertificateRequired: 401,
		registry.CodeForbidden: 403, registry.CodeClusterDisabled: 403,
		registry.CodeNotFound: 404, registry.CodeJobNotFound: 404,
		CodeMethodNotAllowed: 405, CodeNotAcceptable: 406, CodeRequestTimeout: 408, CodePreconditionRequired: 428,
		registry.CodeConflict: 409, registry.CodeAlreadyClaimed: 409, registry.CodeJobClosed: 409, registry.CodeStaleClaim: 409,
		registry.CodeJobCanceled: 409, registry.CodeResultAlreadyRecorded: 409, registry.CodeJobNotFinished: 409,
		registry.CodeNamespaceNotAllowed: 422, registry.CodeCatalogEntryNotAllowed: 422, registry.CodeOperationTemplateNotAllowed: 422, registry.CodePublicKeyRequired: 422,
		registry.CodeTooLarge: 413, CodeUnsupportedMediaType: 415, registry.CodeRateLimited: 429, CodeTooManyPolls: 429, CodeTooManyConnections: 429,
		registry.CodeInternal: 500, registry.CodeUnavailable: 503,
	}
	for code, status := range want {
		if got := HTTPStatus(code); got != status {
			t.Errorf("%s -> %d, want %d", code, got, status)
		}
	}
	if len(statusOf) != len(want) {
		t.Errorf("the table has %d codes, this test knows %d: pin the new ones here", len(statusOf), len(want))
	}
	if HTTPStatus("no_such_code") != 500 {
		t.Error("an unknown code must be a 500")
	}
}

// TestHeldPollsCount: the caps count per credential and per address, and a
// released slot leaves no entry behind (the maps hold only what is held).
func TestHeldPollsCount(t *testing.T) {
	h := newHeldPolls(2, 3)
	for _, k := range [][2]string{{"c1", "a"}, {"c1", "a"}, {"c2", "a"}} {
		if err := h.acquire(k[0], k[1]); err != nil {
			t.Fatalf("acquire %v: %v", k, err)
		}
	}
	if err := h.acquire("c1", "b"); registry.ErrorCode(err) != CodeTooManyPolls {
		t.Fatalf("third poll of a credential: %v, want too_many_polls", err)
	}
	if err := h.acquire("c3", "a"); registry.ErrorCode(err) != CodeTooManyPolls {
		t.Fatalf("fourth poll of an address: %v, want too_many_polls", err)
	}
	h.release("c1", "a")
	h.release("c1", "a")
	h.release("c2", "a")
	if len(h.byCred) != 0 || len(h.byAddr) != 0 {
		t.Fatalf("entries left after every release: %v %v", h.byCred, h.byAddr)
	}
	if off := newHeldPolls(-1, -1); off.acquire("c", "a") != nil || off.perCredential != 0 {
		t.Fatal("negative caps must turn the caps off")
	}
	if def := newHeldPolls(0, 0); def.perCredential != DefaultMaxPollsPerCredential || def.perAddress != DefaultMaxPollsPerAddress {
		t.Fatalf("zero caps took %d/%d, want the defaults", def.perCredential, def.perAddress)
	}
}

// A parked poll answered once shutdown has begun (its look was running when
// the drain started, and found nothing or found jobs) says that its
// connection closes, and closes it: the handback takes no connection any
// more. Without the check the answer promised a kept connection that the
// agent then saw cut.
func TestParkedAnswerDuringShutdownClosesItsConnection(t *testing.T) {
	s := &Server{draining: make(chan struct{})}
	close(s.draining)
	back := newHandback(nil)
	_ = back.Close()
	pk := &parker{s: s, back: back, polls: map[*parkedPoll]struct{}{}}
	server, client := net.Pipe()
	defer client.Close()
	p := &parkedPoll{pk: pk, conn: server}
	pk.polls[p] = struct{}{}
	pk.wg.Add(1)
	_, _ = p.w.Write([]byte(`{"jobs":[]}`))
	go p.deliver(true) // a look that answered asks to keep the connection
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !resp.Close || string(body) != `{"jobs":[]}` {
		t.Errorf("answer during shutdown: close %v, body %q; want Connection: close and the body", resp.Close, body)
	}
	pk.wg.Wait()
	if _, err := client.Read(make([]byte, 1)); err == nil {
		t.Error("the connection stayed open after the answer")
	}
	if len(pk.polls) != 0 {
		t.Error("the answered poll is still counted as parked")
	}
}
