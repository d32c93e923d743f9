package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/server"
)

// A poll over plain HTTP/1.1 whose look finds nothing waits parked, outside
// net/http (park.go). These tests hold the promises a held poll makes
// against parked ones, over real connections: a job is answered at once, the
// wait ends on time, a client that leaves is noticed, polls and connections
// stay capped, shutdown answers them, and the connection serves the agent's
// next request as before.

// rawPoll sends a poll on conn, as an agent's HTTP client would.
func rawPoll(t *testing.T, conn net.Conn, a *agent, wait int) {
	t.Helper()
	_, err := fmt.Fprintf(conn, "GET /api/agent/jobs?cluster=%s&wait=%d HTTP/1.1\r\nHost: tether\r\nAccept: %s\r\nAuthorization: Bearer %s\r\n\r\n",
		a.clusterID, wait, mediaV1, a.token)
	if err != nil {
		t.Fatal(err)
	}
}

// readAnswer reads one answer from conn, its body whole.
func readAnswer(t *testing.T, conn net.Conn, br *bufio.Reader) (*http.Response, []byte) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(patience))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	return resp, body
}

func answerJobIDs(t *testing.T, resp *http.Response, body []byte) []string {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("poll answered %d: %s", resp.StatusCode, body)
	}
	var ans struct{ Jobs []struct{ ID string } }
	if err := json.Unmarshal(body, &ans); err != nil || ans.Jobs == nil {
		t.Fatalf("poll answer %q: %v", body, err)
	}
	ids := []string{}
	for _, j := range ans.Jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

func waitParked(t *testing.T, e *env, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d polls to be parked", n), func() bool { return e.srv.ParkedPolls() == n })
}

// A parked poll is answered as soon as a job is queued, in the protocol's
// shape, and its connection then serves the agent's next poll, which parks
// and is woken again: round after round on one connection.
func TestParkedPollIsAnsweredAtOnceAndKeepsItsConnection(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	conn := dialConn(t, strings.TrimPrefix(e.url, "http://"))
	br := bufio.NewReader(conn)
	for round := range 20 {
		rawPoll(t, conn, a, 300)
		waitParked(t, e, 1)
		job := e.submit(a.clusterID)
		start := time.Now()
		resp, body := readAnswer(t, conn, br)
		if ids := answerJobIDs(t, resp, body); !slices.Equal(ids, []string{job}) {
			t.Fatalf("round %d: parked poll answered %v, want [%s]", round, ids, job)
		}
		if elapsed := time.Since(start); elapsed > patience/2 {
			t.Fatalf("round %d: answered %s after the submit", round, elapsed)
		}
		h := resp.Header
		if h.Get("Content-Type") != mediaV1 || h.Get("Cache-Control") != "no-store" || !strings.HasPrefix(h.Get("X-Request-Id"), "rq-") ||
			h.Get("Date") == "" || resp.Close {
			t.Fatalf("round %d: answer headers %v (close %v)", round, h, resp.Close)
		}
		a.ack(job).wantNoContent(t)
	}
	// The connection is net/http's again: a poll that does not wait is
	// answered on it at once.
	rawPoll(t, conn, a, 0)
	resp, body := readAnswer(t, conn, br)
	if ids := answerJobIDs(t, resp, body); len(ids) != 0 {
		t.Fatalf("wait=0 answered %v", ids)
	}
	if n := e.reg.Waiting(); n != 0 {
		t.Errorf("%d polls still subscribed", n)
	}
}

// A parked poll's wait ends on time with an empty list, and the agent's
// HTTP client reuses the connection for its next request.
func TestParkedPollWaitEndsOnTime(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	reused := make(chan bool, 2)
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused <- i.Reused }}
	do := func(wait int) (*http.Response, []byte) {
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet,
			fmt.Sprintf("%s/api/agent/jobs?cluster=%s&wait=%d", e.url, a.clusterID, wait), nil)
		req.Header.Set("Accept", mediaV1)
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	start := time.Now()
	answered := make(chan time.Duration, 1)
	go func() {
		resp, body := do(1)
		if ids := answerJobIDs(t, resp, body); len(ids) != 0 {
			t.Errorf("empty queue answered %v", ids)
		}
		answered <- time.Since(start)
	}()
	waitParked(t, e, 1)
	select {
	case elapsed := <-answered:
		if elapsed < time.Second {
			t.Errorf("wait=1 answered after %s", elapsed)
		}
	case <-time.After(patience):
		t.Fatal("a parked poll's wait did not end")
	}
	<-reused
	do(0)
	if !<-reused {
		t.Error("the next request opened a new connection: the parked poll's was not handed back")
	}
}

