package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testfs"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
)

var testCtx = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})

// wantUnavailable checks err is CodeUnavailable saying what (says) and not
// where (the database's path).
func wantUnavailable(t *testing.T, doing string, err error, path, says string) {
	t.Helper()
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("%s: %v (code %q), want unavailable", doing, err, registry.ErrorCode(err))
	}
	msg := registry.ErrorMessage(err)
	if !strings.Contains(msg, says) {
		t.Fatalf("%s: message %q does not say %q", doing, msg, says)
	}
	if strings.Contains(msg, path) || strings.Contains(msg, filepath.Base(path)) {
		t.Fatalf("%s: message %q names the database's file", doing, msg)
	}
}

// TestReadOnlyDatabaseRecovers: a database file that is read-only when the
// store opens it (SQLite then opens it read-only, for good) fails writes and
// the write probe as unavailable while reads go on; once the file is
// writable again, writes succeed on reopened connections, without a
// restart, within ReopenInterval.
func TestReadOnlyDatabaseRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tether.db")
	clock := clocktest.New()
	s, err := Open(testCtx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(s, registry.Config{})
	if _, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "before"}, 0); err != nil {
		t.Fatal(err)
	}
	reg.Close()
	s.Close()

	undo := testfs.ReadOnly(t, path)
	s, err = Open(testCtx, path, Options{Clock: clock})
	if err != nil {
		t.Fatalf("Open of a read-only database with a current schema: %v", err)
	}
	defer s.Close()
	reg = registry.New(s, registry.Config{})
	defer reg.Close()

	wantUnavailable(t, "CheckWritable", s.CheckWritable(testCtx), path, "read-only")
	for i := range 3 { // every write fails alike: none is left poisoned in another way
		_, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "during"}, 0)
		wantUnavailable(t, fmt.Sprintf("write #%d", i+1), err, path, "read-only")
	}
	if _, err := reg.GetCluster(testCtx, "before"); err != nil {
		t.Fatalf("a read of a read-only database: %v", err)
	}

	undo()
	testfs.OwnerWritable(t, path+"-wal", path+"-shm")
	clock.Advance(ReopenInterval)
	if _, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "after"}, 0); err != nil {
		t.Fatalf("the first write once the file is writable again: %v", err)
	}
	if n := s.reopened.Load(); n < 1 {
		t.Fatalf("the writer was reopened %d times, want at least 1", n)
	}
	if err := s.CheckWritable(testCtx); err != nil {
		t.Fatalf("CheckWritable after recovery: %v", err)
	}
	if _, err := reg.GetCluster(testCtx, "after"); err != nil {
		t.Fatalf("reading what was written after recovery: %v", err)
	}
}

