package server

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Parking before admission. A fleet that reconnects at once (serve
// restarted, a network blip) sends thousands of polls within a second, and
// with a cold credential cache each one's authentication reads the store:
// inside net/http, each would wait for the store with its connection's
// buffers, its goroutines (net/http's two and the look's) and its request,
// 25-30 KiB apiece, and the heap grows to twice the pile before the
// collector runs (the 10,000-poll benchmark saw 5,000 polls queued in
// authentication, and a 330 MiB heap for 50 MiB of parked polls). A poll
// therefore takes a look slot before its admission: with one it is
// admitted, started and looks inside net/http as any request (and parks if
// it found nothing); without one it is taken out of net/http at once, its
// request kept whole, and a looker admits it (the same checks and refusals,
// in the same order), starts it and looks when its turn comes.

// parkBeforeAdmit parks a long-poll before its admission when every look
// slot is busy, and reports whether it did; otherwise the call takes a
// look slot when the poll could park (given back after its first look, or
// by done).
func (s *Server) parkBeforeAdmit(c *call) bool {
	r := c.r
	if r.Method != http.MethodGet || r.URL.Path != agentPollPath || !s.connParkable(c) {
		return false
	}
	if p, err := parsePoll(r.URL.Query()); err != nil || p.Wait == 0 {
		return false // answered at once, or refused, in net/http
	}
	if s.parker.tryLook() {
		c.lookSlot = true
		return false
	}
	return s.parkEarly(c)
}

// agentPollPath is the long-poll's route.
const agentPollPath = "/api/agent/jobs"

// parkEarly hijacks a poll before its admission and queues it for a
// looker. It reports false when it cannot (shutting down, the connection
// would not hijack), and the poll is served in net/http.
func (s *Server) parkEarly(c *call) bool {
	pk := s.parker
	p := &parkedPoll{pk: pk, c: c, early: true, first: true, queued: true}
	conn, brw, ok := pk.take(p)
	if !ok {
		return false
	}
	// net/http cancels the request's context when the handler returns: the
	// poll runs on a context of its own.
	c.r = c.r.WithContext(context.Background())
	c.ctx = c.r.Context()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn = conn
	p.pipelined = brw.Reader.Buffered() > 0
	var err error
	if !p.pipelined {
		if err = p.descriptor(conn); err == nil {
			err = pk.ready.watch(p)
			p.watched = err == nil
		}
	}
	if err != nil {
		// Not watchable (never on Linux's TCP): admitted and answered at
		// once, its connection closed.
		p.pipelined = true
	}
	pk.enqueue(p)
	return true
}

// admit admits a poll parked before admission, on a looker: the checks
// and refusals of any request, then the poll's start (its slot under the
// caps, its subscription, its wait's timer). It reports whether the poll
// ended (refused, answered).
func (p *parkedPoll) admit() (ended bool) {
	s, c := p.pk.s, p.c
	p.early = false
	if !s.admit(c) {
		p.finish(!p.pipelined) // refused
		return true
	}
	pl, err := s.startPoll(c)
	if err != nil {
		s.answerError(c, err)
		p.finish(!p.pipelined)
		return true
	}
	pl.parked = true
	p.pl = pl
	p.deadline = time.Now().Add(pl.Wait)
	c.r = parkedRequest(c.r)
	unsub, err := s.reg.SubscribeJobsFunc(pl.Cluster, p.wake)
	pl.unsubscribe()
	pl.wake, pl.unsubscribe = nil, func() {}
	pl.Cluster = strings.Clone(pl.Cluster)
	if err != nil {
		s.answerError(c, err)
		p.finish(false)
		return true
	}
	pl.unsubscribe = unsub
	p.mu.Lock()
	p.timer = time.AfterFunc(time.Until(p.deadline), p.expire)
	p.mu.Unlock()
	return false
}
