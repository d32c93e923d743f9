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
// processor makes "ready to run" exact: a goroutine just started runs only
// when the writer yields.
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

	s.queue <- req()
	ready(1)
	if got := s.collect([]*writeRequest{req()}, false); len(got) != 2 {
		t.Fatalf("a lone writer's batch took %d requests, want the 2 queued, without yielding", len(got))
	}
	<-s.queue // the ready goroutine's, which ran once the test blocked

	ready(2)
	if got := s.collect([]*writeRequest{req()}, true); len(got) != 3 {
		t.Fatalf("a concurrent batch took %d requests, want 3: its own and the 2 a ready goroutine queued", len(got))
	}

	// A full batch commits without yielding.
	for range 3 {
		s.queue <- req()
	}
	ready(1)
	if got := s.collect([]*writeRequest{req()}, true); len(got) != 4 {
		t.Fatalf("a concurrent batch took %d requests, want 4 (full)", len(got))
	}
	if got := len(s.queue); got != 0 {
		t.Fatalf("%d requests still queued", got)
	}
}