// A client that closes its connection while its poll is parked is noticed:
// the poll ends, and its slot under the credential's cap is free again.
func TestParkedPollNoticesTheClientLeaving(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxPollsPerCredential = 1 })
	a := e.newAgent("c1")
	addr := strings.TrimPrefix(e.url, "http://")
	conn := dialConn(t, addr)
	rawPoll(t, conn, a, 300)
	waitParked(t, e, 1)
	wantTooManyPolls(t, a.poll(300), "this credential already holds 1 long-polls")
	conn.Close()
	eventually(t, "the parked poll to end", func() bool { return e.srv.ParkedPolls() == 0 && e.reg.Waiting() == 0 })
	second := dialConn(t, addr)
	rawPoll(t, second, a, 300)
	waitParked(t, e, 1)
}

// A client that sends its next request while its poll is parked
// (pipelining) gets the poll answered at once, empty, then its request.
func TestParkedPollAnswersWhenTheClientSendsMore(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	conn := dialConn(t, strings.TrimPrefix(e.url, "http://"))
	br := bufio.NewReader(conn)
	rawPoll(t, conn, a, 300)
	waitParked(t, e, 1)
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: tether\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, body := readAnswer(t, conn, br)
	if ids := answerJobIDs(t, resp, body); len(ids) != 0 {
		t.Fatalf("the poll answered %v", ids)
	}
	if resp, body := readAnswer(t, conn, br); resp.StatusCode != http.StatusOK {
		t.Fatalf("the pipelined request: %d %s", resp.StatusCode, body)
	}
}

// Parked polls' connections count under the per-address cap: they are
// busy, so a connection past the cap is refused, not served.
func TestParkedPollsCountUnderTheConnectionCap(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxConnsPerAddress = 2 })
	a := e.newAgent("c1")
	addr := strings.TrimPrefix(e.url, "http://")
	var conns []net.Conn
	for i := range 2 {
		conn := dialConn(t, addr)
		rawPoll(t, conn, a, 300)
		waitParked(t, e, i+1)
		conns = append(conns, conn)
	}
	if resp := getHealthz(t, dialConn(t, addr)); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third connection with two parked polls: %d, want 429", resp.StatusCode)
	}
	conns[0].Close()
	servedSoon(t, addr, "the closed parked poll's slot to come back")
}

// Shutdown answers parked polls at once with an empty list and closes their
// connections.
func TestShutdownAnswersParkedPolls(t *testing.T) {
	e := newEnv(t)
	addr := strings.TrimPrefix(e.url, "http://")
	type held struct {
		conn net.Conn
		br   *bufio.Reader
	}
	var polls []held
	for i, name := range []string{"c1", "c2"} {
		a := e.newAgent(name)
		conn := dialConn(t, addr)
		rawPoll(t, conn, a, 300)
		waitParked(t, e, i+1)
		polls = append(polls, held{conn, bufio.NewReader(conn)})
	}
	stopped := make(chan error, 1)
	go func() { stopped <- e.stop() }()
	for _, p := range polls {
		resp, body := readAnswer(t, p.conn, p.br)
		if ids := answerJobIDs(t, resp, body); len(ids) != 0 || !resp.Close {
			t.Errorf("parked poll answered %v (close %v) at shutdown, want an empty list and the connection closed", ids, resp.Close)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve returned %v", err)
	}
}

// No job waits for a later poll: agents poll in a loop on their
// connections while jobs are queued at random moments (some while a poll is
// parked, some while it is being answered or parks again), and every job is
// delivered to its cluster's agent, once, within moments, never after a
// wait ran out.
func TestParkedPollsLoseNoWakeUp(t *testing.T) {
	e := newEnv(t)
	const agents, jobs = 40, 300
	type arrival struct {
		id string
		at time.Time
	}
	arrived := make(chan arrival, jobs)
	var as []*agent
	for i := range agents {
		as = append(as, e.newAgent(fmt.Sprintf("c%02d", i)))
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/agent/jobs?cluster=%s&wait=300", e.url, a.clusterID), nil)
				req.Header.Set("Accept", mediaV1)
				req.Header.Set("Authorization", "Bearer "+a.token)
				resp, err := e.client.Do(req)
				if err != nil {
					return // the test is over
				}
				var ans struct{ Jobs []struct{ ID string } }
				err = json.NewDecoder(resp.Body).Decode(&ans)
				resp.Body.Close()
				now := time.Now()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Errorf("poll answered %d (%v)", resp.StatusCode, err)
					return
				}
				for _, j := range ans.Jobs {
					arrived <- arrival{j.ID, now}
					ack, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/api/agent/jobs/"+j.ID+"/ack", nil)
					ack.Header.Set("Accept", mediaV1)
					ack.Header.Set("Authorization", "Bearer "+a.token)
					if r, err := e.client.Do(ack); err == nil {
						r.Body.Close()
					}
				}
			}
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	waitParked(t, e, agents)
	submitted := map[string]time.Time{}
	var worst time.Duration
	take := func(got arrival) {
		at, ok := submitted[got.id]
		if !ok {
			t.Fatalf("job %s delivered twice, or never submitted", got.id)
		}
		worst = max(worst, got.at.Sub(at))
		delete(submitted, got.id)
	}
	for range jobs {
		a := as[rand.N(len(as))]
		id := e.submit(a.clusterID)
		submitted[id] = time.Now()
		if rand.N(4) == 0 { // now and then, wait for one: its poll parks again meanwhile
			select {
			case got := <-arrived:
				take(got)
			case <-time.After(patience):
				t.Fatalf("no job delivered within %s", patience)
			}
		}
	}
	deadline := time.After(patience)
	for len(submitted) > 0 {
		select {
		case got := <-arrived:
			take(got)
		case <-deadline:
			t.Fatalf("%d jobs not delivered within %s of their submission", len(submitted), patience)
		}
	}
	t.Logf("%d jobs to %d agents, worst delivery %s", jobs, agents, worst)
}

