package server

import (
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// DefaultMaxConnsPerAddress is how many connections one client address may
// have open at once: twice the long-polls it may hold, so that a client
// holding all its polls can still report. Trusted proxies are exempt (their
// clients are told apart by X-Forwarded-For, request by request).
const DefaultMaxConnsPerAddress = 2 * DefaultMaxPollsPerAddress

// connLimit wraps a listener so that one address cannot hold more than max
// connections: past the cap a new connection is answered 429 and closed,
// instead of tying up a goroutine and a socket each, without bound.
type connLimit struct {
	net.Listener
	max     int
	trusted func(host string) bool

	mu   sync.Mutex
	open map[string]int
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(c.RemoteAddr().String())
		if err != nil || l.trusted(host) {
			return c, nil
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			go refuseConn(c, l.max)
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

func (l *connLimit) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
}

// countedConn gives its slot back once, when it closes.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// refuseConn answers a connection past the cap with a 429 in the API's
// error shape (after reading what the client sent, so that closing does not
// reset the connection under the answer), then closes it; bounded in time.
func refuseConn(c net.Conn, max int) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	_, _ = c.Read(buf) // the request line and headers, or whatever came
	body, _ := json.Marshal(errorBody{
		Error:     CodeTooManyConnections,
		Message:   fmt.Sprintf("this address has %d connections open to tether, its most at once; close some (reuse connections) or ask the operator to raise serve --max-conns-per-address", max),
		RequestID: newRequestID(),
	})
	fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}
