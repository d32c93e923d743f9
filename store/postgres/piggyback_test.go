package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// feedLock is the change feed's advisory lock ('tetherfe').
const feedLock int64 = 8387237872774833765

// openNoSweep opens a store whose sequencer never sweeps: what positions
// the feed is the writers' groups and the rounds the store asks for.
func openNoSweep(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func insertJob(ctx context.Context, st *postgres.Store, clusterID, id string) error {
	now := time.Now()
	_, _, err := st.JobInsert(ctx, registry.JobInsertParams{
		Job: registry.Job{ID: id, ClusterID: clusterID, Kind: registry.KindApply, Payload: json.RawMessage(`{}`),
			State: registry.JobQueued, Attempt: 1, CreatedAt: now, UpdatedAt: now},
		History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted},
		Audit:   registry.AuditEntry{At: now, Actor: "tester", Action: registry.AuditJobSubmit},
	})
	return err
}

// holdLock takes an advisory lock in a transaction of its own and returns
// what lets it go.
func holdLock(t *testing.T, dsn string, key int64) (release func()) {
	t.Helper()
	tx, err := admin(t, dsn).Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), "SELECT pg_advisory_xact_lock($1)", key); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// waitPositioned waits until the feed after `after` holds entity.
func waitPositioned(t *testing.T, st registry.Store, after int64, entity string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !positioned(t, st, after, entity); {
		if time.Now().After(deadline) {
			t.Fatalf("%s was not positioned within 20s", entity)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGroupPositionsItsOwnRows: a write's group positions its feed rows
// itself, before its callers are answered, when the feed lock is free: no
// round is needed.
func TestGroupPositionsItsOwnRows(t *testing.T) {
	dsn := freshSchema(t)
	st := openNoSweep(t, dsn)
	c, _ := agentFor(t, newRegistry(t, st, filepath.Join(t.TempDir(), "key")), "own")
	before, _, err := st.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	// Another test's holder of the lock (schemas share the database's
	// advisory locks) may make a group leave its rows: try a few times.
	for i := range 20 {
		id := fmt.Sprintf("j-own-%d", i)
		if err := insertJob(adminCtx, st, c.ID, id); err != nil {
			t.Fatal(err)
		}
		if positioned(t, st, before, id) {
			return
		}
	}
	t.Fatal("no write's rows were in the feed when it returned")
}

// TestGroupDoesNotWaitForTheFeedLock: while someone else holds the feed
// lock, writes still commit; their rows wait without a position, and once
// the lock is let go they are positioned and announced without a sweep.
func TestGroupDoesNotWaitForTheFeedLock(t *testing.T) {
	dsn := freshSchema(t)
	st := openNoSweep(t, dsn)
	c, _ := agentFor(t, newRegistry(t, st, filepath.Join(t.TempDir(), "key")), "held")
	before, _, err := st.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	release := holdLock(t, dsn, feedLock)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := insertJob(ctx, st, c.ID, "j-held"); err != nil {
		t.Fatalf("a write while the feed lock is held: %v", err)
	}
	if positioned(t, st, before, "j-held") {
		t.Fatal("a row was positioned while someone else held the feed lock")
	}
	release()
	waitPositioned(t, st, before, "j-held")
}

// TestDebtLeftToAStuckGroupIsPaid: a group that commits without positioning
// (the feed lock was held) leaves its rows to a group of its store that has
// not sent its last statements yet; when that group is stuck (here behind a
// row lock), a round positions them anyway, without a sweep.
func TestDebtLeftToAStuckGroupIsPaid(t *testing.T) {
	dsn := freshSchema(t)
	st := openNoSweep(t, dsn)
	reg := newRegistry(t, st, filepath.Join(t.TempDir(), "key"))
	stuck, _ := agentFor(t, reg, "stuck")
	free, _ := agentFor(t, reg, "free")
	before, _, err := st.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	// The stuck cluster's row is locked: an insert into it waits (its
	// foreign key's check) inside its group, which stays pending.
	rowTx, err := admin(t, dsn).Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rowTx.Rollback(context.Background())
	if _, err := rowTx.Exec(context.Background(), "SELECT 1 FROM clusters WHERE id = $1 FOR UPDATE", stuck.ID); err != nil {
		t.Fatal(err)
	}
	release := holdLock(t, dsn, feedLock)
	stuckDone := make(chan error, 1)
	go func() { stuckDone <- insertJob(context.Background(), st, stuck.ID, "j-stuck") }()
	waitForWaiters(t, rowTx)
	// The other writer's group commits without positioning, and leaves
	// its rows to the stuck group.
	if err := insertJob(adminCtx, st, free.ID, "j-free"); err != nil {
		t.Fatal(err)
	}
	release()
	waitPositioned(t, st, before, "j-free")
	select {
	case err := <-stuckDone:
		t.Fatalf("the stuck write ended (%v) before its row lock was let go", err)
	default:
	}
	if err := rowTx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-stuckDone; err != nil {
		t.Fatal(err)
	}
	waitPositioned(t, st, before, "j-stuck")
}

// TestGroupsAndWatchers: many groups of two replicas commit side by side,
// with cluster deletes and feed prunes (which take the feed lock and wait
// for it) among them, and neither replica sweeping: every change is
// positioned without a sweep or a read of the feed's end, and watchers of
// both replicas see every change once, at positions that follow each other
// without a gap (so none is ever given below one a watcher read).
func TestGroupsAndWatchers(t *testing.T) {
	if testing.Short() {
		t.Skip("a concurrency test")
	}
	dsn := freshSchema(t)
	a, b := openNoSweep(t, dsn), openNoSweep(t, dsn)
	keys := filepath.Join(t.TempDir(), "tether.key")
	stores := []*postgres.Store{a, b}
	regs := []*registry.Registry{newRegistry(t, a, keys), newRegistry(t, b, keys)}
	const writers, rounds = 8, 30
	type agent struct {
		c *registry.Cluster
		a *registry.Agent
	}
	agents := make([]agent, writers)
	for w := range agents {
		agents[w].c, agents[w].a = agentFor(t, regs[w%2], fmt.Sprintf("w%d", w))
	}
	start, _, err := a.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Watchers read as fast as they can, woken early by notifications,
	// until they reach end (set once the writers are done).
	type seenBy map[string]int
	var endMu sync.Mutex
	end := int64(-1)
	const watchers = 4
	seen := make([]seenBy, watchers)
	watchErr := make(chan error, watchers)
	for w := range watchers {
		seen[w] = seenBy{}
		st := stores[w%2]
		go func() {
			wake := make(chan struct{}, 1)
			go st.NotifyChanges(ctx, wake)
			cursor := start
			for {
				changes, err := st.ChangesSince(ctx, cursor, 1000)
				if err != nil {
					watchErr <- err
					return
				}
				for _, c := range changes {
					if c.Seq != cursor+1 {
						watchErr <- fmt.Errorf("watcher %d: position %d after %d", w, c.Seq, cursor)
						return
					}
					seen[w][string(c.Kind)+"/"+c.ID+"/"+string(c.Op)+"/"+string(c.JobState)]++
					cursor = c.Seq
				}
				endMu.Lock()
				done := end >= 0 && cursor >= end
				endMu.Unlock()
				if done {
					watchErr <- nil
					return
				}
				if len(changes) > 0 {
					continue
				}
				select {
				case <-wake:
				case <-time.After(5 * time.Millisecond):
				case <-ctx.Done():
					watchErr <- ctx.Err()
					return
				}
			}
		}()
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg, ag := regs[w%2], agents[w]
			for i := range rounds {
				j, _, err := reg.SubmitJob(adminCtx, registry.JobSubmission{ClusterID: ag.c.ID, Kind: registry.KindDelete,
					Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)})
				if err == nil {
					_, err = reg.AckJob(adminCtx, ag.a, j.ID)
				}
				if err == nil && i%10 == 9 {
					// A cluster's delete takes the feed lock and waits for it.
					var c *registry.Cluster
					c, _, err = reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: fmt.Sprintf("gone-%d-%d", w, i), AllowedNamespaces: []string{"team-a"}}, 0)
					if err == nil {
						_, err = reg.DeleteCluster(adminCtx, c.ID, "test")
					}
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // prunes take the feed lock too (nothing is old enough to go)
		defer wg.Done()
		for range 20 {
			if _, err := b.ChangesPrune(adminCtx, registry.ChangesPruneParams{Before: time.Now().Add(-time.Hour), Keep: 1 << 30}); err != nil {
				errs <- fmt.Errorf("prune: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Every committed change gets a position without a sweep, and without
	// anyone reading the feed's end.
	conn := admin(t, dsn)
	for deadline := time.Now().Add(20 * time.Second); ; {
		var unpositioned int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM changes WHERE seq IS NULL").Scan(&unpositioned); err != nil {
			t.Fatal(err)
		}
		if unpositioned == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d committed changes still without a position 20s after the last write", unpositioned)
		}
		time.Sleep(2 * time.Millisecond)
	}
	want := seenBy{}
	rows, err := conn.Query(context.Background(), "SELECT kind, entity_id, op, job_state FROM changes WHERE seq > $1", start)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for rows.Next() {
		var kind, id, op, state string
		if err := rows.Scan(&kind, &id, &op, &state); err != nil {
			t.Fatal(err)
		}
		want[kind+"/"+id+"/"+op+"/"+state]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(context.Background(), "SELECT last FROM feed_position").Scan(&last); err != nil {
		t.Fatal(err)
	}
	endMu.Lock()
	end = last
	endMu.Unlock()
	for range watchers {
		select {
		case err := <-watchErr:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a watcher did not reach the feed's end within 60s")
		}
	}
	for w := range watchers {
		if len(seen[w]) != len(want) {
			t.Errorf("watcher %d saw %d distinct changes, the feed holds %d", w, len(seen[w]), len(want))
		}
		for k, n := range want {
			if seen[w][k] != n {
				t.Errorf("watcher %d saw %s %d times, the feed holds it %d times", w, k, seen[w][k], n)
			}
		}
	}
	var piggybacked int64
	for _, st := range stores {
		p, kicked, rounds := postgres.Sequencing(st)
		t.Logf("groups that positioned the feed: %d; rounds for debts: %d; rounds in all: %d", p, kicked, rounds)
		piggybacked += p
	}
	if piggybacked == 0 {
		t.Error("no group positioned the feed itself")
	}
}
