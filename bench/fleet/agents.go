package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// agent is one simulated agent: its cluster, its bearer token and the
// source address it connects from.
type agent struct {
	cluster, bearer string
	from            net.IP
}

// counters are what the agents did, for the table.
type counters struct {
	connected     atomic.Int64 // agents with their connection open
	polling       atomic.Int64 // polls sent and not answered yet
	polls         atomic.Int64 // poll answers read
	pollErrors    atomic.Int64 // polls answered other than 200, or cut off
	jobs          atomic.Int64 // jobs delivered
	heartbeats    atomic.Int64 // heartbeats sent
	heartbeatsOK  atomic.Int64 // heartbeats answered 204
	heartbeatFail atomic.Int64 // heartbeats answered otherwise, or not at all
	reconnects    atomic.Int64
	firstErr      atomic.Value // string: the first error, for the report
}

func (c *counters) fail(format string, args ...any) {
	c.firstErr.CompareAndSwap(nil, fmt.Sprintf(format, args...))
}

// arrivals matches delivered jobs with their submission.
type arrivals struct {
	mu        sync.Mutex
	submitted map[string]time.Time // job id -> its submit's commit
	early     map[string]time.Time // delivered before the submitter recorded it
	latencies []time.Duration
	recs      []wakeRec    // the same, for splitWakeups
	refused   atomic.Int64 // submissions that found the database locked
}

func newArrivals() *arrivals {
	return &arrivals{submitted: map[string]time.Time{}, early: map[string]time.Time{}}
}

func (a *arrivals) submit(id string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if got, ok := a.early[id]; ok {
		delete(a.early, id)
		a.latencies = append(a.latencies, max(0, got.Sub(at)))
		a.recs = append(a.recs, wakeRec{id: id, commit: at, at: got})
		return
	}
	a.submitted[id] = at
}

func (a *arrivals) deliver(id string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sub, ok := a.submitted[id]; ok {
		delete(a.submitted, id)
		a.latencies = append(a.latencies, at.Sub(sub))
		a.recs = append(a.recs, wakeRec{id: id, commit: sub, at: at})
		return
	}
	a.early[id] = at
}

// pending is how many submitted jobs no poll has answered with yet.
func (a *arrivals) pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.submitted)
}

// fleetRun is the agents' side of the scenario.
type fleetRun struct {
	addr      string // the server's host:port
	wait      int    // a poll's wait, seconds
	heartbeat time.Duration
	counts    *counters
	arrivals  *arrivals
}

// run is one agent: one keep-alive connection, on which it holds a long
// poll; when the poll answers it acks and finishes the jobs it got, sends
// its ClusterHeartbeat when one is due (every fr.heartbeat), and polls
// again. An agent with a single connection behaves this way; the public
// operator's client opens a second one for its events while its poll is
// held.
func (fr *fleetRun) run(ctx context.Context, a agent) {
	// Spread the fleet's polls and heartbeats over the period, as agents
	// started at different times would.
	firstWait := 1 + rand.N(fr.wait)
	nextBeat := time.Now().Add(time.Duration(firstWait) * time.Second)
	wait := firstWait
	for ctx.Err() == nil {
		conn, err := fr.dial(ctx, a)
		if err != nil {
			if ctx.Err() == nil {
				fr.counts.fail("connect from %s: %v", a.from, err)
				fr.counts.reconnects.Add(1)
				sleep(ctx, time.Second)
			}
			continue
		}
		fr.counts.connected.Add(1)
		br := bufio.NewReaderSize(conn, 1024)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		for ctx.Err() == nil {
			jobs, err := fr.poll(conn, br, a, wait)
			wait = fr.wait
			if err != nil {
				if ctx.Err() == nil {
					fr.counts.pollErrors.Add(1)
					fr.counts.fail("poll: %v", err)
				}
				break
			}
			for _, id := range jobs {
				if err := fr.finish(conn, br, a, id); err != nil {
					if ctx.Err() == nil {
						fr.counts.fail("job %s: %v", id, err)
					}
					break
				}
			}
			if now := time.Now(); !now.Before(nextBeat) && ctx.Err() == nil {
				nextBeat = now.Add(fr.heartbeat)
				fr.counts.heartbeats.Add(1)
				if err := fr.beat(conn, br, a, now); err != nil {
					if ctx.Err() != nil {
						// Cut off by the end of the run, not refused.
						fr.counts.heartbeats.Add(-1)
						break
					}
					fr.counts.heartbeatFail.Add(1)
					fr.counts.fail("heartbeat: %v", err)
					break
				}
				fr.counts.heartbeatsOK.Add(1)
			}
		}
		stop()
		conn.Close()
		fr.counts.connected.Add(-1)
		if ctx.Err() == nil {
			fr.counts.reconnects.Add(1)
		}
	}
}