// A fleet reconnecting at once does not queue inside net/http: when every
// look slot is busy a poll parks before its admission (authentication
// included) and its first look, and a looker admits it and looks when its
// turn comes. A poll whose job was already queued gets it then, the others
// wait parked for theirs, and each connection serves its agent's next poll.
func TestPollsParkBeforeAdmissionWhenLooksAreBusy(t *testing.T) {
	defer server.SetLookSlots(1)()
	e := newEnv(t)
	addr := strings.TrimPrefix(e.url, "http://")
	var as []*agent
	for i := range 3 {
		as = append(as, e.newAgent(fmt.Sprintf("c%d", i)))
	}
	early := e.submit(as[0].clusterID)
	release := e.srv.HoldLookSlots()
	type held struct {
		conn net.Conn
		br   *bufio.Reader
	}
	var polls []held
	for _, a := range as {
		conn := dialConn(t, addr)
		rawPoll(t, conn, a, 300)
		polls = append(polls, held{conn, bufio.NewReader(conn)})
	}
	waitParked(t, e, 3) // the one with a job waiting too: it has not looked
	release()
	resp, body := readAnswer(t, polls[0].conn, polls[0].br)
	if ids := answerJobIDs(t, resp, body); !slices.Equal(ids, []string{early}) || resp.Close {
		t.Fatalf("the poll parked before its first look answered %v (close %v), want [%s]", ids, resp.Close, early)
	}
	waitParked(t, e, 2)
	for i, a := range as[1:] {
		job := e.submit(a.clusterID)
		p := polls[i+1]
		resp, body := readAnswer(t, p.conn, p.br)
		if ids := answerJobIDs(t, resp, body); !slices.Equal(ids, []string{job}) {
			t.Fatalf("agent %d answered %v, want [%s]", i+1, ids, job)
		}
	}
	// The connections are net/http's again, and the next polls park.
	for i, p := range polls {
		rawPoll(t, p.conn, as[i], 300)
	}
	waitParked(t, e, 3)
}

// A client that leaves while its poll waits for its first look ends the
// poll without a look: the job queued for its cluster goes to the agent's
// next poll, not to the connection that left.
func TestPollWaitingForItsFirstLookNoticesTheClientLeaving(t *testing.T) {
	defer server.SetLookSlots(1)()
	e := newEnv(t)
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	release := e.srv.HoldLookSlots()
	conn := dialConn(t, strings.TrimPrefix(e.url, "http://"))
	rawPoll(t, conn, a, 300)
	waitParked(t, e, 1)
	conn.Close()
	eventually(t, "the client leaving to be noticed", func() bool { return e.srv.ParkedPollsReadable() == 1 })
	release()
	eventually(t, "the poll to end", func() bool { return e.srv.ParkedPolls() == 0 && e.reg.Waiting() == 0 })
	if ids := a.poll(0).jobIDs(t); !slices.Equal(ids, []string{job}) {
		t.Fatalf("the next poll got %v, want [%s]", ids, job)
	}
}

