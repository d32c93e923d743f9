package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/server"
)

// One address cannot hold more connections than the cap: past it a new
// connection is answered 429 too_many_connections in the API's error shape
// and closed; a slot comes back when a connection closes (issue 11,
// defect 1).
func TestConnectionsPerAddressAreCapped(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxConnsPerAddress = 3 })
	addr := strings.TrimPrefix(e.url, "http://")
	dial := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, patience)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn) *http.Response {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(patience))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: tether\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("read the answer: %v", err)
		}
		return resp
	}
	var held []net.Conn
	for range 3 {
		c := dial()
		if resp := get(c); resp.StatusCode != http.StatusOK {
			t.Fatalf("a connection within the cap: %d", resp.StatusCode)
		}
		held = append(held, c)
	}
	resp := get(dial())
	var body struct{ Error, Message, RequestID string }
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusTooManyRequests || body.Error != "too_many_connections" || body.RequestID == "" ||
		resp.Header.Get("Retry-After") == "" || !strings.Contains(body.Message, "--max-conns-per-address") {
		t.Fatalf("the 4th connection: %d %+v (Retry-After %q)", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	held[0].Close()
	deadline := time.Now().Add(patience)
	for {
		if resp := get(dial()); resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection's slot never came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
