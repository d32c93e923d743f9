package server_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// heldPoll starts a long-poll and returns once the server holds it (it is
// subscribed to its cluster's wake-ups), with the channel its answer arrives on.
func heldPoll(t *testing.T, e *env, a *agent, wait int) (<-chan *response, time.Time) {
	t.Helper()
	before := e.reg.Waiting()
	ch := make(chan *response, 1)
	start := time.Now()
	go func() { ch <- a.poll(wait) }()
	eventually(t, "the long-poll to be held", func() bool { return e.reg.Waiting() > before })
	return ch, start
}

func awaitAnswer(t *testing.T, ch <-chan *response) *response {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(patience):
		t.Fatalf("no answer within %s", patience)
		return nil
	}
}

func TestLongPollWakesOnSubmitInThisProcess(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	other := e.newAgent("c2")
	ch, start := heldPoll(t, e, a, 300)
	// A job for another cluster does not answer this poll.
	e.submit(other.clusterID)
	job := e.submit(a.clusterID)
	r := awaitAnswer(t, ch)
	elapsed := time.Since(start)
	if ids := r.jobIDs(t); !slices.Equal(ids, []string{job}) {
		t.Fatalf("woken poll = %v, want [%s]", ids, job)
	}
	// Woken by the submit, not by the 300 s deadline.
	if elapsed > patience {
		t.Errorf("answer took %s", elapsed)
	}
	t.Logf("same-process wake-up answered in %s", elapsed)
}

func TestLongPollWakesOnSubmitFromAnotherProcess(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	// A second store and registry on the same file: what the CLI or the
	// console do from another process.
	st2, err := sqlite.Open(context.Background(), e.dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	reg2 := registry.New(st2, registry.Config{Clock: e.clock})
	defer reg2.Close()

	ch, start := heldPoll(t, e, a, 300)
	job := submitTo(t, reg2, a.clusterID)
	r := awaitAnswer(t, ch)
	elapsed := time.Since(start)
	if ids := r.jobIDs(t); !slices.Equal(ids, []string{job}) {
		t.Fatalf("woken poll = %v, want [%s]", ids, job)
	}
	t.Logf("cross-process wake-up answered in %s", elapsed)
}

func TestLongPollHoldsForWaitWhenEmpty(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	start := time.Now()
	r := a.poll(1)
	elapsed := time.Since(start)
	if ids := r.jobIDs(t); len(ids) != 0 {
		t.Fatalf("empty queue answered %v", ids)
	}
	if elapsed < time.Second {
		t.Errorf("wait=1 answered after %s: the server must hold the request for wait seconds", elapsed)
	}
	// wait=0 answers at once, and leaves nothing held.
	a.poll(0).jobs(t)
	if n := e.reg.Waiting(); n != 0 {
		t.Errorf("%d polls still subscribed", n)
	}
}

func TestLongPollReturnsWhenTheClusterIsDisabled(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	ch, _ := heldPoll(t, e, a, 300)
	if _, err := e.reg.SetClusterEnabled(adminCtx(), a.clusterID, false, "test"); err != nil {
		t.Fatal(err)
	}
	awaitAnswer(t, ch).wantError(t, http.StatusForbidden, "cluster_disabled")
}

func TestManyHeldPollsAreCheapAndAllWake(t *testing.T) {
	e := newEnvWith(t, withoutVisibility, func(c *server.Config) { c.MaxPollsPerCredential = -1 })
	a := e.newAgent("c1")
	const n = 200
	before := e.reg.Waiting()
	answers := make(chan *response, n)
	for range n {
		go func() { answers <- a.poll(300) }()
	}
	eventually(t, "all polls to be held", func() bool { return e.reg.Waiting() == before+n })
	job := e.submit(a.clusterID)
	for range n {
		r := awaitAnswer(t, answers)
		if ids := r.jobIDs(t); !slices.Equal(ids, []string{job}) {
			t.Fatalf("a woken poll answered %v", ids)
		}
	}
}

func TestTwoPollersSeeTheJobExactlyOneAckWins(t *testing.T) {
	e := newEnvWith(t, withoutVisibility)
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	for i := range 2 {
		if ids := a.poll(0).jobIDs(t); !slices.Equal(ids, []string{job}) {
			t.Fatalf("poller %d saw %v", i, ids)
		}
	}
	codes := concurrentAcks(t, a, job, 2)
	if codes[http.StatusNoContent] != 1 || codes[http.StatusConflict] != 1 {
		t.Errorf("two acks: %v, want one 204 and one 409", codes)
	}
	if ids := a.poll(0).jobIDs(t); len(ids) != 0 {
		t.Errorf("acked job still handed out: %v", ids)
	}
}

func TestTwentyConcurrentAcksExactlyOneWins(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "lease")
	job := e.submit(a.clusterID)
	codes := concurrentAcks(t, a, job, 20)
	if codes[http.StatusNoContent] != 1 || codes[http.StatusConflict] != 19 {
		t.Errorf("20 acks: %v, want one 204 and nineteen 409", codes)
	}
}

