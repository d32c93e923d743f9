package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/benchseed"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
	"github.com/tetherhq/tether/store/storetest"
)

func openTemp(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return openTemp(t) })
}

// A second process for cross-process tests: the test binary re-executed with
// TETHER_SQLITE_CHILD set runs one action against the database and exits.
func TestMain(m *testing.M) {
	if action := os.Getenv("TETHER_SQLITE_CHILD"); action != "" {
		os.Exit(child(action, os.Getenv("TETHER_SQLITE_DB"), os.Getenv("TETHER_SQLITE_ARG")))
	}
	code := m.Run()
	benchseed.Cleanup()
	os.Exit(code)
}

func child(action, path, arg string) int {
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "child"})
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	reg := registry.New(st, registry.Config{})
	defer reg.Close()
	switch action {
	case "submit":
		_, _, err = reg.SubmitJob(ctx, registry.JobSubmission{ClusterID: arg, Kind: registry.KindDelete,
			Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)})
	case "create":
		for i := range 50 {
			if _, _, err = reg.CreateCluster(ctx, registry.ClusterSpec{Name: fmt.Sprintf("%s-%d", arg, i)}, 0); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func runChild(t *testing.T, action, path, arg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TETHER_SQLITE_CHILD="+action, "TETHER_SQLITE_DB="+path, "TETHER_SQLITE_ARG="+arg)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func newRegistry(t *testing.T, st registry.Store, dir string) *registry.Registry {
	t.Helper()
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "tether.db.key"))})
	t.Cleanup(reg.Close)
	return reg
}

var admin = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})

// TestNoSecretsInTheFile issues every kind of secret and then looks for each
// one, and for its base64 and hex forms, in the bytes of the database, its WAL
// and its shared-memory file.
func TestNoSecretsInTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.db")
	st, err := sqlite.Open(admin, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, st, dir)
	var secrets []string
	c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"*"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := reg.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"hmac", "lease"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := reg.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		t.Fatal(err)
	}
	next, err := reg.RotateCredential(admin, a)
	if err != nil {
		t.Fatal(err)
	}
	unused, err := reg.IssueToken(admin, c.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A webhook's secret, and after a rotation the previous one too.
	_, hookSecret, err := reg.CreateWebhook(admin, "hook", "https://hooks.example.com/", []string{registry.WebhookJobFinished}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, rotated, err := reg.RotateWebhookSecret(admin, "hook", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []registry.Secret{hookSecret, rotated} {
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(s.Reveal(), "whsec_"))
		secrets = append(secrets, s.Reveal(), strings.TrimPrefix(s.Reveal(), "whsec_"), string(raw))
	}
	for _, s := range []registry.Secret{tok.Secret, cred.Token, cred.HMACKey, next.Token, next.HMACKey, unused.Secret} {
		secrets = append(secrets, s.Reveal())
		if raw, err := base64.RawURLEncoding.DecodeString(s.Reveal()); err == nil && len(raw) == 32 {
			// An HMAC key: look for its raw bytes and other encodings too.
			secrets = append(secrets, string(raw), hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw))
		}
	}
	// Look at the file both with its WAL and after a checkpoint into the main file.
	scan := func(when string) {
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, s := range secrets {
				if bytes.Contains(b, []byte(s)) {
					t.Fatalf("%s: %s holds a secret in plain text", when, filepath.Base(f))
				}
			}
		}
	}
	scan("before checkpoint")
	reg.Close()
	st.Close()
	scan("after close")
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tether.db")
	st, err := sqlite.Open(admin, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '0099_future.sql', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(path)
	_, err = sqlite.Open(admin, path, sqlite.Options{})
	if err == nil {
		t.Fatal("a database from a newer tether was opened")
	}
	for _, want := range []string{"schema version 99", "newer tether", "upgrade"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("refusing the database changed it")
	}
}

func TestMissingDirectory(t *testing.T) {
	_, err := sqlite.Open(admin, filepath.Join(t.TempDir(), "nope", "tether.db"), sqlite.Options{})
	if registry.ErrorCode(err) != registry.CodeInvalid || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v", err)
	}
}