func (fr *fleetRun) dial(ctx context.Context, a agent) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: a.from}, Timeout: 30 * time.Second}
	return d.DialContext(ctx, "tcp", fr.addr)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// request writes one HTTP/1.1 request and reads its answer's status and
// body.
func (fr *fleetRun) request(conn net.Conn, br *bufio.Reader, method, path, bearer, body string) (int, []byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: application/vnd.vworkspace.agent.v1+json\r\n", method, path, fr.addr, bearer)
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/vnd.vworkspace.agent.v1+json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	} else if method == http.MethodPost {
		b.WriteString("Content-Length: 0\r\n\r\n")
	} else {
		b.WriteString("\r\n")
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, nil, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, nil, err
	}
	if resp.Close {
		return resp.StatusCode, out, fmt.Errorf("the server closed the connection after %d %s", resp.StatusCode, firstLine(out))
	}
	return resp.StatusCode, out, nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

func (fr *fleetRun) poll(conn net.Conn, br *bufio.Reader, a agent, wait int) ([]string, error) {
	fr.counts.polling.Add(1)
	status, body, err := fr.request(conn, br, http.MethodGet, fmt.Sprintf("/api/agent/jobs?cluster=%s&wait=%d", a.cluster, wait), a.bearer, "")
	if err != nil {
		fr.counts.polling.Add(-1)
		return nil, err
	}
	at := time.Now()
	fr.counts.polling.Add(-1)
	if status != http.StatusOK {
		return nil, fmt.Errorf("poll answered %d: %s", status, firstLine(body))
	}
	fr.counts.polls.Add(1)
	var out struct {
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("poll's answer: %w", err)
	}
	ids := make([]string, len(out.Jobs))
	for i, j := range out.Jobs {
		ids[i] = j.ID
		fr.arrivals.deliver(j.ID, at)
		fr.counts.jobs.Add(1)
	}
	return ids, nil
}

// finish acks a job and reports it succeeded.
func (fr *fleetRun) finish(conn net.Conn, br *bufio.Reader, a agent, id string) error {
	status, body, err := fr.request(conn, br, http.MethodPost, "/api/agent/jobs/"+id+"/ack", a.bearer, "")
	if err != nil {
		return err
	}
	if status != http.StatusNoContent {
		return fmt.Errorf("ack answered %d: %s", status, firstLine(body))
	}
	status, body, err = fr.request(conn, br, http.MethodPost, "/api/agent/jobs/"+id+"/result", a.bearer, `{"outcome":"succeeded"}`)
	if err != nil {
		return err
	}
	if status != http.StatusNoContent {
		return fmt.Errorf("result answered %d: %s", status, firstLine(body))
	}
	return nil
}

// beat sends the agent's ClusterHeartbeat.
func (fr *fleetRun) beat(conn net.Conn, br *bufio.Reader, a agent, now time.Time) error {
	body := fmt.Sprintf(`{"events":[{"kind":"ClusterHeartbeat","resourceRef":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Cluster","name":%q},"conditions":[{"type":"Ready","status":"True","reason":"AgentRunning","lastTransitionTime":null}],"timestamp":%q}]}`,
		a.cluster, now.UTC().Format(time.RFC3339Nano))
	status, out, err := fr.request(conn, br, http.MethodPost, "/api/agent/events", a.bearer, body)
	if err != nil {
		return err
	}
	if status != http.StatusNoContent {
		return fmt.Errorf("heartbeat answered %d: %s", status, firstLine(out))
	}
	return nil
}
