package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
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
// Every open connection counts, idle keep-alive ones too (each holds a file
// descriptor), but an idle one is given up under pressure: when an address
// at its cap opens another, its connection idle the longest is closed to make
// room (as IdleTimeout would close it later; HTTP clients expect a server to
// close idle connections). Only an address whose every connection is busy is
// refused.
//
// It hands out the connections it accepts as they are, and learns what
// becomes of them from http.Server's ConnState (connState): wrapping them
// would hide a *tls.Conn from net/http, and with it the request's TLS state
// (the client certificate that names a cluster, ALPN).
type connLimit struct {
	net.Listener
	max     int
	trusted func(host string) bool

	mu sync.Mutex
	// hosts holds each address's connections, accepted and not yet closed,
	// with the time each went idle (zero while it is not idle).
	hosts  map[string]map[net.Conn]time.Time
	hostOf map[net.Conn]string
}

func newConnLimit(ln net.Listener, max int, trusted func(string) bool) *connLimit {
	return &connLimit{Listener: ln, max: max, trusted: trusted,
		hosts: map[string]map[net.Conn]time.Time{}, hostOf: map[net.Conn]string{}}
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
		conns := l.hosts[host]
		if len(conns) >= l.max {
			idle := oldestIdle(conns)
			if idle == nil {
				l.mu.Unlock()
				go refuseConn(c, l.max)
				continue
			}
			// Its slot is the new connection's from now: net/http's
			// StateClosed for it then finds nothing to give back. Closed
			// apart, since closing TLS writes to the peer.
			l.forgetLocked(idle)
			go idle.Close()
			conns = l.hosts[host]
		}
		if conns == nil {
			conns = map[net.Conn]time.Time{}
			l.hosts[host] = conns
		}
		conns[c] = time.Time{}
		l.hostOf[c] = host
		l.mu.Unlock()
		return c, nil
	}
}

// oldestIdle returns the connection of conns idle the longest, nil if none
// is idle.
func oldestIdle(conns map[net.Conn]time.Time) net.Conn {
	var oldest net.Conn
	var since time.Time
	for c, idle := range conns {
		if !idle.IsZero() && (oldest == nil || idle.Before(since)) {
			oldest, since = c, idle
		}
	}
	return oldest
}

// connState follows a counted connection's state (http.Server's ConnState):
// idle or busy, and its slot given back, once, when it closes or is
// hijacked.
func (l *connLimit) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	host, ok := l.hostOf[c]
	if !ok {
		return
	}
	switch st {
	case http.StateIdle:
		l.hosts[host][c] = time.Now()
	case http.StateActive:
		l.hosts[host][c] = time.Time{}
	case http.StateClosed, http.StateHijacked:
		l.forgetLocked(c)
	}
}

func (l *connLimit) forgetLocked(c net.Conn) {
	host := l.hostOf[c]
	delete(l.hostOf, c)
	conns := l.hosts[host]
	delete(conns, c)
	if len(conns) == 0 {
		delete(l.hosts, host)
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

// adopt counts again a connection net/http gave up (hijacked) to park a
// long-poll on it: it stays open, busy, and under its address's cap until
// it is closed (release) or handed back to net/http, whose ConnState then
// follows it again. Its slot is given back during the hijack and taken again
// here: for that moment the address may open one connection more.
func (l *connLimit) adopt(c net.Conn) {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil || l.trusted(host) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	conns := l.hosts[host]
	if conns == nil {
		conns = map[net.Conn]time.Time{}
		l.hosts[host] = conns
	}
	conns[c] = time.Time{}
	l.hostOf[c] = host
}

// release gives back the slot of an adopted connection that was closed.
func (l *connLimit) release(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.hostOf[c]; ok {
		l.forgetLocked(c)
	}
}
