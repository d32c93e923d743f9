package server

import (
	"errors"
	"syscall"
	"time"
)

// What a parked poll does about its reports, on a looker.

// step acts on what was reported until nothing is left, or the poll ends.
func (p *parkedPoll) step() {
	s := p.pk.s
	for {
		p.mu.Lock()
		readable, woken, expired := p.readable, p.woken, p.expired
		p.readable, p.woken = false, false
		if !readable && !woken && !expired && !p.pipelined && !p.early && !s.isDraining() {
			p.queued = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if p.actSafely(readable, woken, expired) {
			return
		}
	}
}

// actSafely is act, answering a panic as net/http would have (500, and the
// connection closed).
func (p *parkedPoll) actSafely(readable, woken, expired bool) (ended bool) {
	defer func() {
		if v := recover(); v != nil {
			p.recovered(v)
			ended = true
		}
	}()
	return p.act(readable, woken, expired)
}

// act does what the reports call for, and reports whether the poll ended:
// the client left or sent more, the server is shutting down, a look found
// jobs (or failed), or the wait is over.
func (p *parkedPoll) act(readable, woken, expired bool) bool {
	s, c := p.pk.s, p.c
	if readable {
		switch p.peek() {
		case waitGone:
			p.finish(false) // nobody reads an answer
			return true
		case waitData:
			if p.early && p.admit() {
				return true // refused
			}
			// Pipelined: answer now (empty), and let net/http read what came.
			_ = s.writeJobs(c, nil)
			p.finish(true)
			return true
		}
		// Not readable after all (a report for the descriptor's earlier
		// connection): wait again.
		p.mu.Lock()
		if p.watched && !p.over {
			if err := p.pk.ready.rearm(p); err != nil {
				p.mu.Unlock()
				_ = s.writeJobs(c, nil)
				p.finish(false)
				return true
			}
		}
		p.mu.Unlock()
	}
	if p.early {
		if p.admit() {
			return true // refused
		}
		woken = true // its first look
	}
	if s.isDraining() {
		_ = s.writeJobs(c, nil)
		p.finish(false)
		return true
	}
	if woken || p.pipelined {
		if !p.first {
			if err := s.reauthenticate(c); err != nil {
				s.answerError(c, err)
				p.finish(!p.pipelined)
				return true
			}
		}
		p.first = false
		answered, err := s.lookForJobs(c, p.pl)
		switch {
		case err != nil:
			s.answerError(c, err)
		case answered:
		case p.pipelined || !time.Now().Before(p.deadline):
			_ = s.writeJobs(c, nil)
		default:
			return false // nothing yet: wait on
		}
		p.finish(!p.pipelined)
		return true
	}
	if expired {
		_ = s.writeJobs(c, nil)
		p.finish(true)
		return true
	}
	return false
}

// answerNow answers a poll that was hijacked but cannot wait parked, and
// closes its connection: its subscription failed (subErr, the registry is
// closing), or the connection cannot be watched.
func (p *parkedPoll) answerNow(subErr error) {
	s := p.pk.s
	defer func() {
		if v := recover(); v != nil {
			p.recovered(v)
		}
	}()
	if subErr != nil {
		s.answerError(p.c, subErr)
	} else {
		_ = s.writeJobs(p.c, nil)
	}
	p.finish(false)
}

// recovered answers a panic (500) and ends the poll, closing its
// connection, unless it had ended already.
func (p *parkedPoll) recovered(v any) {
	p.mu.Lock()
	over := p.over
	p.mu.Unlock()
	if over {
		panic(v) // while delivering its answer: nothing sane is left to do
	}
	p.pk.s.finishCall(p.c, v, false)
	p.end(false)
}

// finish logs the request, then ends the poll (end).
func (p *parkedPoll) finish(keep bool) {
	p.pk.s.finishCall(p.c, nil, false)
	p.end(keep)
}

// end finishes a parked poll: it stops its reports, gives back its slot,
// writes its answer and hands the connection back to net/http (keep), or
// closes it. A large answer is written on a goroutine of its own: a client
// slow to read it must not hold a looker.
func (p *parkedPoll) end(keep bool) {
	p.mu.Lock()
	p.over = true
	p.unwatch()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	if p.pl != nil { // nil: parked before admission, and never admitted
		p.pk.s.stopPoll(p.pl)
	}
	if len(p.w.body) > largeAnswer {
		go p.deliver(keep)
	} else {
		p.deliver(keep)
	}
}

// largeAnswer: an answer larger than this may not fit the socket's send
// buffer at once.
const largeAnswer = 16 << 10

func (p *parkedPoll) deliver(keep bool) {
	pk := p.pk
	answered := p.w.status != 0
	if pk.s.isDraining() {
		// Shutting down: the handback no longer takes connections, so the
		// answer says that this one closes. A look that was running when
		// the drain began answers here, after act's own check.
		keep = false
	}
	if answered {
		if err := p.w.writeTo(p.conn, !keep); err != nil {
			keep = false
		}
	}
	if keep && answered {
		keep = pk.back.give(p.conn)
	}
	if !keep || !answered {
		if pk.limit != nil {
			pk.limit.release(p.conn)
		}
		_ = p.conn.Close()
	}
	pk.forget(p)
	pk.wg.Done()
}

// What made a parked poll's connection readable.
type waitEnd int

const (
	waitNothing waitEnd = iota // not readable after all
	waitGone                   // the client closed its side, or the connection failed
	waitData                   // the client sent something while its poll was held
)

// peek tells why the connection became readable, reading nothing: a byte
// that came stays for net/http.
func (p *parkedPoll) peek() waitEnd {
	end := waitGone
	err := p.raw.Control(func(fd uintptr) {
		switch n, err := peek(fd); {
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR):
			end = waitNothing
		case err != nil || n == 0:
			end = waitGone
		default:
			end = waitData
		}
	})
	if err != nil {
		return waitGone
	}
	return end
}