// TestDiskFullIsUnavailable: SQLITE_FULL (a database at its maximum size
// stands in for a full disk) is unavailable, not an internal error, and
// writes succeed again once there is room, on the same connection.
func TestDiskFullIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tether.db")
	s, err := Open(testCtx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pragma := func(q string) {
		t.Helper()
		if err := s.write(testCtx, func(tx *txn) error { _, err := tx.exec(q); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var pages int
	if err := s.readers.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	pragma("PRAGMA max_page_count = " + strconv.Itoa(pages+2))
	big := strings.Repeat("x", 64<<10)
	var full error
	for i := 0; i < 50 && full == nil; i++ {
		full = s.AuditAppend(testCtx, registry.AuditEntry{At: time.Now(), Actor: "admin:t", Action: "fill", Reason: big})
	}
	wantUnavailable(t, "a write with the database full", full, path, "full")
	pragma("PRAGMA max_page_count = 1073741823")
	if err := s.AuditAppend(testCtx, registry.AuditEntry{At: time.Now(), Actor: "admin:t", Action: "fill", Reason: big}); err != nil {
		t.Fatalf("a write once there is room again: %v", err)
	}
}

// TestCallsAfterCloseReturn: a write or probe made after Close is answered as
// closed, never left waiting. (The queue is buffered and select picks at
// random, so some of them reach the queue after the writer has stopped.)
func TestCallsAfterCloseReturn(t *testing.T) {
	s, err := Open(testCtx, filepath.Join(t.TempDir(), "tether.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			if err := s.CheckWritable(context.Background()); registry.ErrorCode(err) != registry.CodeUnavailable {
				t.Errorf("CheckWritable #%d after Close: %v, want unavailable", i, err)
				return
			}
			if err := s.AuditAppend(context.Background(), registry.AuditEntry{At: time.Now(), Actor: "admin:t", Action: "late"}); registry.ErrorCode(err) != registry.CodeUnavailable {
				t.Errorf("write #%d after Close: %v, want unavailable", i, err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a call after Close is still waiting after a minute")
	}
}

// readOnlyWAL is issue 28's item 9 up to the point of the fix: tether serve
// restarted while the database, its -wal and -shm files and their directory
// are read-only. The first run leaves the -wal and -shm files behind (the
// directory does not let it remove them); the second opens them read-only,
// SQLite's one -shm mapping for the whole process with them. The store
// reads, and a change listener holds a connection, as a serving tether's
// do. undo makes everything writable again.
//
// The files are made read-only once the first run has closed them: for root
// that is the immutable attribute, which also makes a write to a mapping of
// the -shm file made before it fault (SIGBUS), where a file's mode only
// matters when it is opened.
func readOnlyWAL(t *testing.T) (s *Store, reg *registry.Registry, clock *clocktest.Clock, changes chan struct{}, undo func()) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tether.db")
	first, err := Open(testCtx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg = registry.New(first, registry.Config{})
	if _, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "before"}, 0); err != nil {
		t.Fatal(err)
	}
	undos := []func(){testfs.ReadOnly(t, dir)}
	reg.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		undos = append(undos, testfs.ReadOnly(t, p)) // fails the test if p is gone
	}

	clock = clocktest.New()
	if s, err = Open(testCtx, path, Options{Clock: clock}); err != nil {
		t.Fatalf("Open of a read-only database with its -wal and -shm: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	reg = registry.New(s, registry.Config{})
	t.Cleanup(reg.Close)
	ctx, cancel := context.WithCancel(testCtx)
	changes = make(chan struct{}, 1)
	listening := make(chan error, 1)
	go func() { listening <- s.NotifyChanges(ctx, changes) }()
	t.Cleanup(func() {
		cancel()
		if err := <-listening; err != nil {
			t.Errorf("NotifyChanges: %v", err)
		}
	})
	<-changes // signalled once when live: it holds its connection
	if _, err := reg.GetCluster(testCtx, "before"); err != nil {
		t.Fatalf("a read of the read-only database: %v", err)
	}
	return s, reg, clock, changes, func() {
		for _, u := range undos {
			u()
		}
	}
}

// TestReadOnlyWALRecovers is issue 28's item 9: a store that opened its
// database while the -shm file was read-only failed every write until a
// restart, however long after the permissions were restored, because SQLite
// keeps one -shm mapping per process while any connection to the file is
// open. Now writes fail as unavailable, reopen the store's connections at
// most once per ReopenInterval while they do, and succeed once the files are
// writable and ReopenInterval has passed; reads and change notification go
// on across the reopen.
func TestReadOnlyWALRecovers(t *testing.T) {
	s, reg, clock, changes, undo := readOnlyWAL(t)
	path := s.Path()

	for i := range 3 {
		_, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "during"}, 0)
		wantUnavailable(t, fmt.Sprintf("write #%d", i+1), err, path, "read-only")
	}
	if n := s.reopened.Load(); n != 1 {
		t.Fatalf("3 failed writes within ReopenInterval reopened the store %d times, want 1", n)
	}
	if _, err := reg.GetCluster(testCtx, "before"); err != nil {
		t.Fatalf("a read after the store reopened on the read-only database: %v", err)
	}

	undo()
	clock.Advance(ReopenInterval)
	if _, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "after"}, 0); err != nil {
		t.Fatalf("a write ReopenInterval after the files are writable again: %v", err)
	}
	select {
	case <-changes:
	default:
		t.Fatal("NotifyChanges did not signal the write made after the reopen")
	}
	if _, err := reg.GetCluster(testCtx, "after"); err != nil {
		t.Fatalf("reading what was written after recovery: %v", err)
	}
	if err := s.CheckWritable(testCtx); err != nil {
		t.Fatalf("CheckWritable after recovery: %v", err)
	}
}

// TestReadOnlyWALProbeRecoversAtOnce: the readiness probe reopens the store
// whenever it finds it broken, without waiting for ReopenInterval, so that
// the first readiness check after the fix sees it.
func TestReadOnlyWALProbeRecoversAtOnce(t *testing.T) {
	s, reg, _, _, undo := readOnlyWAL(t)
	for i := range 2 {
		wantUnavailable(t, fmt.Sprintf("CheckWritable #%d", i+1), s.CheckWritable(testCtx), s.Path(), "read-only")
	}
	undo()
	if err := s.CheckWritable(testCtx); err != nil {
		t.Fatalf("CheckWritable once the files are writable again: %v", err)
	}
	if _, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "after"}, 0); err != nil {
		t.Fatalf("a write after the probe recovered: %v", err)
	}
}

// TestReopenUnderConcurrentReads: reads that run while the store reopens its
// connections (a read-only database, then a writable one) wait for the
// reopen or finish on the connection they hold; none fails. Run with -race.
func TestReopenUnderConcurrentReads(t *testing.T) {
	s, reg, clock, _, undo := readOnlyWAL(t)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				if _, err := reg.GetCluster(testCtx, "before"); err != nil {
					errs <- err
					return
				}
				if _, err := s.clusterIDs(testCtx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 5 { // reopens while read-only
		clock.Advance(ReopenInterval)
		_, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "during"}, 0)
		wantUnavailable(t, fmt.Sprintf("write #%d", i+1), err, s.Path(), "read-only")
	}
	undo()
	clock.Advance(ReopenInterval)
	if _, _, err := reg.CreateCluster(testCtx, registry.ClusterSpec{Name: "after"}, 0); err != nil {
		t.Errorf("a write once the files are writable again: %v", err)
	}
	close(stop)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("a read while the store reopened: %v", err)
		}
	}
	if n := s.reopened.Load(); n != 5 { // the first write found it broken, the 4 others reopened it, and the last
		t.Fatalf("the store reopened %d times, want 5", n)
	}
}
