package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Under systemd (Type=notify) serve says READY=1 once it listens, keeps the
// watchdog fed while its handlers answer, and says STOPPING=1 when a
// SIGTERM begins the shutdown: the real binary, talking to a socket that
// stands in for systemd's.
func TestServeNotifiesSystemd(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	messages := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(messages)
				return
			}
			messages <- string(buf[:n])
		}
	}()
	next := func(want string) {
		t.Helper()
		timeout := time.After(waitTimeout)
		for {
			select {
			case m, ok := <-messages:
				if !ok {
					t.Fatalf("the socket closed before %q", want)
				}
				if strings.Contains(m, want) {
					return
				}
			case <-timeout:
				t.Fatalf("serve sent no %q within %s", want, waitTimeout)
			}
		}
	}
	p, _, _ := startServeEnv(t, newDB(t), []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=200000"}, "--listen", "127.0.0.1:0")
	next("READY=1")
	next("WATCHDOG=1")
	next("WATCHDOG=1")
	if code, log := p.stop(t); code != 0 {
		t.Fatalf("serve exited %d\n%s", code, log)
	}
	next("STOPPING=1")
}
