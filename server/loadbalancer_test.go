package server_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/server"
)

// Behind a trusted load balancer each client's registrations are limited on
// their own (by X-Forwarded-For), not all together as the balancer's; a
// client that is not behind a trusted proxy cannot dodge its limit with the
// header.
func TestRegisterLimitPerForwardedClient(t *testing.T) {
	trusted, err := server.ParseTrustedProxies([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *server.Config) { c.RateLimit = 0; c.TrustedProxies = trusted })
	register := func(client string) int {
		return e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": "hello"}),
			withHeader("X-Forwarded-For", client)).status
	}
	for range server.RegisterRateBurst {
		if st := register("198.51.100.1"); st == http.StatusTooManyRequests {
			t.Fatal("limited within the burst")
		}
	}
	if st := register("198.51.100.1"); st != http.StatusTooManyRequests {
		t.Fatalf("got %d past the burst, want 429", st)
	}
	if st := register("198.51.100.2"); st == http.StatusTooManyRequests {
		t.Fatal("another client behind the same proxy shares the first one's limit")
	}
	if !strings.Contains(e.logs.String(), "client=198.51.100.2") {
		t.Error("the request log does not name the forwarded client")
	}

	untrusted := newEnv(t, func(c *server.Config) { c.RateLimit = 0 })
	limited := false
	for i := range server.RegisterRateBurst + 5 {
		st := untrusted.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": "hello"}),
			withHeader("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i)))
		limited = limited || st.status == http.StatusTooManyRequests
	}
	if !limited {
		t.Error("an untrusted client escaped the per-address limit by sending X-Forwarded-For")
	}
}

// With a shutdown delay the server keeps answering after its context ends,
// with /readyz failing, then shuts down.
func TestShutdownDelayKeepsAnswering(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.ShutdownDelay = 3 * time.Second })
	if st := e.do(http.MethodGet, "/readyz").status; st != http.StatusOK {
		t.Fatalf("/readyz: got %d before shutdown, want 200", st)
	}
	e.cancel()
	deadline := time.Now().Add(patience)
	for e.do(http.MethodGet, "/readyz").status != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("/readyz never failed after the context ended")
		}
		runtime.Gosched()
	}
	if st := e.do(http.MethodGet, "/healthz").status; st != http.StatusOK {
		t.Errorf("/healthz: got %d during the shutdown delay, want 200 (still answering)", st)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "shutdown delay") {
		t.Error("the log does not say the shutdown waits")
	}
	// The readiness probe failing is the shutdown working: not an error
	// that pages someone at every deploy.
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "path=/readyz") && strings.Contains(line, "status=503") && !strings.Contains(line, "level=DEBUG") {
			t.Errorf("a graceful shutdown's /readyz 503 is logged above debug: %s", line)
		}
	}
}
