package server_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/server"
)

// TestSlowBodyIsAnswered408: headers that announce a body which never comes
// get a 408 once the body timeout passes, and the connection is closed, on
// a route that reads a body, whether or not the caller is authenticated.
func TestSlowBodyIsAnswered408(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.BodyTimeout = 300 * time.Millisecond })
	a := e.newAgent("prod")
	for _, req := range []string{
		"POST /api/agent/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"regis",
		"POST /api/agent/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + a.token + "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n",
		"POST /api/admin/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(patience))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", strings.SplitN(req, "\r\n", 2)[0], err)
		}
		took := time.Since(start)
		resp.Body.Close()
		line := strings.SplitN(req, "\r\n", 2)[0]
		switch {
		case strings.Contains(line, "admin"):
			// Unauthenticated on the admin API: refused before its body is read.
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%s: %d, want 401", line, resp.StatusCode)
			}
		case resp.StatusCode != http.StatusRequestTimeout || !resp.Close:
			t.Fatalf("%s: %d (close %v) after %s, want 408 and the connection closed", line, resp.StatusCode, resp.Close, took)
		}
		conn.Close()
	}
}