// A poll that parks before its first look with the agent's next request
// already read behind it (pipelining) looks once, answers, and closes the
// connection: the request net/http had read would be lost on a connection
// handed back, and an HTTP/1.1 client sends it again on a new one.
func TestPollParkedBeforeItsFirstLookWithAPipelinedRequest(t *testing.T) {
	defer server.SetLookSlots(1)()
	e := newEnv(t)
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	release := e.srv.HoldLookSlots()
	conn := dialConn(t, strings.TrimPrefix(e.url, "http://"))
	br := bufio.NewReader(conn)
	_, err := fmt.Fprintf(conn, "GET /api/agent/jobs?cluster=%s&wait=300 HTTP/1.1\r\nHost: tether\r\nAccept: %s\r\nAuthorization: Bearer %s\r\n\r\nGET /healthz HTTP/1.1\r\nHost: tether\r\n\r\n",
		a.clusterID, mediaV1, a.token)
	if err != nil {
		t.Fatal(err)
	}
	waitParked(t, e, 1)
	release()
	resp, body := readAnswer(t, conn, br)
	if ids := answerJobIDs(t, resp, body); !slices.Equal(ids, []string{job}) || !resp.Close {
		t.Fatalf("answered %v (close %v), want [%s] and the connection closed", ids, resp.Close, job)
	}
	eventually(t, "the poll to end", func() bool { return e.srv.ParkedPolls() == 0 && e.reg.Waiting() == 0 })
}

// A poll parked before its admission is refused as it would have been in
// net/http (same status and code), and its connection serves the next
// request.
func TestPollParkedBeforeAdmissionIsRefusedAsUsual(t *testing.T) {
	defer server.SetLookSlots(1)()
	e := newEnv(t)
	a := e.newAgent("c1")
	release := e.srv.HoldLookSlots()
	conn := dialConn(t, strings.TrimPrefix(e.url, "http://"))
	br := bufio.NewReader(conn)
	forged := &agent{clusterID: a.clusterID, token: a.token + "x"}
	rawPoll(t, conn, forged, 300)
	waitParked(t, e, 1)
	release()
	resp, body := readAnswer(t, conn, br)
	var ans struct{ Error string }
	_ = json.Unmarshal(body, &ans)
	if resp.StatusCode != http.StatusUnauthorized || ans.Error != "unauthorized" || resp.Close ||
		!strings.HasPrefix(resp.Header.Get("X-Request-Id"), "rq-") {
		t.Fatalf("a forged credential parked before admission: %d %s (close %v)", resp.StatusCode, body, resp.Close)
	}
	rawPoll(t, conn, a, 0)
	if resp, body := readAnswer(t, conn, br); resp.StatusCode != http.StatusOK {
		t.Fatalf("the next poll on the connection: %d %s", resp.StatusCode, body)
	}
}

// Polls over TLS, HTTP/2 or HTTP/1.1, stay held inside net/http (a
// parked connection is a plain socket, read by hand): each waits there and
// gets its job when it is queued.
func TestPollsOverTLSWaitInsideNetHTTP(t *testing.T) {
	e := newEnv(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	tlsConfig, h2 := ts.TLS.Clone(), ts.Client()
	ts.Close()
	h1 := &http.Client{Transport: h2.Transport.(*http.Transport).Clone()}
	h1.Transport.(*http.Transport).ForceAttemptHTTP2 = false
	h1.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	h1.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"http/1.1"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(e.reg, server.Config{Logger: slog.New(slog.DiscardHandler), RateLimit: -1})
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, tls.NewListener(ln, tlsConfig)) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	for proto, client := range map[int]*http.Client{2: h2, 1: h1} {
		a := e.newAgent(fmt.Sprintf("tls-h%d", proto))
		type answer struct {
			resp *http.Response
			body []byte
		}
		answered := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("https://%s/api/agent/jobs?cluster=%s&wait=300", ln.Addr(), a.clusterID), nil)
			req.Header.Set("Accept", mediaV1)
			req.Header.Set("Authorization", "Bearer "+a.token)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("HTTP/%d poll: %v", proto, err)
				answered <- answer{}
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			answered <- answer{resp, body}
		}()
		eventually(t, fmt.Sprintf("the HTTP/%d poll to wait", proto), func() bool { return e.reg.Waiting() == 1 })
		if n := srv.ParkedPolls(); n != 0 {
			t.Fatalf("HTTP/%d over TLS: %d polls parked, want them held in net/http", proto, n)
		}
		job := e.submit(a.clusterID)
		got := <-answered
		if got.resp == nil {
			t.FailNow()
		}
		if ids := answerJobIDs(t, got.resp, got.body); !slices.Equal(ids, []string{job}) || got.resp.ProtoMajor != proto {
			t.Fatalf("HTTP/%d poll answered %v over HTTP/%d, want [%s]", proto, ids, got.resp.ProtoMajor, job)
		}
	}
}
