package server

import "sort"

// Endpoints lists every route the server has as "METHOD PATTERN", with the
// agent API's per-job routes under /api/agent/jobs/{id}/ACTION: what the
// OpenAPI document must list, no more and no less.
func (s *Server) Endpoints() []string {
	var out []string
	add := func(rts []*route) {
		for _, rt := range rts {
			out = append(out, rt.method+" "+rt.pattern)
		}
	}
	for _, rts := range s.routes {
		add(rts)
	}
	for _, rts := range s.jobs {
		add(rts)
	}
	for _, ar := range s.admin {
		add(ar.routes)
	}
	sort.Strings(out)
	return out
}

// ErrorCodes lists every code the status table maps, with its status.
func ErrorCodes() map[string]int {
	out := map[string]int{}
	for code, status := range statusOf {
		out[string(code)] = status
	}
	return out
}

// ParkedPolls is how many long-polls wait parked, outside net/http.
func (s *Server) ParkedPolls() int {
	if s.parker == nil {
		return 0
	}
	s.parker.mu.Lock()
	defer s.parker.mu.Unlock()
	return len(s.parker.polls)
}

// SetLookSlots sets how many looks run at once in servers that start
// serving from now on (0: the default); restore puts it back.
func SetLookSlots(n int) (restore func()) {
	old := lookSlots
	lookSlots = n
	return func() { lookSlots = old }
}

// HoldLookSlots takes every look slot, as that many looks running would:
// polls park before their first look and wait their turn until release.
func (s *Server) HoldLookSlots() (release func()) {
	n := cap(s.parker.slots)
	for range n {
		s.parker.slots <- struct{}{}
	}
	return func() {
		for range n {
			<-s.parker.slots
		}
	}
}

// ParkedPollsReadable is how many parked polls have their connection
// reported readable (the client left or sent more) and not yet acted on.
func (s *Server) ParkedPollsReadable() int {
	s.parker.mu.Lock()
	defer s.parker.mu.Unlock()
	n := 0
	for p := range s.parker.polls {
		p.mu.Lock()
		if p.readable {
			n++
		}
		p.mu.Unlock()
	}
	return n
}
