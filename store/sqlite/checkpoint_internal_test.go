package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openForCheckpoints opens a store that checkpoints every `every` pages.
func openForCheckpoints(t *testing.T, every int) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tether.db")
	s, err := Open(context.Background(), path, Options{checkpointPages: every})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// probe commits one write (the readiness probe's row).
func probe(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CheckWritable(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// eventually waits for the checkpoint goroutine to have done what cond says.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: %s did not happen", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// probesInFile reads the probe row from the database file alone, as if the
// WAL were not there (immutable=1 ignores it): what checkpoints copied. A
// file no checkpoint has reached yet has no tables: it reads 0.
func probesInFile(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	err = db.QueryRow("SELECT probes FROM store_probe WHERE id = 1").Scan(&n)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCheckpointsRunBesideTheWriter: the writer's connection never
// checkpoints; the goroutine does, once enough pages were committed, and what
// it copies reaches the database file.
func TestCheckpointsRunBesideTheWriter(t *testing.T) {
	s, path := openForCheckpoints(t, 8)
	var auto int
	if err := s.write(context.Background(), func(t *txn) error {
		return t.selectRow("PRAGMA wal_autocheckpoint").Scan(&auto)
	}); err != nil {
		t.Fatal(err)
	}
	if auto != 0 {
		t.Fatalf("the writer's wal_autocheckpoint is %d, want 0: its commits would stop for checkpoints", auto)
	}
	before := probesInFile(t, path)
	for range 20 {
		probe(t, s)
	}
	eventually(t, "a checkpoint by the goroutine", func() bool { return s.ckpt.runs.Load() > 0 })
	// Each probe writes at least one page: 20 probes kicked the goroutine at
	// least twice, and its last run copied at least the first 8.
	eventually(t, "the probes reaching the database file", func() bool { return probesInFile(t, path) >= before+8 })
	if n := s.ckpt.inlineRuns.Load(); n != 0 {
		t.Errorf("the writer checkpointed %d times, want 0 (the WAL never outgrew its limit)", n)
	}
}

// TestWriterCheckpointsWhenTheWALOutgrowsItsLimit: a reader that keeps an old
// snapshot stops checkpoints from copying past it, so the WAL grows; past its
// limit the writer checkpoints between batches, and once the reader is gone
// the WAL starts over.
func TestWriterCheckpointsWhenTheWALOutgrowsItsLimit(t *testing.T) {
	const maxProbes = 100000
	// Every 64 pages, limit 512: more than the migrations write.
	s, path := openForCheckpoints(t, 64)
	probe(t, s)

	reader, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT probes FROM store_probe WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	// Bounded mostly by time (below).
	for deadline, i := time.Now().Add(20*time.Second), 0; s.ckpt.inlineRuns.Load() == 0; i++ {
		if time.Now().After(deadline) || i == maxProbes {
			t.Fatalf("after %d probes the writer never checkpointed; the WAL reads %d pages", i, s.ckpt.lastWALSize.Load())
		}
		probe(t, s)
	}
	if got := s.ckpt.lastWALSize.Load(); got < int64(s.ckpt.limit) {
		t.Errorf("the WAL read %d pages at the writer's checkpoint, want at least the limit of %d", got, s.ckpt.limit)
	}
	tx.Rollback()

	// Bounded mostly by time: a probe's commit takes microseconds, and the
	// checkpoint goroutine, which runs beside them, may run only a few times
	// in thousands of them (5,000 probes, the old bound, failed about one
	// run in six once a 30th migration was added). maxProbes only bounds the
	// WAL a failing run leaves behind.
	for deadline, i := time.Now().Add(20*time.Second), 0; s.ckpt.lastWALSize.Load() >= int64(s.ckpt.limit); i++ {
		if time.Now().After(deadline) || i == maxProbes {
			t.Fatalf("after %d probes with no reader left, the WAL still reads %d pages", i, s.ckpt.lastWALSize.Load())
		}
		probe(t, s)
	}
}

// TestWriterCheckpointsWhenTheGoroutineCannot: a checkpoint that fails for
// any reason but another checkpoint running hands the next one to the
// writer, so that the WAL stays bounded whatever broke.
func TestWriterCheckpointsWhenTheGoroutineCannot(t *testing.T) {
	s, _ := openForCheckpoints(t, 4)
	s.ckpt.db.Close() // its checkpoints now fail: "database is closed"
	for i := 0; s.ckpt.inlineRuns.Load() == 0; i++ {
		if i == 5000 {
			t.Fatal("after 5,000 probes the writer never checkpointed in place of the goroutine")
		}
		probe(t, s)
	}
	if n := s.ckpt.runs.Load(); n != 0 {
		t.Errorf("the goroutine counted %d checkpoints on a closed connection", n)
	}
}
