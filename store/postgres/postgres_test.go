package postgres_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
	"github.com/tetherhq/tether/store/storetest"
)

// The tests need a PostgreSQL server: TETHER_TEST_POSTGRES_DSN names a
// database the tests may create schemas in, for example
//
//	TETHER_TEST_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test ./store/postgres
//
// Each test works in a schema of its own, dropped when it ends.
const dsnEnv = pgtest.Env

func serverDSN(t testing.TB) string { return pgtest.DSN(t) }

// admin runs statements on the test database outside any tether schema.
func admin(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", dsnEnv, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// freshSchema creates an empty schema and returns a DSN that uses it. The
// schema is dropped when the test ends (after the stores opened on it are
// closed: cleanups run last-registered first).
func freshSchema(t testing.TB) string {
	t.Helper()
	serverDSN(t) // skips as this package's tests do
	dsn, _ := pgtest.Schema(t, "tether_test")
	return dsn
}

func openAt(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestStore(t *testing.T) {
	serverDSN(t)
	storetest.Run(t, func(t *testing.T) registry.Store { return openAt(t, freshSchema(t)) })
}

var adminCtx = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})

func newRegistry(t testing.TB, st registry.Store, keyFile string) *registry.Registry {
	t.Helper()
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(keyFile)})
	t.Cleanup(reg.Close)
	return reg
}

