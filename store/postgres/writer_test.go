package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// TestGroupCommit: writes that arrive while a commit is in flight commit
// together, and a write that fails inside a group fails alone: the others
// of its group still commit, each caller getting its own outcome.
func TestGroupCommit(t *testing.T) {
	dsn := freshSchema(t)
	st := openAt(t, dsn)
	reg := newRegistry(t, st, t.TempDir()+"/key")
	c, _, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "group", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := admin(t, dsn)
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
	const n = 20
	// committed counts what the subtests committed: the totals checked at
	// the end hold whichever of them -run selected.
	var committed int64
	t.Run("grouped", func(t *testing.T) {
		commits, writes, errs := insertWhileLocked(t, st, conn, c.ID, payload, n, func(int) bool { return false })
		for i, err := range errs {
			if err != nil {
				t.Errorf("insert %d: %v", i, err)
			}
		}
		t.Logf("%d writes in %d commits", writes, commits)
		committed += writes
		if writes != n || commits >= writes {
			t.Errorf("%d writes committed in %d commits: want %d writes in fewer commits", writes, commits, n)
		}
	})
	t.Run("a failure fails alone", func(t *testing.T) {
		bad := func(i int) bool { return i%5 == 4 } // a foreign-key violation inside the group
		commits, writes, errs := insertWhileLocked(t, st, conn, c.ID, payload, n, bad)
		for i, err := range errs {
			switch {
			case bad(i) && registry.ErrorCode(err) != registry.CodeNotFound:
				t.Errorf("insert %d into a cluster that does not exist: got %v, want not_found", i, err)
			case !bad(i) && err != nil:
				t.Errorf("insert %d: %v", i, err)
			}
		}
		t.Logf("%d writes in %d commits", writes, commits)
		committed += writes
		if writes != n-n/5 || commits >= writes {
			t.Errorf("%d writes committed in %d commits: want %d writes in fewer commits", writes, commits, n-n/5)
		}
	})
	if committed == 0 {
		return // -run selected neither subtest
	}
	counts, err := reg.JobCounts(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts[0].Count != committed {
		t.Errorf("job counts %+v, want %d queued", counts, committed)
	}
	jobs, err := reg.ListJobs(adminCtx, registry.JobListParams{Limit: 1000})
	if err != nil || int64(len(jobs)) != committed {
		t.Errorf("%d jobs listed (%v), want %d", len(jobs), err, committed)
	}
}

// insertWhileLocked locks the cluster's row from another session, so that
// the writers' inserts wait for it (their foreign key's check) and the n
// inserts arriving meanwhile queue behind them, then lets them go. Inserts
// for which bad is true name a cluster that does not exist.
func insertWhileLocked(t *testing.T, st *postgres.Store, conn *pgx.Conn, clusterID string, payload json.RawMessage, n int, bad func(int) bool) (commits, writes int64, errs []error) {
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM clusters WHERE id = $1 FOR UPDATE", clusterID); err != nil {
		t.Fatal(err)
	}
	commits0, writes0 := postgres.Batching(st)
	errs = make([]error, n)
	var started, wg sync.WaitGroup
	for i := range n {
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			cluster := clusterID
			if bad(i) {
				cluster = "cl-gone"
			}
			_, _, errs[i] = st.JobInsert(ctx, registry.JobInsertParams{
				Job: registry.Job{ID: fmt.Sprintf("j-%s-%d", t.Name(), i), ClusterID: cluster, Kind: registry.KindApply, Payload: payload,
					State: registry.JobQueued, Attempt: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()},
				History: registry.JobHistoryEntry{At: time.Now(), Type: registry.HistorySubmitted},
				Audit:   registry.AuditEntry{At: time.Now(), Actor: "tester", Action: registry.AuditJobSubmit},
			})
		}()
	}
	started.Wait()
	waitForWaiters(t, tx)
	time.Sleep(50 * time.Millisecond) // the rest queue behind the first
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	commits, writes = postgres.Batching(st)
	return commits - commits0, writes - writes0, errs
}

// TestPipelinedGroup: a group of pipelined writes. A write whose rows ask
// for its slow path runs by it, and its caller gets the slow path's outcome;
// a write whose rows cannot be read fails alone: its change is rolled back
// and the rest of the group commits.
func TestPipelinedGroup(t *testing.T) {
	dsn := freshSchema(t)
	st := openAt(t, dsn)
	conn := admin(t, dsn)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE pipetest (x INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	// The writers' inserts wait for this lock, and the writes arriving
	// meanwhile queue behind them.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE pipetest IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	insert := "INSERT INTO pipetest SELECT $1::INT WHERE $2::BOOLEAN RETURNING x"
	readOK := func(rows pgx.Rows, err error) error {
		if err != nil {
			return err
		}
		_, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		return err
	}
	var slowRuns atomic.Int32 // more than once when its group rolled back and ran again
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read, insertIt := readOK, true
			switch i {
			case 3: // inserts nothing, then asks for its slow path
				insertIt = false
				read = func(rows pgx.Rows, err error) error {
					if err != nil {
						return err
					}
					if xs, err := pgx.CollectRows(rows, pgx.RowTo[int32]); err != nil || len(xs) > 0 {
						return fmt.Errorf("rows %v, %v", xs, err)
					}
					return postgres.ErrSlowPath
				}
			case 6: // its rows do not read
				read = func(rows pgx.Rows, err error) error {
					if err != nil {
						return err
					}
					rows.Close()
					return errors.New("unreadable rows")
				}
			}
			errs[i] = postgres.WritePiped(ctx, st, insert, []any{i, insertIt}, read, func(ctx context.Context, exec func(string, ...any) error) error {
				slowRuns.Add(1)
				return exec("INSERT INTO pipetest VALUES ($1)", i)
			})
		}()
	}
	waitForWaiters(t, tx)
	time.Sleep(50 * time.Millisecond) // the rest queue behind the first
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if slowRuns.Load() == 0 {
		t.Error("the slow path never ran")
	}
	for i, err := range errs {
		if (i == 6) != (err != nil) {
			t.Errorf("write %d: %v", i, err)
		}
	}
	rows, _ := conn.Query(ctx, "SELECT x FROM pipetest ORDER BY x")
	xs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(xs) != "[0 1 2 3 4 5 7 8 9]" {
		t.Errorf("rows %v, want 0 to 9 but 6", xs)
	}
	if commits, writes := postgres.Batching(st); commits >= writes {
		t.Errorf("%d writes in %d commits: want groups", writes, commits)
	}
}

// waitForWaiters returns once PostgreSQL says a transaction waits for a
// lock tx holds. Only tx's: under make test other packages' tests share the
// server, and their sessions wait for locks of their own.
func waitForWaiters(t *testing.T, tx pgx.Tx) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var waiting int
		if err := tx.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_locks WHERE NOT granted AND pg_backend_pid() = ANY (pg_blocking_pids(pid))`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no write waited for the lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
