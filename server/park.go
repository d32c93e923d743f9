package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/registry"
)

// Parked long-polls. A held poll inside net/http costs its connection's
// goroutine (with a stack as deep as the request ever went), net/http's
// background reader (a second goroutine), the connection's 4 KiB read and
// write buffers, the response's 2 KiB buffer, and the request: about
// 25 KiB of live memory, twice that resident once the collector's headroom
// is counted. A poll over plain HTTP/1.1 whose look found nothing is instead
// taken out of net/http (hijacked) and parked: one small goroutine waits in
// the runtime's network poller for the connection to become readable (the
// client left, or sent something), with the poll's wait as the connection's
// read deadline; a wake-up (a callback subscription in the registry's hub,
// no channel) or shutdown moves that deadline to the past. The woken poll
// looks as a held one does, writes its answer by hand, and hands the
// connection back to net/http through a listener of its own (handback), so
// that the agent's next request on it is served at once: not behind the
// accept loop of the real listener, which is what made an earlier attempt
// deliver jobs seconds late. HTTP/2, TLS, and a request that asks to close
// its connection stay held inside net/http.

// parker tracks the parked polls of a Server while Serve runs.
type parker struct {
	s     *Server
	limit *connLimit // nil: connections are not capped per address
	back  *handback

	mu     sync.Mutex
	closed bool // shutting down: nothing parks any more
	polls  map[*parkedPoll]struct{}
	wg     sync.WaitGroup
}

func newParker(s *Server, limit *connLimit, back *handback) *parker {
	return &parker{s: s, limit: limit, back: back, polls: map[*parkedPoll]struct{}{}}
}

// parkedPoll is a poll that waits outside net/http.
type parkedPoll struct {
	c        *call
	pl       *heldPoll
	deadline time.Time
	conn     net.Conn
	raw      syscall.RawConn
	unsub    func()
	w        parkedWriter

	mu    sync.Mutex
	woken bool // a wake-up came and was not yet looked at
	over  bool // answered or closed: wake-ups leave the connection alone
}

// aLongTimeAgo is a read deadline that has passed: it makes a parked
// poll's wait return at once.
var aLongTimeAgo = time.Unix(1, 0)

// wake is the poll's hub subscription (called with the hub's lock held)
// and how shutdown ends the wait.
func (p *parkedPoll) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.woken = true
	if p.conn != nil && !p.over {
		_ = p.conn.SetReadDeadline(aLongTimeAgo)
	}
}

// park takes a held poll out of net/http, when it can: it reports whether
// the poll is parked, in which case the handler returns at once and the
// parked poll answers, logs and ends the request later.
func (s *Server) park(c *call, pl *heldPoll, deadline time.Time) bool {
	pk := s.parker
	r := c.r
	if pk == nil || !parkSupported || r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.Close || r.TLS != nil ||
		r.ContentLength != 0 || len(r.TransferEncoding) > 0 || c.rec.wrote {
		return false
	}
	p := &parkedPoll{c: c, pl: pl, deadline: deadline}
	pk.mu.Lock()
	if pk.closed {
		pk.mu.Unlock()
		return false
	}
	pk.polls[p] = struct{}{}
	pk.wg.Add(1)
	pk.mu.Unlock()
	p.w.header = c.raw.Header().Clone() // what prepare set (X-Credential-Rotate-After), usually nothing
	if len(p.w.header) == 0 {
		p.w.header = nil
	}
	conn, brw, err := http.NewResponseController(c.raw).Hijack()
	if err != nil {
		pk.forget(p)
		pk.wg.Done()
		return false
	}
	// From here on the request is the parked poll's: net/http forgets the
	// connection when the handler returns.
	if pk.limit != nil {
		pk.limit.adopt(conn)
	}
	c.parked, pl.parked = true, true
	c.raw = &p.w
	c.rec.ResponseWriter = &p.w
	c.r = parkedRequest(r)
	ctx := registry.WithActor(context.Background(), c.agent.Actor())
	if c.span != nil {
		ctx = trace.ContextWithSpan(ctx, c.span)
	}
	c.ctx = ctx
	// The poll's subscription moves from its channel to p.wake: a wake-up
	// that came before is in the channel.
	unsub, subErr := s.reg.SubscribeJobsFunc(pl.Cluster, p.wake)
	pl.unsubscribe()
	select {
	case <-pl.wake:
		p.wake()
	default:
	}
	pl.wake, pl.unsubscribe = nil, func() {}
	pl.Cluster = strings.Clone(pl.Cluster) // not a slice of the request's query
	if subErr == nil {
		pl.unsubscribe = unsub
	}
	canWait := subErr == nil && brw.Reader.Buffered() == 0
	if sc, ok := conn.(syscall.Conn); ok && canWait {
		p.raw, err = sc.SyscallConn()
		canWait = err == nil
	} else {
		canWait = false
	}
	p.mu.Lock()
	p.conn = conn
	p.mu.Unlock()
	if canWait {
		go p.watch(s)
	} else {
		go p.answerNow(s, subErr)
	}
	return true
}

