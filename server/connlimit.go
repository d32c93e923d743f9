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
//
// It hands out the connections it accepts as they are, and learns that one
// closed from http.Server's ConnState (connClosed): wrapping them would hide
// a *tls.Conn from net/http, and with it the request's TLS state (the
// client certificate that names a cluster, ALPN).
type connLimit struct {
	net.Listener
	max     int
	trusted func(host string) bool

	mu      sync.Mutex
	open    map[string]int
	counted map[net.Conn]string // accepted and not yet closed: its host
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
		if l.counted == nil {
			l.counted = map[net.Conn]string{}
		}
		l.counted[c] = host
		l.mu.Unlock()
		return c, nil
	}
}

// connClosed gives a connection's slot back, once (http.Server's ConnState
// on StateClosed or StateHijacked).
func (l *connLimit) connClosed(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	host, ok := l.counted[c]
	if !ok {
		return
	}
	delete(l.counted, c)
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
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