// TestOtherProcessWakesWaiters: a job submitted by another process reaches a
// subscribed long-poll here through the change feed.
func TestOtherProcessWakesWaiters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.db")
	st, err := sqlite.Open(admin, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := newRegistry(t, st, dir)
	c, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"team-a"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wake, stop, err := reg.SubscribeJobs(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	watch, err := reg.Watch(admin, registry.WatchParams{Kinds: []registry.EntityKind{registry.EntityJob}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range watch {
		if ev.Type == registry.WatchEndOfSnapshot {
			break
		}
	}
	cmd := runChild(t, "submit", path, c.ID)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("a job submitted by another process did not wake the waiter")
	}
	select {
	case ev := <-watch:
		if ev.Job == nil || ev.Job.SubmittedBy != "admin:child" {
			t.Fatalf("watch event = %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not see another process's job")
	}
}

// TestConcurrentProcessesWrite: two processes writing the same file at once
// both succeed (busy timeout, immediate transactions).
func TestConcurrentProcessesWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tether.db")
	st, err := sqlite.Open(admin, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	a, b := runChild(t, "create", path, "a"), runChild(t, "create", path, "b")
	if err := errors.Join(a.Wait(), b.Wait()); err != nil {
		t.Fatalf("children: %v", err)
	}
	st = openAt(t, path)
	list, err := st.ClusterList(admin, registry.ClusterListParams{})
	if err != nil || len(list) != 100 {
		t.Fatalf("%d clusters, err %v; want 100", len(list), err)
	}
}

func openAt(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(admin, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestGroupCommitIsolatesFailures: requests committed in one batch succeed or
// fail on their own.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	dir := t.TempDir()
	st := openAt(t, filepath.Join(dir, "tether.db"))
	reg := newRegistry(t, st, dir)
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("c-%d", i/2) // every name twice: one of each pair must fail
			_, _, errs[i] = reg.CreateCluster(admin, registry.ClusterSpec{Name: name}, 0)
		}()
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch registry.ErrorCode(err) {
		case "":
			ok++
		case registry.CodeConflict:
			conflicts++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	list, _ := st.ClusterList(admin, registry.ClusterListParams{})
	if ok != n/2 || conflicts != n/2 || len(list) != n/2 {
		t.Fatalf("ok %d conflicts %d stored %d, want %d each", ok, conflicts, len(list), n/2)
	}
	// Every stored cluster got its token and audit entries: nothing of a
	// failed request leaked into its batch.
	toks, _ := st.TokenList(admin, "")
	audit, _ := st.AuditList(admin, registry.AuditListParams{Limit: 1000})
	if len(toks) != n/2 || len(audit) != n {
		t.Fatalf("%d tokens and %d audit entries for %d clusters", len(toks), len(audit), n/2)
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.db.key")
	// Many keyrings racing to create the file agree on one key.
	var wg sync.WaitGroup
	sealed := make([][]byte, 8)
	for i := range sealed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if sealed[i], err = registry.NewKeyFile(path).Seal([]byte("key"), []byte("cr-1")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %o, want 600", info.Mode().Perm())
	}
	k := registry.NewKeyFile(path)
	for _, s := range sealed {
		if pt, err := k.Open(s, []byte("cr-1")); err != nil || string(pt) != "key" {
			t.Fatalf("open = %q, %v", pt, err)
		}
	}
	if _, err := k.Open(sealed[0], []byte("cr-2")); err == nil {
		t.Fatal("a sealed value opened for another record")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = registry.NewKeyFile(path).Seal([]byte("x"), nil)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable key file was accepted: %v", err)
	}
}

// TestRevocationReachesOtherProcesses: a registry that has the credential in
// its record cache refuses it soon after another process revokes it (the
// feed evicts the entry), and immediately when it revokes it itself.
func TestRevocationReachesOtherProcesses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.db")
	serving := newRegistry(t, openAt(t, path), dir)
	console := newRegistry(t, openAt(t, path), dir)
	c, tok, err := console.CreateCluster(admin, registry.ClusterSpec{Name: "prod"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := serving.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // warm the cache
		if _, err := serving.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := console.RevokeCredentials(admin, c.ID, "leaked"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := serving.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny)
		if registry.ErrorCode(err) == registry.CodeUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a credential revoked by another process still authenticates: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Disabling, from the other process, reaches the cached cluster too.
	tok2, _ := console.IssueToken(admin, c.ID, 0)
	cred2, err := serving.Register(admin, registry.RegisterParams{Token: tok2.Secret.Reveal()})
	if err != nil {
		t.Fatal(err)
	}
	serving.Authenticate(admin, cred2.Token.Reveal(), registry.AuthAny)
	if _, err := console.SetClusterEnabled(admin, c.ID, false, ""); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		_, err := serving.Authenticate(admin, cred2.Token.Reveal(), registry.AuthAny)
		if registry.ErrorCode(err) == registry.CodeClusterDisabled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a cluster disabled by another process still authenticates: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// failingNotifier is a store whose change notifier fails on its first start.
type failingNotifier struct {
	*sqlite.Store
	failed atomic.Bool
}

func (f *failingNotifier) NotifyChanges(ctx context.Context, ch chan<- struct{}) error {
	if f.failed.CompareAndSwap(false, true) {
		return errors.New("injected: lost the connection")
	}
	return f.Store.NotifyChanges(ctx, ch)
}

// TestNotifierFailureRecovers: when the store's notifier fails, the hub starts
// it again; wake-ups and revocations by another process still arrive.
func TestNotifierFailureRecovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.db")
	serving := newRegistry(t, &failingNotifier{Store: openAt(t, path)}, dir)
	other := newRegistry(t, openAt(t, path), dir)
	c, tok, err := other.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"team-a"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := serving.Register(admin, registry.RegisterParams{Token: tok.Secret.Reveal()})
	if err != nil {
		t.Fatal(err)
	}
	wake, stop, err := serving.SubscribeJobs(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, _, err := other.SubmitJob(admin, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindDelete,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after the notifier failed once")
	}
	serving.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny) // cache it
	if _, err := other.RevokeCredentials(admin, c.ID, "test"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for registry.ErrorCode(func() error { _, err := serving.Authenticate(admin, cred.Token.Reveal(), registry.AuthAny); return err }()) != registry.CodeUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("a revoked credential still authenticates after the notifier recovered")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
