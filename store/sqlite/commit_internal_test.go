package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
)

// TestBatchFailureAfterAWrite: one request of a batch fails after it wrote;
// the batch is rerun with a savepoint per request, so the others commit, the
// refusal stays a refusal, and nothing of the failed request remains.
func TestBatchFailureAfterAWrite(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	audit := func(action string) func(*txn) error {
		return func(t *txn) error {
			_, err := t.exec("INSERT INTO audit (at, actor, action) VALUES (1, 'test', ?)", action)
			return err
		}
	}
	boom := errors.New("failed after writing")
	refused := errors.New("refused before writing")
	runs := 0
	reqs := []func(*txn) error{
		audit("first"),
		func(t *txn) error {
			runs++
			if err := audit("half-done")(t); err != nil {
				return err
			}
			return boom
		},
		func(*txn) error { return refused },
		audit("last"),
	}
	batch := make([]*writeRequest, len(reqs))
	for i, fn := range reqs {
		batch[i] = &writeRequest{ctx: context.Background(), fn: fn, done: make(chan error, 1)}
	}
	s.commit(batch) // the writer goroutine is idle: nothing else uses the connection
	want := []error{nil, boom, refused, nil}
	for i, req := range batch {
		if got := <-req.done; !errors.Is(got, want[i]) && got != want[i] {
			t.Errorf("request %d: got %v, want %v", i, got, want[i])
		}
	}
	if runs != 2 {
		t.Errorf("the failing request ran %d times, want 2 (once in the batch, once alone)", runs)
	}
	rows, err := s.query(context.Background(), "SELECT action FROM audit ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var a string
		rows.Scan(&a)
		got = append(got, a)
	}
	if len(got) != 2 || got[0] != "first" || got[1] != "last" {
		t.Fatalf("committed %v, want [first last]", got)
	}
}

// TestCollectYieldsOnlyUnderConcurrency: when writes arrive concurrently, a
// batch lets the goroutines ready to run queue theirs before it commits; a
// lone writer's batch takes what is queued and commits at once. One
// processor makes "ready to run" nearly exact: a goroutine just started runs
// when the writer yields, and otherwise only when the runtime preempts the
// test's goroutine (its thread descheduled for 10 ms on a loaded machine).
// Nearly, both ways: a yield may also pick the yielding goroutine again (the
// scheduler takes from the global queue first every 61st time). So each
// case is tried a few times: a writer that yields when it should not, or
// does not when it should, fails every try.
func TestCollectYieldsOnlyUnderConcurrency(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := &Store{opts: Options{MaxBatch: 4}, queue: make(chan *writeRequest, 4)}
	req := func() *writeRequest { return &writeRequest{ctx: context.Background()} }
	ready := func(n int) {
		go func() {
			for range n {
				s.queue <- req()
			}
		}()
	}
	// tries runs one case until it gives want, each try from an empty queue.
	tries := func(want int, try func() int) []int {
		var took []int
		for range 5 {
			n := try()
			took = append(took, n)
			if n == want {
				break
			}
		}
		return took
	}

	lone := tries(2, func() int {
		s.queue <- req()
		ready(1)
		n := len(s.collect([]*writeRequest{req()}, false))
		if n == 2 {
			<-s.queue // the ready goroutine's, which runs once the test blocks
		}
		return n
	})
	if lone[len(lone)-1] != 2 {
		t.Fatalf("a lone writer's batches took %v requests, want the 2 queued, without yielding", lone)
	}

	concurrent := tries(3, func() int {
		ready(2)
		n := len(s.collect([]*writeRequest{req()}, true))
		for range 3 - n {
			<-s.queue // what the ready goroutine queued after the batch
		}
		return n
	})
	if concurrent[len(concurrent)-1] != 3 {
		t.Fatalf("concurrent batches took %v requests, want 3: their own and the 2 a ready goroutine queued", concurrent)
	}

	// A full batch commits without yielding, and takes no more than a batch.
	full := tries(4, func() int {
		for range 3 {
			s.queue <- req()
		}
		ready(1)
		n := len(s.collect([]*writeRequest{req()}, true))
		for range 5 - n {
			<-s.queue // the rest: the ready goroutine's, and what the batch left
		}
		return n
	})
	if full[len(full)-1] != 4 {
		t.Fatalf("full batches took %v requests, want 4", full)
	}
}
