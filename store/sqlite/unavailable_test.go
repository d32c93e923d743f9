package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testfs"
	"github.com/tetherhq/tether/registry"
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
// writable again, the next write succeeds on a reopened writer, without a
// restart.
func TestReadOnlyDatabaseRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tether.db")
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
	s, err = Open(testCtx, path, Options{})
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