// parkedRequest keeps of a request what the rest of the poll needs (the
// credential, the client's address, what the access log names), so that
// net/http's request, its headers and its buffers are not held while the
// poll waits.
func parkedRequest(r *http.Request) *http.Request {
	h := make(http.Header, 2)
	for _, k := range []string{"Authorization", "X-Forwarded-For"} {
		for _, v := range r.Header.Values(k) {
			h[k] = append(h[k], strings.Clone(v))
		}
	}
	return &http.Request{
		Method: r.Method, URL: &url.URL{Path: strings.Clone(r.URL.Path)}, Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor,
		Header: h, RemoteAddr: strings.Clone(r.RemoteAddr),
	}
}

func (pk *parker) forget(p *parkedPoll) {
	pk.mu.Lock()
	delete(pk.polls, p)
	pk.mu.Unlock()
}

// drain stops parking and wakes every parked poll: each answers with an
// empty list and closes its connection.
func (pk *parker) drain() {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.closed = true
	for p := range pk.polls {
		p.wake()
	}
}

// wait waits for the parked polls to end, or closes their connections
// when ctx ends first.
func (pk *parker) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		pk.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	pk.mu.Lock()
	for p := range pk.polls {
		p.mu.Lock()
		if p.conn != nil {
			_ = p.conn.Close()
		}
		p.mu.Unlock()
	}
	pk.mu.Unlock()
	<-done
	return ctx.Err()
}

// What ended a parked poll's wait.
type waitEnd int

const (
	waitDeadline waitEnd = iota // the read deadline: the poll's, or moved by a wake-up
	waitGone                    // the client closed its side, or the connection failed
	waitData                    // the client sent something while its poll was held
)

// watch is the parked poll's goroutine while it waits: it blocks until the
// client or a wake-up moves, and hands what happened to act, on a goroutine
// of its own. It does nothing else, so that its stack stays small (a
// goroutine keeps the largest stack it grew to until the collector shrinks
// it, and one that looked in the store grew a deep one): the collector
// shrinks it to the 2 KiB minimum.
func (p *parkedPoll) watch(s *Server) {
	for {
		p.mu.Lock()
		woken := p.woken
		p.woken = false
		if !woken {
			_ = p.conn.SetReadDeadline(p.deadline)
		}
		p.mu.Unlock()
		end := waitDeadline
		if !woken {
			if end = p.block(); end == waitDeadline {
				p.mu.Lock()
				woken = p.woken
				p.woken = false
				p.mu.Unlock()
				if !woken && !s.isDraining() && time.Now().Before(p.deadline) {
					continue
				}
			}
		}
		go p.act(s, end, woken)
		return
	}
}

// act answers the parked poll, or looks after a wake-up and, finding
// nothing, parks it again. The connection goes back to net/http after an
// answer, unless the client left or the server is shutting down.
func (p *parkedPoll) act(s *Server, end waitEnd, woken bool) {
	c := p.c
	keep, again := true, false
	defer func() {
		if !again {
			p.end(s, keep)
			s.parker.wg.Done()
		}
	}()
	defer func() {
		if !again {
			s.doneParked(c) // recovers a panic, logs the request
		}
	}()
	switch {
	case end == waitGone:
		keep = false // nobody reads an answer
	case end == waitData:
		// Pipelined: answer now (empty), and let net/http read what came.
		_ = s.writeJobs(c, nil)
	case s.isDraining():
		keep = false
		_ = s.writeJobs(c, nil)
	case woken:
		if err := s.reauthenticate(c); err != nil {
			s.answerError(c, err)
		} else if answered, err := s.lookForJobs(c, p.pl); err != nil {
			s.answerError(c, err)
		} else if !answered {
			if !time.Now().Before(p.deadline) {
				_ = s.writeJobs(c, nil)
				return
			}
			again = true
			go p.watch(s)
		}
	default: // the poll's wait is over
		_ = s.writeJobs(c, nil)
	}
}

// answerNow answers a poll that was hijacked but cannot wait parked, and
// closes its connection: its subscription failed (subErr, the registry is
// closing), or the connection cannot be watched.
func (p *parkedPoll) answerNow(s *Server, subErr error) {
	defer s.parker.wg.Done()
	defer p.end(s, false)
	defer s.doneParked(p.c)
	if subErr != nil {
		s.answerError(p.c, subErr)
		return
	}
	_ = s.writeJobs(p.c, nil)
}

// block waits in the network poller until the connection is readable or
// its read deadline passes. It reads nothing: a byte that came stays for
// net/http.
func (p *parkedPoll) block() waitEnd {
	end := waitDeadline
	err := p.raw.Read(func(fd uintptr) bool {
		switch n, err := peek(fd); {
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR):
			return false // not readable: wait
		case err != nil || n == 0:
			end = waitGone
		default:
			end = waitData
		}
		return true
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return waitDeadline
	case err != nil:
		return waitGone
	}
	return end
}

// end finishes a parked poll: it stops its wake-ups, gives back its slot,
// writes its answer and hands the connection back to net/http (keep), or
// closes it.
func (p *parkedPoll) end(s *Server, keep bool) {
	p.mu.Lock()
	p.over = true
	p.mu.Unlock()
	s.stopPoll(p.pl)
	pk := s.parker
	answered := p.w.status != 0
	if answered {
		if err := p.w.writeTo(p.conn, !keep); err != nil {
			keep = false
		}
	}
	if keep && answered {
		_ = p.conn.SetReadDeadline(time.Time{})
		keep = pk.back.give(p.conn)
	}
	if !keep || !answered {
		if pk.limit != nil {
			pk.limit.release(p.conn)
		}
		_ = p.conn.Close()
	}
	pk.forget(p)
}