func concurrentAcks(t *testing.T, a *agent, job string, n int) map[int]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	startLine := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			r := a.ack(job)
			if r.status == http.StatusConflict {
				r.wantError(t, http.StatusConflict, "already_claimed")
			}
			mu.Lock()
			codes[r.status]++
			mu.Unlock()
		}()
	}
	close(startLine)
	wg.Wait()
	return codes
}

func TestGracefulShutdownAnswersHeldPollsWithAnEmptyList(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	b := e.newAgent("c2")
	chA, _ := heldPoll(t, e, a, 300)
	chB, _ := heldPoll(t, e, b, 300)
	stopped := make(chan error, 1)
	go func() { stopped <- e.stop() }()
	for _, ch := range []<-chan *response{chA, chB} {
		r := awaitAnswer(t, ch)
		if ids := r.jobIDs(t); len(ids) != 0 {
			t.Errorf("held poll answered %v at shutdown, want an empty list", ids)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve returned %v after a graceful shutdown, want nil", err)
	}
	// It no longer accepts connections.
	if conn, err := net.DialTimeout("tcp", e.url[len("http://"):], time.Second); err == nil {
		conn.Close()
		t.Error("the listener still accepts after shutdown")
	}
}

// TestVisibilityWindowHandsAJobToOnePoll: of two pollers of one cluster (two
// operator replicas), one receives a queued job; the other does not, until
// the visibility window passes without an ack. Held polls are not all woken
// with the same job either: exactly one answers.
func TestVisibilityWindowHandsAJobToOnePoll(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxPollsPerCredential = -1 }) // 20 pollers of one credential
	a := e.newAgent("c1")
	job := e.submit(a.clusterID)
	if ids := a.poll(0).jobIDs(t); !slices.Equal(ids, []string{job}) {
		t.Fatalf("first poller saw %v", ids)
	}
	if ids := a.poll(0).jobIDs(t); len(ids) != 0 {
		t.Fatalf("second poller saw %v inside the visibility window", ids)
	}
	e.clock.Advance(registry.DefaultVisibilityWindow)
	if ids := a.poll(0).jobIDs(t); !slices.Equal(ids, []string{job}) {
		t.Fatalf("after the window without an ack, a poller saw %v, want the job again", ids)
	}

	const n = 20
	before := e.reg.Waiting()
	answers := make(chan *response, n)
	for range n {
		go func() { answers <- a.poll(300) }()
	}
	eventually(t, "all polls to be held", func() bool { return e.reg.Waiting() == before+n })
	second := e.submit(a.clusterID)
	if ids := awaitAnswer(t, answers).jobIDs(t); !slices.Equal(ids, []string{second}) {
		t.Fatalf("the woken poll answered %v", ids)
	}
	eventually(t, "the other polls to be held again", func() bool { return e.reg.Waiting() == before+n-1 })
	select {
	case r := <-answers:
		t.Fatalf("a second poll answered %v with the job hidden", r.jobIDs(t))
	default:
	}
}

// Revocation is the emergency stop: a poll the revoked credential holds
// (parked, over plain HTTP/1.1) is answered 401 as soon as the revocation
// is known, not with an empty 200 at the end of its wait.
func TestLongPollEndsWhenItsCredentialIsRevoked(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1")
	ch, _ := heldPoll(t, e, a, 300)
	if _, err := e.reg.RevokeCredentials(adminCtx(), a.clusterID, "leaked"); err != nil {
		t.Fatal(err)
	}
	awaitAnswer(t, ch).wantError(t, http.StatusUnauthorized, "unauthorized")
}
