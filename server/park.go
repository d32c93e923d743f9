package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/url"
	"runtime"
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
// is counted. A poll over plain HTTP/1.1 is instead taken out of net/http
// (hijacked) and parked: it keeps its connection, a trimmed request, its
// subscription and a timer, and no goroutine. One goroutine per server
// waits for all parked connections at once (park_linux.go: an epoll
// instance of its own, itself waited on in the runtime's network poller)
// and reports the ones that became readable (the client left, or sent
// something); a wake-up (a callback subscription in the registry's hub), the
// poll's timer or shutdown report theirs. What a report calls for (a look,
// an answer) runs on one of a few lookers, never more than cap(slots) at
// once, so that a fleet reconnecting at once (a restart, a network blip)
// costs parked polls waiting their turn, not ten thousand requests inside
// net/http with their buffers and stacks.
//
// A poll's first look runs inside net/http when a look slot is free, so
// that a poll that finds work is answered without leaving it; when none is
// free the poll parks before it, and looks when its turn comes. An answered
// parked poll writes its answer by hand and hands the connection back to
// net/http through a listener of its own (handback), so that the agent's
// next request on it is served at once: not behind the accept loop of the
// real listener, which is what made an earlier attempt deliver jobs seconds
// late. HTTP/2, TLS, a request that asks to close its connection, and
// platforms without the readiness waiter stay held inside net/http.

// lookSlots, when above 0, is how many looks may run at once (tests);
// otherwise defaultLookSlots.
var lookSlots int

// defaultLookSlots: a look is a short store read; a few per core keep the
// cores and the store busy, more only hold memory while they queue.
func defaultLookSlots() int { return max(16, 4*runtime.GOMAXPROCS(0)) }

// parker tracks the parked polls of a Server while Serve runs.
type parker struct {
	s     *Server
	limit *connLimit // nil: connections are not capped per address
	back  *handback
	ready *readiness // nil: nothing parks (platform, or the waiter could not start)

	mu     sync.Mutex
	closed bool // shutting down: nothing parks any more
	polls  map[*parkedPoll]struct{}
	wg     sync.WaitGroup

	// slots bounds the looks that run at once: first looks inside net/http
	// and the lookers' work.
	slots   chan struct{}
	qmu     sync.Mutex
	queue   []*parkedPoll // polls with something to act on, in order
	head    int
	lookers int
}

func newParker(s *Server, limit *connLimit, back *handback) *parker {
	n := lookSlots
	if n <= 0 {
		n = defaultLookSlots()
	}
	pk := &parker{s: s, limit: limit, back: back, polls: map[*parkedPoll]struct{}{}, slots: make(chan struct{}, n)}
	if parkSupported {
		if r, err := newReadiness(); err == nil {
			pk.ready = r
		} else {
			s.log.Warn("long-polls wait inside net/http: cannot start the parked connections' waiter", "err", err)
		}
	}
	return pk
}

// stop ends the readiness waiter, once no poll is parked.
func (pk *parker) stop() {
	if pk.ready != nil {
		pk.ready.close()
	}
}

