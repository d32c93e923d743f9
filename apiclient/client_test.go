package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fast keeps retry waits short in tests; the default is one second.
var fast = RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}

// script is a server answering each request with the next step.
type step struct {
	status  int
	code    string
	headers map[string]string
	body    string
}

func scripted(t *testing.T, steps ...step) (*httptest.Server, *[]*http.Request) {
	t.Helper()
	var n atomic.Int64
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		r.Header.Set("X-Test-Body", string(b))
		seen = append(seen, r)
		i := int(n.Add(1)) - 1
		if i >= len(steps) {
			t.Errorf("unexpected request %d: %s %s", i, r.Method, r.URL)
			w.WriteHeader(500)
			return
		}
		s := steps[i]
		for k, v := range s.headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("X-Request-Id", "rq-test")
		w.WriteHeader(s.status)
		if s.code != "" {
			json.NewEncoder(w).Encode(map[string]string{"error": s.code, "message": "scripted " + s.code, "requestId": "rq-test"})
		} else {
			io.WriteString(w, s.body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func client(t *testing.T, url string, cred Credential) *Client {
	t.Helper()
	if cred.ClusterID == "" {
		cred = Credential{ClusterID: "cl-1", Token: "old"}
	}
	c, err := New(Config{BaseURL: url, Credential: cred, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRetriesTransientFailures(t *testing.T) {
	srv, seen := scripted(t,
		step{status: 503, code: "unavailable"},
		step{status: 429, code: "rate_limited", headers: map[string]string{"Retry-After": "0"}},
		step{status: 200, body: `{"jobs":[{"id":"j-1","kind":"apply","payload":{},"createdAt":"2026-05-28T10:00:00Z"}]}`},
	)
	jobs, err := client(t, srv.URL, Credential{}).Poll(context.Background(), 30*time.Second, 0)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "j-1" {
		t.Fatalf("Poll = %v, %v", jobs, err)
	}
	if len(*seen) != 3 {
		t.Fatalf("%d requests, want 3", len(*seen))
	}
	r := (*seen)[0]
	if r.URL.Query().Get("cluster") != "cl-1" || r.URL.Query().Get("wait") != "30" || r.Header.Get("Authorization") != "Bearer old" ||
		r.Header.Get("Accept") != MediaType || r.Header.Get("Content-Type") != "" {
		t.Fatalf("poll request = %s %v", r.URL, r.Header)
	}
}

func TestBackoffNeverFasterThanMinimum(t *testing.T) {
	p := RetryPolicy{}
	for attempt := 1; attempt < 12; attempt++ {
		d := p.Backoff(attempt)
		if d < time.Second || d > 60*time.Second {
			t.Fatalf("attempt %d waits %s, want within [1s, 60s]", attempt, d)
		}
	}
	if p.Backoff(6) < 16*time.Second {
		t.Fatalf("backoff does not grow: attempt 6 waits %s", p.Backoff(6))
	}
}

func TestUnauthorizedRotatesOnceThenStops(t *testing.T) {
	srv, seen := scripted(t,
		step{status: 401, code: "unauthorized"},
		step{status: 200, body: `{"clusterId":"cl-1","token":"new","expiresAt":"2026-06-28T10:00:00Z","graceUntil":"2026-05-29T10:00:00Z"}`},
		step{status: 204},
		step{status: 401, code: "unauthorized"},
		step{status: 401, code: "unauthorized"},
	)
	var persisted Credential
	c, _ := New(Config{BaseURL: srv.URL, Credential: Credential{ClusterID: "cl-1", Token: "old"}, Retry: fast,
		OnRotate: func(_ context.Context, cred Credential) error { persisted = cred; return nil }})
	if err := c.Status(context.Background(), "j-1", "", Status{Phase: "Running"}); err != nil {
		t.Fatalf("Status after a rotation: %v", err)
	}
	if persisted.Token != "new" || c.Credential().Token != "new" {
		t.Fatalf("rotated credential not persisted and used: %q %q", persisted.Token, c.Credential().Token)
	}
	if got := (*seen)[1]; got.URL.Path != "/api/agent/credentials/rotate" || got.Header.Get("X-Test-Body") != "{}" {
		t.Fatalf("rotate request = %s body %q", got.URL.Path, got.Header.Get("X-Test-Body"))
	}
	if got := (*seen)[2].Header.Get("Authorization"); got != "Bearer new" {
		t.Fatalf("retry used %q", got)
	}
	// A 401 whose rotation is refused too: unauthenticated, no loop.
	err := c.Status(context.Background(), "j-1", "", Status{})
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("err = %v, want ErrUnauthenticated", err)
	}
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.RequestID != "rq-test" || apiErr.Code != "unauthorized" {
		t.Fatalf("the server's error is not reachable: %#v", apiErr)
	}
	if len(*seen) != 5 {
		t.Fatalf("%d requests, want 5", len(*seen))
	}
}

func TestStopsOnForbiddenAndMapsJobCodes(t *testing.T) {
	srv, _ := scripted(t,
		step{status: 403, code: "cluster_disabled"},
		step{status: 404, code: "job_not_found"},
		step{status: 409, code: "already_claimed"},
		step{status: 409, code: "result_already_recorded"},
		step{status: 409, code: "job_canceled"},
		step{status: 409, code: "stale_claim"},
		step{status: 400, code: "invalid_outcome"},
	)
	c := client(t, srv.URL, Credential{})
	ctx := context.Background()
	if _, err := c.Poll(ctx, 0, 0); !errors.Is(err, ErrForbidden) || !IsCode(err, CodeClusterDisabled) {
		t.Fatalf("403: %v", err)
	}
	if _, err := c.Ack(ctx, "j-1"); !errors.Is(err, ErrJobGone) {
		t.Fatalf("404: %v", err)
	}
	if _, err := c.Ack(ctx, "j-1"); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("409 on ack: %v", err)
	}
	if err := c.Result(ctx, "j-1", "", Result{Outcome: OutcomeSucceeded}); err != nil {
		t.Fatalf("409 result_already_recorded must be success: %v", err)
	}
	if err := c.Result(ctx, "j-1", "", Result{Outcome: OutcomeSucceeded}); !errors.Is(err, ErrJobCanceled) {
		t.Fatalf("job_canceled: %v", err)
	}
	if err := c.Status(ctx, "j-1", "fc-1", Status{}); !errors.Is(err, ErrStaleClaim) {
		t.Fatalf("stale_claim: %v", err)
	}
	if err := c.Result(ctx, "j-1", "", Result{Outcome: "x"}); !IsCode(err, "invalid_outcome") {
		t.Fatalf("400: %v", err)
	}
}

func TestAckReadsLeaseHeadersAndSendsNoBody(t *testing.T) {
	srv, seen := scripted(t, step{status: 204, headers: map[string]string{"X-Claim-Id": "fc-9", "X-Lease-Expires-At": "2026-05-28T10:01:00Z"}})
	claim, err := client(t, srv.URL, Credential{}).Ack(context.Background(), "j-1")
	if err != nil || claim.ClaimID != "fc-9" || claim.LeaseExpiresAt.IsZero() {
		t.Fatalf("claim = %+v, %v", claim, err)
	}
	r := (*seen)[0]
	if r.Header.Get("Content-Type") != "" || r.Header.Get("X-Test-Body") != "" || r.URL.Path != "/api/agent/jobs/j-1/ack" {
		t.Fatalf("ack sent %q %q to %s", r.Header.Get("Content-Type"), r.Header.Get("X-Test-Body"), r.URL.Path)
	}
}

func TestCancelledContextStopsRetrying(t *testing.T) {
	srv, _ := scripted(t, step{status: 500, code: "internal"})
	c, _ := New(Config{BaseURL: srv.URL, Credential: Credential{ClusterID: "c", Token: "t"}, Retry: RetryPolicy{MinBackoff: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.Status(ctx, "j", "", Status{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestSignedWrites(t *testing.T) {
	// A vector computed with openssl: key "k" (base64url "aw"), POST
	// /api/agent/events at 1700000000 with body {}.
	got := Signature([]byte("k"), "POST", "/api/agent/events", "1700000000", []byte("{}"))
	if want := "876cb2c0005dc170fc7d454e61f9dfeba6158765a650b4c242f8552d3ce70a6b"; got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
	srv, seen := scripted(t, step{status: 204}, step{status: 200, body: `{"jobs":[]}`})
	c := client(t, srv.URL, Credential{ClusterID: "cl-1", Token: "t", HMACKey: "aw"})
	if err := c.Events(context.Background(), []Event{{Kind: EventAudit}}); err != nil {
		t.Fatal(err)
	}
	r := (*seen)[0]
	ts := r.Header.Get("X-Agent-Timestamp")
	wantSig := "v1=" + Signature([]byte("k"), "POST", "/api/agent/events", ts, []byte(r.Header.Get("X-Test-Body")))
	if r.Header.Get("X-Agent-Signature") != wantSig {
		t.Fatalf("signature %q, want %q", r.Header.Get("X-Agent-Signature"), wantSig)
	}
	if _, err := c.Poll(context.Background(), 0, 0); err != nil {
		t.Fatal(err)
	}
	if (*seen)[1].Header.Get("X-Agent-Signature") != "" {
		t.Fatal("a GET was signed; only writes are")
	}
}

func TestCredentialNeverPrintsSecrets(t *testing.T) {
	cred := Credential{ClusterID: "cl-1", Token: "tether_cred_secret", HMACKey: "hmac-secret"}
	for _, s := range []string{cred.String(), cred.GoString(), cred.LogValue().String()} {
		if strings.Contains(s, "secret") {
			t.Fatalf("%q shows a secret", s)
		}
	}
}

func TestRegisterSendsTokenTwice(t *testing.T) {
	srv, seen := scripted(t, step{status: 200, body: `{"clusterId":"cl-9","token":"tether_cred_x","expiresAt":"2026-06-28T10:00:00Z","rotateAfter":"2026-06-04T10:00:00Z"}`})
	cred, err := Register(context.Background(), srv.URL, "tether_reg_y", RegisterOptions{ClusterIDHint: "my-name", Capabilities: []string{"lease"}})
	if err != nil || cred.ClusterID != "cl-9" || cred.Token != "tether_cred_x" {
		t.Fatalf("Register = %+v, %v", cred, err)
	}
	r := (*seen)[0]
	var body map[string]any
	json.Unmarshal([]byte(r.Header.Get("X-Test-Body")), &body)
	if r.Header.Get("Authorization") != "Bearer tether_reg_y" || body["registrationToken"] != "tether_reg_y" || body["clusterId"] != "my-name" {
		t.Fatalf("register sent %v %v", r.Header.Get("Authorization"), body)
	}
}

// TestSignatureRefusalsDoNotRotate: only a refused credential leads to a
// rotation. A clock that is off is reported as such; a replay (the same
// request signed within the same second) is signed again and sent; a bad
// signature is an error of its own. None of them rotates the credential.
func TestSignatureRefusalsDoNotRotate(t *testing.T) {
	srv, seen := scripted(t,
		step{status: 401, code: CodeSignatureExpired},
		step{status: 401, code: CodeSignatureReplayed},
		step{status: 204},
		step{status: 401, code: CodeSignatureInvalid},
	)
	c := client(t, srv.URL, Credential{})
	err := c.Status(context.Background(), "j-1", "", Status{})
	if !errors.Is(err, ErrClockSkew) || errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("signature_expired: %v, want ErrClockSkew", err)
	}
	if err := c.Status(context.Background(), "j-1", "", Status{}); err != nil {
		t.Fatalf("signature_replayed then 204: %v, want the retry to succeed", err)
	}
	err = c.Status(context.Background(), "j-1", "", Status{})
	if !IsCode(err, CodeSignatureInvalid) || errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("signature_invalid: %v", err)
	}
	for _, r := range *seen {
		if r.URL.Path == "/api/agent/credentials/rotate" {
			t.Fatal("a signature refusal rotated the credential")
		}
	}
	if c.Credential().Token != "old" {
		t.Fatalf("credential changed to %q", c.Credential().Token)
	}
}
