package agent_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/apiclient"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUnreachableServerIsReportedAtOnce: an agent whose tether is down says
// so in its first second, naming the server and the error, and not again
// and again while it retries.
func TestUnreachableServerIsReportedAtOnce(t *testing.T) {
	// A port nothing listens on: listen, note it, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	if err := agent.SaveState(dir, agent.State{Server: "http://" + addr, Credential: apiclient.Credential{ClusterID: "cl-1", Token: "tether_cred_x"}}); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	a, err := agent.New(agent.Config{
		StateDir: dir, Command: "true",
		Retry:  apiclient.RetryPolicy{MinBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "cannot reach tether") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no word of the unreachable server within 10s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Many retries later (50-100 ms apart), still one line per minute.
	time.Sleep(time.Second)
	cancel()
	<-done
	out := logs.String()
	if n := strings.Count(out, "cannot reach tether"); n > 3 {
		t.Fatalf("%d lines about the same failure in a second:\n%s", n, out)
	}
	if !strings.Contains(out, addr) || !strings.Contains(out, "connection refused") {
		t.Fatalf("the message does not name the server and the error:\n%s", out)
	}
}