// tryLook takes a look slot if one is free; lookDone gives it back.
func (pk *parker) tryLook() bool {
	select {
	case pk.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (pk *parker) lookDone() { <-pk.slots }

// enqueue hands p to a looker, starting one if fewer than the slots run.
// Called with p.mu held.
func (pk *parker) enqueue(p *parkedPoll) {
	pk.qmu.Lock()
	defer pk.qmu.Unlock()
	pk.queue = append(pk.queue, p)
	if pk.lookers < cap(pk.slots) {
		pk.lookers++
		go pk.looker()
	}
}

// looker acts on queued polls, one at a time, each under a look slot,
// until the queue is empty.
func (pk *parker) looker() {
	for {
		pk.qmu.Lock()
		if pk.head == len(pk.queue) {
			pk.queue, pk.head = pk.queue[:0], 0
			pk.lookers--
			pk.qmu.Unlock()
			return
		}
		p := pk.queue[pk.head]
		pk.queue[pk.head] = nil
		pk.head++
		if pk.head >= 1024 && pk.head*2 >= len(pk.queue) {
			// A queue that never empties (a sustained backlog) would
			// otherwise keep every slot it ever had: move the rest down.
			n := copy(pk.queue, pk.queue[pk.head:])
			clear(pk.queue[n:])
			pk.queue, pk.head = pk.queue[:n], 0
		}
		pk.qmu.Unlock()
		pk.slots <- struct{}{}
		p.step()
		<-pk.slots
	}
}

// parkedPoll is a poll that waits outside net/http.
type parkedPoll struct {
	pk       *parker
	c        *call
	pl       *heldPoll
	deadline time.Time
	conn     net.Conn
	raw      syscall.RawConn
	fd       int // the connection's, registered with pk.ready while watched
	timer    *time.Timer
	w        parkedWriter
	// first: the poll parked before its admission and first look (all
	// slots were busy), which needs no new authentication once admitted.
	// pipelined: net/http had already read bytes of the agent's next
	// request, which a handed-back connection would lose: the poll answers
	// at once (after its first look, if still to come) and closes its
	// connection.
	first, pipelined bool
	// early: parked before admission (park_early.go); the looker admits
	// it, starts its poll and looks.
	early bool

	mu       sync.Mutex
	watched  bool // registered with pk.ready
	queued   bool // in the lookers' queue, or in a looker's hands
	woken    bool // a wake-up came and was not yet looked at
	readable bool // the connection became readable
	expired  bool // the poll's wait is over
	over     bool // answered or closed: reports leave it alone
}

// report notes what happened (set by note, with p.mu held) and hands the
// poll to a looker unless one has it already.
func (p *parkedPoll) report(note func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	note()
	if p.over || p.queued {
		return
	}
	p.queued = true
	p.pk.enqueue(p)
}

// wake is the poll's hub subscription (called with the hub's lock held)
// and how shutdown ends the wait.
func (p *parkedPoll) wake()       { p.report(func() { p.woken = true }) }
func (p *parkedPoll) expire()     { p.report(func() { p.expired = true }) }
func (p *parkedPoll) onReadable() { p.report(func() { p.readable = true }) }

// parkable reports whether a poll can wait parked: plain HTTP/1.1 that
// keeps its connection, no body, nothing answered yet, on a platform whose
// waiter runs.
func (s *Server) parkable(c *call, pl *heldPoll) bool {
	return pl.Wait > 0 && s.connParkable(c)
}

// connParkable: the request's connection can be taken out of net/http.
func (s *Server) connParkable(c *call) bool {
	pk, r := s.parker, c.r
	return pk != nil && pk.ready != nil && r.ProtoMajor == 1 && r.ProtoMinor >= 1 && !r.Close && r.TLS == nil &&
		r.ContentLength == 0 && len(r.TransferEncoding) == 0 && !c.rec.wrote
}

// firstLook runs a poll's first look, under the look slot the call took
// before its admission, if any (park_early.go).
func (s *Server) firstLook(c *call, pl *heldPoll) (answered bool, err error) {
	defer s.giveBackLookSlot(c)
	return s.lookForJobs(c, pl)
}

// giveBackLookSlot gives back the call's look slot, if it holds one.
func (s *Server) giveBackLookSlot(c *call) {
	if c.lookSlot {
		c.lookSlot = false
		s.parker.lookDone()
	}
}

// park takes a held poll whose look found nothing out of net/http, when it
// can: it reports whether the poll is parked, in which case the handler
// returns at once and the parked poll answers, logs and ends the request
// later.
func (s *Server) park(c *call, pl *heldPoll, deadline time.Time) bool {
	pk := s.parker
	if !s.parkable(c, pl) {
		return false
	}
	r := c.r
	// queued until it is set up: what reports before then is noted, and
	// acted on once it is.
	p := &parkedPoll{pk: pk, c: c, pl: pl, deadline: deadline, queued: true}
	p.w.header = c.raw.Header().Clone() // what prepare set (X-Credential-Rotate-After), usually nothing
	if len(p.w.header) == 0 {
		p.w.header = nil
	}
	conn, brw, ok := pk.take(p)
	if !ok {
		return false
	}
	pl.parked = true
	c.r = parkedRequest(r)
	ctx := registry.WithActor(context.Background(), c.agent.Actor())
	if c.span != nil {
		ctx = trace.ContextWithSpan(ctx, c.span)
	}
	c.ctx = ctx
	p.mu.Lock()
	p.conn = conn
	p.pipelined = brw.Reader.Buffered() > 0
	p.mu.Unlock()
	// The poll's subscription moves from its channel to p.wake: a wake-up
	// that came before is in the channel.
	unsub, subErr := s.reg.SubscribeJobsFunc(pl.Cluster, p.wake)
	pl.unsubscribe()
	woken := false
	select {
	case <-pl.wake:
		woken = true
	default:
	}
	pl.wake, pl.unsubscribe = nil, func() {}
	pl.Cluster = strings.Clone(pl.Cluster) // not a slice of the request's query
	if subErr != nil {
		go p.answerNow(subErr)
		return true
	}
	pl.unsubscribe = unsub
	var err error
	if !p.pipelined {
		err = p.descriptor(conn)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && !p.pipelined {
		err = pk.ready.watch(p)
		p.watched = err == nil
	}
	if err != nil {
		go p.answerNow(nil)
		return true
	}
	p.timer = time.AfterFunc(time.Until(deadline), p.expire)
	p.woken = p.woken || woken
	p.queued = false
	if p.woken || p.readable || p.expired || p.pipelined {
		p.queued = true
		pk.enqueue(p)
	}
	return true
}

// take registers p and takes its call's connection out of net/http. It
// reports false, p forgotten, when the server is shutting down or the
// connection would not hijack; the poll is then served in net/http.
func (pk *parker) take(p *parkedPoll) (net.Conn, *bufio.ReadWriter, bool) {
	pk.mu.Lock()
	if pk.closed {
		pk.mu.Unlock()
		return nil, nil, false
	}
	pk.polls[p] = struct{}{}
	pk.wg.Add(1)
	pk.mu.Unlock()
	c := p.c
	conn, brw, err := http.NewResponseController(c.raw).Hijack()
	if err != nil {
		pk.forget(p)
		pk.wg.Done()
		return nil, nil, false
	}
	// From here on the request is the parked poll's: net/http forgets the
	// connection when the handler returns.
	if pk.limit != nil {
		pk.limit.adopt(conn)
	}
	c.parked = true
	c.raw = &p.w
	c.rec.ResponseWriter = &p.w
	return conn, brw, true
}

// descriptor notes the file descriptor of p's connection (p.raw, p.fd),
// which the readiness waiter watches.
func (p *parkedPoll) descriptor(conn net.Conn) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return errNotWatchable
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	p.raw = raw
	return raw.Control(func(fd uintptr) { p.fd = int(fd) })
}

// errNotWatchable: a hijacked connection without a file descriptor.
var errNotWatchable = &net.OpError{Op: "park", Err: syscall.ENOTSOCK}

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
		p.unwatch()
		if p.conn != nil {
			_ = p.conn.Close()
		}
		p.mu.Unlock()
	}
	pk.mu.Unlock()
	<-done
	return ctx.Err()
}

// unwatch takes the connection off the readiness waiter. Called with p.mu
// held, before the connection is closed or handed back.
func (p *parkedPoll) unwatch() {
	if p.watched {
		p.pk.ready.unwatch(p)
		p.watched = false
	}
}
