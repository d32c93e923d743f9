package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

// TestTokensNeverReachTheLog drives a whole agent life over HTTP at debug
// level, including requests that put tokens where a careless log line would
// print them (the path, failed registrations, garbage credentials), and
// checks no secret appears in the output.
func TestTokensNeverReachTheLog(t *testing.T) {
	e := newEnv(t)
	_, regTok := e.cluster("c1")
	r := e.do(http.MethodPost, "/api/agent/register", withBearer(regTok), withJSON(map[string]any{"registrationToken": regTok, "capabilities": []string{"hmac", "lease"}}))
	r.want(t, http.StatusOK)
	var ans credentialAnswer
	r.decode(t, &ans)
	a := e.agentFrom(ans)
	job := e.submit(a.clusterID)
	a.poll(0).want(t, http.StatusOK)
	a.ack(job).wantNoContent(t)
	a.result(job, `{"outcome":"succeeded"}`).wantNoContent(t)
	r = a.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`))
	r.want(t, http.StatusOK)
	var rotated credentialAnswer
	r.decode(t, &rotated)
	// Tokens in places that get logged: the path, a reused registration
	// token, a credential with a wrong secret.
	e.do(http.MethodGet, "/api/agent/jobs/"+a.token+"/ack", withBearer(a.token))
	e.do(http.MethodPost, "/api/agent/register", withJSON(map[string]any{"registrationToken": regTok}))
	e.do(http.MethodGet, "/api/agent/jobs?cluster="+a.clusterID, withBearer(a.token+"x"))

	logs := e.logs.String()
	if !strings.Contains(logs, "request_id=") {
		t.Fatalf("no request lines logged:\n%s", logs)
	}
	for name, secret := range map[string]string{
		"registration token": regTok, "credential": ans.Token, "hmac key": ans.HMACKey,
		"rotated credential": rotated.Token, "rotated hmac key": rotated.HMACKey,
	} {
		if secret == "" {
			t.Fatalf("%s is empty", name)
		}
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds the %s", name)
		}
	}
	for _, prefix := range []string{"tether_reg_", "tether_cred_"} {
		if strings.Contains(logs, prefix) {
			t.Errorf("the log holds a %s... string", prefix)
		}
	}
}

// TestRedactHandler: whatever code logs, secrets are redacted at the logger.
func TestRedactHandler(t *testing.T) {
	token := "tether_cred_01hxyza1b2c3d4e5f6g7h8j9k0_abcdefghijklmnopqrstuvwxyz234567"
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		log, err := server.NewLogger(&buf, format, slog.LevelDebug)
		if err != nil {
			t.Fatal(err)
		}
		type creds struct {
			User  string
			Token registry.Secret
		}
		hdr := http.Header{"Authorization": {"Bearer opaque-not-prefixed"}, "X-Agent-Signature": {"v1=abc"}, "Accept": {"*/*"}}
		log.With("bound", token).WithGroup("g").Info("token "+token,
			"plain", token,
			"secret", registry.Secret("hunter2-opaque"),
			"authorization", "Bearer opaque-not-prefixed",
			"header", hdr,
			"err", fmt.Errorf("auth failed for %s", token),
			"wrapped", errors.Join(errors.New("x"), errors.New(token)),
			"struct", creds{User: "u", Token: registry.Secret("hunter2-opaque")},
			slog.Group("nested", "deep", token),
			"count", 3,
		)
		out := buf.String()
		for _, leak := range []string{"tether_cred_", "hunter2", "opaque-not-prefixed", "v1=abc"} {
			if strings.Contains(out, leak) {
				t.Errorf("%s: %q leaked: %s", format, leak, out)
			}
		}
		for _, kept := range []string{"count", "*/*", "[REDACTED]"} {
			if !strings.Contains(out, kept) {
				t.Errorf("%s: %q missing (redaction must keep the rest): %s", format, kept, out)
			}
		}
	}
	if _, err := server.NewLogger(&bytes.Buffer{}, "xml", slog.LevelInfo); err == nil {
		t.Error("log format xml accepted")
	}
}

// A duration reads as one in both log formats ("1m30s"), not as the
// nanoseconds slog's JSON handler writes by default.
func TestLogDurationsAsText(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var b bytes.Buffer
		log, err := server.NewLogger(&b, format, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("waited", "delay", 90*time.Second, slog.Group("g", "timeout", 1500*time.Millisecond))
		out := b.String()
		if !strings.Contains(out, "1m30s") || !strings.Contains(out, "1.5s") || strings.Contains(out, "90000000000") {
			t.Errorf("%s log of durations: %s", format, out)
		}
	}
}