// TestFeedUnderConcurrentWriters runs many concurrent writers, through two
// stores (two replicas, each with several writers) and both kinds of write
// (single statements, and transactions of several statements), while a
// watcher follows the feed as the registry does: "seq > the last I saw". It
// must see every change exactly once, in seq order: no entry may get a
// position behind the watcher's. Every entry gets a position, and one
// entity's entries keep the order they were written in.
func TestFeedUnderConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("a concurrency test")
	}
	dsn := freshSchema(t)
	a, b := openAt(t, dsn), openAt(t, dsn)
	keys := filepath.Join(t.TempDir(), "tether.key")
	regs := []*registry.Registry{newRegistry(t, a, keys), newRegistry(t, b, keys)}
	const writers, rounds = 8, 25
	shared, sharedAgent := agentFor(t, regs[0], "shared")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The watcher polls as fast as it can, woken early by notifications.
	var seen []int64
	watchErr := make(chan error, 1)
	writersDone := make(chan struct{})
	go func() {
		wake := make(chan struct{}, 1)
		go a.NotifyChanges(ctx, wake)
		var cursor int64
		done := false
		for {
			changes, err := a.ChangesSince(ctx, cursor, 1000)
			if err != nil {
				watchErr <- err
				return
			}
			for _, c := range changes {
				if c.Seq <= cursor {
					watchErr <- fmt.Errorf("seq %d after %d: out of order", c.Seq, cursor)
					return
				}
				seen = append(seen, c.Seq)
				cursor = c.Seq
			}
			if len(changes) > 0 {
				continue
			}
			if done {
				watchErr <- nil
				return
			}
			select {
			case <-writersDone:
				done = true // one more pass reads what the last writes committed
			case <-wake:
			case <-time.After(time.Millisecond):
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg := regs[w%2]
			for i := range rounds {
				// A transaction: cluster, token, audit.
				c, tok, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: fmt.Sprintf("w%d-c%d", w, i), AllowedNamespaces: []string{"team-a"}}, 0)
				if err != nil {
					errs <- err
					return
				}
				// A transaction taking row locks first: registration.
				cred, err := reg.Register(adminCtx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"lease"}})
				if err != nil {
					errs <- err
					return
				}
				ag, err := reg.Authenticate(adminCtx, cred.Token.Reveal(), registry.AuthAny)
				if err != nil {
					errs <- err
					return
				}
				// Single statements: submit and ack, on this writer's cluster
				// and on the shared one (contention on job_counts' rows).
				for _, on := range []struct {
					c *registry.Cluster
					a *registry.Agent
				}{{c, ag}, {shared, sharedAgent}} {
					j, _, err := reg.SubmitJob(adminCtx, registry.JobSubmission{ClusterID: on.c.ID, Kind: registry.KindDelete,
						Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)})
					if err != nil {
						errs <- err
						return
					}
					if _, err := reg.AckJob(adminCtx, on.a, j.ID); err != nil {
						errs <- err
						return
					}
				}
				// A transaction with a heartbeat and events.
				if _, err := reg.AppendEvents(adminCtx, ag, "", []registry.Event{{Kind: registry.EventClusterHeartbeat}, {Kind: "Audit", EventKey: "k"}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	// Every change committed is in the feed once its end is read (as a
	// watch's snapshot reads it); the watcher's last pass then reads them.
	if _, _, err := b.ChangesLatest(adminCtx); err != nil {
		t.Fatal(err)
	}
	close(writersDone)
	select {
	case err := <-watchErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the watcher did not catch up within 60s")
	}

	// Every committed entry has a position, and one entity's entries are
	// positioned in the order they were written (inserted).
	conn := admin(t, dsn)
	var unpositioned, swapped int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE seq IS NULL),
			count(*) FILTER (WHERE seq < prev_seq) FROM (
			SELECT seq, lag(seq) OVER (PARTITION BY kind, entity_id ORDER BY id) AS prev_seq FROM changes) c`).Scan(&unpositioned, &swapped); err != nil {
		t.Fatal(err)
	}
	if unpositioned != 0 || swapped != 0 {
		t.Fatalf("%d feed entries without a position, %d positioned before an earlier entry of their entity", unpositioned, swapped)
	}
	// Every committed entry, exactly once, in order.
	rows, err := conn.Query(context.Background(), "SELECT seq FROM changes ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if want := writers * rounds * 8; len(all) < want {
		t.Fatalf("only %d feed entries for %d writes", len(all), want)
	}
	if !slices.Equal(seen, all) {
		missed := 0
		have := map[int64]bool{}
		for _, s := range seen {
			have[s] = true
		}
		for _, s := range all {
			if !have[s] {
				missed++
			}
		}
		t.Fatalf("the watcher saw %d entries, the feed holds %d: %d skipped", len(seen), len(all), missed)
	}
}

// agentFor creates a cluster that allows namespace team-a and registers its
// agent.
func agentFor(t testing.TB, reg *registry.Registry, name string) (*registry.Cluster, *registry.Agent) {
	t.Helper()
	c, tok, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"team-a"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := reg.Register(adminCtx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"lease"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := reg.Authenticate(adminCtx, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		t.Fatal(err)
	}
	return c, a
}

func TestNewerSchemaIsRefused(t *testing.T) {
	dsn := freshSchema(t)
	st, err := postgres.Open(adminCtx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	conn, err := pgx.Connect(adminCtx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(adminCtx)
	if _, err := conn.Exec(adminCtx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '0099_future.sql', 0)"); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var s string
		err := conn.QueryRow(adminCtx, `SELECT string_agg(version || name || applied_at, ',' ORDER BY version) FROM schema_migrations`).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		var tables int
		if err := conn.QueryRow(adminCtx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s; %d tables", s, tables)
	}
	before := snapshot()
	_, err = postgres.Open(adminCtx, dsn, postgres.Options{})
	if err == nil {
		t.Fatal("a database from a newer tether was opened")
	}
	for _, want := range []string{"schema version 99", fmt.Sprintf("knows only up to version %d", postgres.SchemaVersion()), "newer tether", "upgrade this binary", "the database was not changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "password") {
		t.Fatalf("error %q mentions a password", err)
	}
	if after := snapshot(); after != before {
		t.Fatalf("refusing the database changed it: %s -> %s", before, after)
	}
}

// TestConcurrentOpenMigratesOnce: replicas starting together on an empty
// schema all open it, and the migration is applied once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := freshSchema(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := postgres.Open(adminCtx, dsn, postgres.Options{MaxConns: 2})
			if err == nil {
				err = st.Ping(adminCtx)
				st.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := admin(t, dsn).QueryRow(adminCtx, "SELECT count(*) FROM schema_migrations").Scan(&rows); err != nil || rows != postgres.SchemaVersion() {
		t.Fatalf("schema_migrations has %d rows (err %v), want %d (one per migration, each applied once)", rows, err, postgres.SchemaVersion())
	}
}

// TestTwoReplicas: a job submitted through one store wakes a long-poll and a
// watch on a registry over another store on the same database.
func TestTwoReplicas(t *testing.T) {
	dsn := freshSchema(t)
	keys := filepath.Join(t.TempDir(), "tether.key")
	a, b := openAt(t, dsn), openAt(t, dsn)
	regA, regB := newRegistry(t, a, keys), newRegistry(t, b, keys)
	c, _, err := regA.CreateCluster(adminCtx, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"team-a"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wake, stop, err := regA.SubscribeJobs(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	watch, err := regA.Watch(adminCtx, registry.WatchParams{Kinds: []registry.EntityKind{registry.EntityJob}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range watch {
		if ev.Type == registry.WatchEndOfSnapshot {
			break
		}
	}
	other := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "replica-b"})
	start := time.Now()
	j, _, err := regB.SubmitJob(other, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindDelete,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Logf("woken %s after the submission through the other replica", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("a job submitted through another replica did not wake the long-poll within 5s")
	}
	select {
	case ev := <-watch:
		if ev.Job == nil || ev.Job.ID != j.ID || ev.Job.SubmittedBy != "admin:replica-b" {
			t.Fatalf("watch event = %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not see the other replica's job within 5s")
	}
}

// TestNotifyReconnects: when the LISTEN connection is cut, NotifyChanges
// reconnects, and other processes' writes still wake it.
func TestNotifyReconnects(t *testing.T) {
	dsn := freshSchema(t)
	a, b := openAt(t, dsn), openAt(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := make(chan struct{}, 1)
	go a.NotifyChanges(ctx, wake)
	waitPID := func(not uint32) uint32 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if pid := postgres.ListenerPID(a); pid != 0 && pid != not {
				return pid
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("NotifyChanges did not connect within 10s")
		return 0
	}
	drain := func() {
		for {
			select {
			case <-wake:
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	expectWake := func(what string) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(5 * time.Second):
			t.Fatalf("no wake-up within 5s of %s", what)
		}
	}
	pid := waitPID(0)
	drain()
	if err := b.AuditAppend(adminCtx, registry.AuditEntry{At: time.Now(), Actor: "admin:b", Action: "test.one"}); err != nil {
		t.Fatal(err)
	}
	expectWake("another store's write")

	conn := admin(t, serverDSN(t))
	if _, err := conn.Exec(adminCtx, "SELECT pg_terminate_backend($1)", int32(pid)); err != nil {
		t.Fatal(err)
	}
	waitPID(pid)
	drain()
	if err := b.AuditAppend(adminCtx, registry.AuditEntry{At: time.Now(), Actor: "admin:b", Action: "test.two"}); err != nil {
		t.Fatal(err)
	}
	expectWake("another store's write after a reconnection")
}

func TestClosedAndUnreachable(t *testing.T) {
	dsn := freshSchema(t)
	st, err := postgres.Open(adminCtx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = st.ClusterList(adminCtx, registry.ClusterListParams{})
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("after Close: %v, want unavailable", err)
	}
	err = st.AuditAppend(adminCtx, registry.AuditEntry{At: time.Now(), Actor: "x", Action: "y"})
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("write after Close: %v, want unavailable", err)
	}
	if err := st.NotifyChanges(adminCtx, make(chan struct{}, 1)); registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("NotifyChanges after Close: %v, want unavailable", err)
	}

	// Nothing listens on port 1.
	_, err = postgres.Open(adminCtx, "postgres://tether:s3cret@127.0.0.1:1/none?sslmode=disable&connect_timeout=5", postgres.Options{})
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("unreachable server: %v, want unavailable", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the password: %v", err)
	}
	_, err = postgres.Open(adminCtx, "postgres://tether:s3cret@[::1", postgres.Options{})
	if registry.ErrorCode(err) != registry.CodeInvalid || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("malformed URL: %v, want invalid without the password", err)
	}
}

// TestNoSecretsInTheDatabase issues every kind of secret, then looks for each
// one (and an HMAC key's raw bytes, as PostgreSQL prints BYTEA in hex, and
// its other encodings) in the text of every row of every table.
func TestNoSecretsInTheDatabase(t *testing.T) {
	dsn := freshSchema(t)
	st := openAt(t, dsn)
	reg := newRegistry(t, st, filepath.Join(t.TempDir(), "tether.key"))
	c, tok, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"*"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := reg.Register(adminCtx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"hmac", "lease"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := reg.Authenticate(adminCtx, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		t.Fatal(err)
	}
	next, err := reg.RotateCredential(adminCtx, a)
	if err != nil {
		t.Fatal(err)
	}
	unused, err := reg.IssueToken(adminCtx, c.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(adminCtx, registry.RegisterParams{Token: tok.Secret.Reveal()}); registry.ErrorCode(err) != registry.CodeRegistrationTokenInvalid {
		t.Fatalf("reusing a token: %v", err) // a refusal is audited: with no secret in it
	}
	var secrets []string
	for _, s := range []registry.Secret{tok.Secret, cred.Token, cred.HMACKey, next.Token, next.HMACKey, unused.Secret} {
		secrets = append(secrets, s.Reveal())
		if raw, err := base64.RawURLEncoding.DecodeString(s.Reveal()); err == nil && len(raw) == 32 {
			secrets = append(secrets, hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw))
		}
	}
	conn := admin(t, dsn)
	rows, err := conn.Query(adminCtx, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		t.Fatalf("tables %v, err %v", tables, err)
	}
	scanned := 0
	for _, table := range tables {
		rows, err := conn.Query(adminCtx, "SELECT t::TEXT FROM "+pgx.Identifier{table}.Sanitize()+" t")
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range texts {
			scanned++
			low := strings.ToLower(row)
			for _, s := range secrets {
				if strings.Contains(row, s) || strings.Contains(low, strings.ToLower(s)) {
					t.Fatalf("a row of %s holds a secret in plain text: %s", table, row)
				}
			}
		}
	}
	if scanned < 20 {
		t.Fatalf("only %d rows scanned", scanned)
	}
}

// TestConnectionsCut: when the server drops the store's connections (a
// restart, a failover), calls fail as unavailable, never as internal errors,
// and the store recovers on its own.
func TestConnectionsCut(t *testing.T) {
	dsn := freshSchema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skip("the DSN is not a URL")
	}
	app := "tether_cut_test"
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	st := openAt(t, u.String())
	reg := newRegistry(t, st, filepath.Join(t.TempDir(), "tether.key"))
	if _, _, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "prod"}, 0); err != nil {
		t.Fatal(err)
	}
	conn := admin(t, serverDSN(t))
	if _, err := conn.Exec(adminCtx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		_, errRead := st.ClusterList(adminCtx, registry.ClusterListParams{})
		_, _, errWrite := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: fmt.Sprintf("c-%d", i)}, 0)
		for _, err := range []error{errRead, errWrite} {
			if code := registry.ErrorCode(err); code != "" && code != registry.CodeUnavailable {
				t.Fatalf("after the connections were cut: %v, want unavailable", err)
			}
		}
		if errRead == nil && errWrite == nil {
			t.Logf("recovered after %d failed rounds", i)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover within 10s: %v; %v", errRead, errWrite)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStoreEdges covers store semantics the registry does not reach through
// the suite.
func TestStoreEdges(t *testing.T) {
	st := openAt(t, freshSchema(t))
	now := time.Now().UTC().Truncate(time.Millisecond)
	_, _, err := st.JobInsert(adminCtx, registry.JobInsertParams{Job: registry.Job{ID: "j-1", ClusterID: "cl-nope", Kind: registry.KindApply,
		Payload: json.RawMessage(`{}`), State: registry.JobQueued, Attempt: 1, CreatedAt: now, UpdatedAt: now},
		History: registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted}, Audit: registry.AuditEntry{At: now, Actor: "x", Action: "job.submit"}})
	if registry.ErrorCode(err) != registry.CodeNotFound {
		t.Fatalf("JobInsert for a missing cluster: %v, want not_found", err)
	}
	err = st.TokenCreate(adminCtx, registry.TokenCreateParams{Token: registry.RegistrationToken{ID: "rt-1", ClusterID: "cl-nope", Hash: []byte("h"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		Audit: registry.AuditEntry{At: now, Actor: "x", Action: "token.issue"}})
	if registry.ErrorCode(err) != registry.CodeNotFound {
		t.Fatalf("TokenCreate for a missing cluster: %v, want not_found", err)
	}
	_, err = st.EventsAppend(adminCtx, registry.EventsAppendParams{ClusterID: "cl-nope", Events: []registry.Event{{Kind: "Audit"}}, Now: now})
	if registry.ErrorCode(err) != registry.CodeNotFound {
		t.Fatalf("EventsAppend for a missing cluster: %v, want not_found", err)
	}
	if err := st.ClusterDelete(adminCtx, registry.ClusterDeleteParams{ID: "cl-nope"}); registry.ErrorCode(err) != registry.CodeNotFound {
		t.Fatalf("ClusterDelete of a missing cluster: %v, want not_found", err)
	}
	if _, err := st.ClusterSetEnabled(adminCtx, registry.ClusterSetEnabledParams{ID: "cl-nope", Now: now}); registry.ErrorCode(err) != registry.CodeNotFound {
		t.Fatalf("ClusterSetEnabled of a missing cluster: %v, want not_found", err)
	}
	if j, applied, err := st.JobUpdate(adminCtx, registry.JobUpdateParams{ID: "j-nope", Set: registry.JobSet{Now: now}}); j != nil || applied || err != nil {
		t.Fatalf("JobUpdate of a missing job = %v, %v, %v; want nil, false, nil", j, applied, err)
	}

	// Events get their ids in batch order; a key repeated within a batch is
	// stored once.
	reg := newRegistry(t, st, filepath.Join(t.TempDir(), "tether.key"))
	c, _, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "prod"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := []registry.Event{{Kind: "Audit", Message: "one", ReceivedAt: now}, {Kind: "Audit", Message: "two", EventKey: "k", ReceivedAt: now},
		{Kind: "Audit", Message: "dup", EventKey: "k", ReceivedAt: now}, {Kind: "Audit", Message: "three", ReceivedAt: now}}
	stored, err := st.EventsAppend(adminCtx, registry.EventsAppendParams{ClusterID: c.ID, Events: evs, Now: now, DedupeAfter: now.Add(-time.Minute)})
	if err != nil || stored != 3 {
		t.Fatalf("stored %d, err %v; want 3", stored, err)
	}
	list, err := st.EventList(adminCtx, registry.EventListParams{ClusterID: c.ID})
	if err != nil || len(list) != 3 {
		t.Fatalf("listed %d, err %v", len(list), err)
	}
	byID := map[int64]string{}
	for _, e := range list {
		byID[e.ID] = e.Message
	}
	for i, e := range evs {
		if want := map[int]string{0: "one", 1: "two", 3: "three"}[i]; byID[e.ID] != want || (want == "") != (e.ID == 0) {
			t.Fatalf("event %d (%q) got id %d, which holds %q", i, e.Message, e.ID, byID[e.ID])
		}
	}
	if !(evs[0].ID < evs[1].ID && evs[1].ID < evs[3].ID) {
		t.Fatalf("ids %d %d %d are not in batch order", evs[0].ID, evs[1].ID, evs[3].ID)
	}
	if _, err := reg.DeleteCluster(adminCtx, c.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ChangesPrune(adminCtx, registry.ChangesPruneParams{Before: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	// The feed: empty, then written, then pruned to nothing. Its end never
	// goes back, and a position before the pruned entries is detectable.
	base, oldest, err := st.ChangesLatest(adminCtx)
	if err != nil || oldest != base+1 {
		t.Fatalf("empty feed: latest %d oldest %d err %v; want oldest = latest+1", base, oldest, err)
	}
	for i := range 3 {
		if err := st.AuditAppend(adminCtx, registry.AuditEntry{At: now, Actor: "x", Action: fmt.Sprint("a.", i)}); err != nil {
			t.Fatal(err)
		}
	}
	latest, oldest, _ := st.ChangesLatest(adminCtx)
	if latest != base+3 || oldest != base+1 {
		t.Fatalf("after three entries: latest %d oldest %d (from %d)", latest, oldest, base)
	}
	n, err := st.ChangesPrune(adminCtx, registry.ChangesPruneParams{Before: now.Add(time.Hour), Keep: 0})
	if err != nil || n != 3 {
		t.Fatalf("pruned %d, err %v; want 3", n, err)
	}
	l2, o2, _ := st.ChangesLatest(adminCtx)
	if l2 != latest || o2 != latest+1 {
		t.Fatalf("after pruning all: latest %d oldest %d, want %d, %d", l2, o2, latest, latest+1)
	}
	if changes, err := st.ChangesSince(adminCtx, 0, 10); err != nil || len(changes) != 0 {
		t.Fatalf("ChangesSince after pruning all = %v, %v", changes, err)
	}
}
