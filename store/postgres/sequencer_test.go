package postgres_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// lostWrite commits a feed row the way a writer does and then stops, as one
// whose connection or process died between its commit and tether_sequence:
// the row has no position yet.
func lostWrite(t *testing.T, dsn, entity string) {
	t.Helper()
	if _, err := admin(t, dsn).Exec(context.Background(),
		"SELECT tether_feed('cluster', $1, $1, 'upsert', '', 0)", entity); err != nil {
		t.Fatal(err)
	}
}

// positioned reports whether the feed after position `after` holds entity.
func positioned(t *testing.T, st registry.Store, after int64, entity string) bool {
	t.Helper()
	changes, err := st.ChangesSince(context.Background(), after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.ID == entity {
			return true
		}
	}
	return false
}

// TestFeedEndPositionsFirst: reading the feed's end (what a watch's snapshot
// does) first positions what has committed, so a change committed before
// the snapshot is at or before its position.
func TestFeedEndPositionsFirst(t *testing.T) {
	dsn := freshSchema(t)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{PollInterval: time.Hour}) // no sweep here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	before, _, err := st.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	lostWrite(t, dsn, "lost")
	if positioned(t, st, before, "lost") {
		t.Fatal("a row no one positioned is in the feed already")
	}
	latest, _, err := st.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	if latest <= before || !positioned(t, st, before, "lost") || positioned(t, st, latest, "lost") {
		t.Fatalf("feed end %d -> %d: the committed row is not at or before the new end", before, latest)
	}
}

// TestLostWriteIsAnnounced: a feed row whose writer never positioned it is
// positioned by the sweep, and listeners, here and in other replicas, are
// woken for it.
func TestLostWriteIsAnnounced(t *testing.T) {
	dsn := freshSchema(t)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	other, err := postgres.Open(context.Background(), dsn, postgres.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	before, _, err := other.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := make(chan struct{}, 1)
	go other.NotifyChanges(ctx, wake)
	waitListening(t, other)

	lostWrite(t, dsn, "lost")
	deadline := time.After(30 * time.Second)
	for !positioned(t, other, before, "lost") {
		select {
		case <-wake:
		case <-deadline:
			t.Fatal("the lost write was not announced within 30s")
		}
	}
}

// waitListening returns once st's NotifyChanges LISTENs.
func waitListening(t *testing.T, st *postgres.Store) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); postgres.ListenerPID(st) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("NotifyChanges did not LISTEN within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFeedMigration: a database written before migration 0018 (schema 17)
// keeps its feed and its counts: positions go on after the last one it
// gave, and counts add up across the change of how they are kept.
func TestFeedMigration(t *testing.T) {
	ctx := context.Background()
	dsn := freshSchema(t)
	conn := admin(t, dsn)
	migrateTo(t, conn, 17)
	// A cluster and two queued jobs, written by schema 17's triggers: feed
	// rows with positions, and counts kept in place.
	for _, q := range []string{
		`INSERT INTO clusters (id, name, organization, allowed_namespaces, allowed_catalog_entries, allowed_operation_templates,
			mode, state, lease_seconds, max_attempts, required_capabilities, version, created_at, updated_at, registered_at)
			VALUES ('cl-1', 'prod', '', '["*"]', '["*"]', '["*"]', 'pull', 'active', 60, 5, '[]', 1, 0, 0, 0)`,
		`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at) VALUES ('j-1', 'cl-1', 'apply', '{}', 'queued', 1, 0, 0)`,
		`INSERT INTO jobs (id, cluster_id, kind, payload, state, attempt, created_at, updated_at) VALUES ('j-2', 'cl-1', 'apply', '{}', 'queued', 1, 0, 0)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var last int64
	if err := conn.QueryRow(ctx, "SELECT max(seq) FROM changes").Scan(&last); err != nil {
		t.Fatal(err)
	}

	st := openAt(t, dsn)
	if latest, _, err := st.ChangesLatest(adminCtx); err != nil || latest != last {
		t.Fatalf("feed end after the upgrade: %d (%v), want %d", latest, err, last)
	}
	reg := newRegistry(t, st, t.TempDir()+"/key")
	if _, err := reg.CancelJob(adminCtx, "j-1", ""); err != nil {
		t.Fatal(err)
	}
	latest, _, err := st.ChangesLatest(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := st.ChangesSince(adminCtx, last, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 || changes[0].Seq != last+1 || latest != changes[len(changes)-1].Seq || !positioned(t, st, last, "j-1") {
		t.Fatalf("after the upgrade, a cancel's changes are %+v (feed end %d), want positions from %d", changes, latest, last+1)
	}
	counts, err := reg.JobCounts(adminCtx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[registry.JobState]int64{}
	for _, c := range counts {
		got[c.State] += c.Count
	}
	if len(got) != 2 || got[registry.JobQueued] != 1 || got[registry.JobCanceled] != 1 {
		t.Fatalf("counts after the upgrade and a cancel: %v, want 1 queued and 1 canceled", got)
	}
}

// TestReadCommittedWhateverTheDefault: the store's statements and its
// sequencer rely on READ COMMITTED; a database (or DSN) whose default is
// another level does not change the store's.
func TestReadCommittedWhateverTheDefault(t *testing.T) {
	dsn := freshSchema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skip("the DSN is not a URL")
	}
	u.RawQuery += "&default_transaction_isolation=repeatable%20read" // not Encode's "+" for the space
	st := openAt(t, u.String())
	if level, err := postgres.Isolation(st); err != nil || level != "read committed" {
		t.Fatalf("the store's connections run %q (%v), want read committed", level, err)
	}
}
