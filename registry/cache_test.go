package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/pgtest"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/postgres"
	"github.com/tetherhq/tether/store/sqlite"
)

// eachStore runs test on SQLite and, when TETHER_TEST_POSTGRES_DSN is set,
// PostgreSQL; open connects another store to the same fresh database, as
// another process (or replica) would.
func eachStore(t *testing.T, test func(t *testing.T, open func() registry.Store)) {
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tether.db")
		test(t, func() registry.Store {
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn, _ := pgtest.Schema(t, "tether_cache")
		ctx := context.Background()
		test(t, func() registry.Store {
			st, err := postgres.Open(ctx, dsn, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
}

// clusterCountingStore counts the cluster reads submissions make.
type clusterCountingStore struct {
	registry.Store
	reads, adminReads atomic.Int64
}

func (s *clusterCountingStore) ClusterGet(ctx context.Context, id string) (*registry.Cluster, error) {
	s.reads.Add(1)
	return s.Store.ClusterGet(ctx, id)
}

func (s *clusterCountingStore) ClusterGetByName(ctx context.Context, name string) (*registry.Cluster, error) {
	s.reads.Add(1)
	return s.Store.ClusterGetByName(ctx, name)
}

// Submissions that name their cluster by name read it from the store once,
// not once each; a rename, a disable and a delete made by another process
// (another registry on the same database) still reach them, through the
// change feed.
func TestSubmitByNameUsesTheRecordCache(t *testing.T) {
	eachStore(t, submitByNameUsesTheRecordCache)
}

func submitByNameUsesTheRecordCache(t *testing.T, openStore func() registry.Store) {
	dir := t.TempDir()
	open := func() (*registry.Registry, *clusterCountingStore) {
		cs := &clusterCountingStore{Store: openStore()}
		reg := registry.New(cs, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
		t.Cleanup(func() { reg.Close() })
		return reg, cs
	}
	reg, counted := open()
	other, _ := open()
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	c, _, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"default"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`)
	submit := func(cluster string) error {
		_, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: cluster, Kind: registry.KindApply, Payload: payload})
		return err
	}
	if err := submit("prod"); err != nil { // starts the feed and fills the cache
		t.Fatal(err)
	}
	before := counted.reads.Load()
	for range 20 {
		if err := submit("prod"); err != nil {
			t.Fatal(err)
		}
	}
	if n := counted.reads.Load() - before; n > 2 {
		t.Fatalf("20 submissions by name read the cluster %d times from the store", n)
	}
	if err := submit("PROD"); err != nil {
		t.Fatalf("another spelling of the name: %v", err)
	}

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within 20s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cur, err := other.GetCluster(admin, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	spec := cur.ClusterSpec
	spec.Name = "prod-eu"
	if _, err := other.UpdateCluster(admin, c.ID, cur.Version, spec); err != nil {
		t.Fatal(err)
	}
	eventually("the old name to be refused after a rename elsewhere", func() bool {
		return registry.ErrorCode(submit("prod")) == registry.CodeNotFound
	})
	if err := submit("prod-eu"); err != nil {
		t.Fatalf("the new name: %v", err)
	}
	if _, err := other.SetClusterEnabled(admin, "prod-eu", false, "test"); err != nil {
		t.Fatal(err)
	}
	eventually("a submission to a cluster disabled elsewhere to be refused", func() bool {
		return registry.ErrorCode(submit("prod-eu")) == registry.CodeForbidden
	})
	if _, err := other.DeleteCluster(admin, "prod-eu", "test"); err != nil {
		t.Fatal(err)
	}
	eventually("a submission to a cluster deleted elsewhere to be refused", func() bool {
		return registry.ErrorCode(submit("prod-eu")) == registry.CodeNotFound
	})
}

func (s *clusterCountingStore) AdminTokenGet(ctx context.Context, id string) (*registry.AdminToken, error) {
	s.adminReads.Add(1)
	return s.Store.AdminTokenGet(ctx, id)
}

// Admin API requests authenticate their token from the record cache, and
// the cache never outlives the token: one revoked in this process is
// refused at once, one revoked by another process as soon as the feed
// brings the revoke, an expired one when its time comes.
func TestAdminTokensThroughTheRecordCache(t *testing.T) {
	eachStore(t, adminTokensThroughTheRecordCache)
}

func adminTokensThroughTheRecordCache(t *testing.T, openStore func() registry.Store) {
	dir := t.TempDir()
	clock := clocktest.New()
	open := func() (*registry.Registry, *clusterCountingStore) {
		cs := &clusterCountingStore{Store: openStore()}
		reg := registry.New(cs, registry.Config{Clock: clock, Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
		t.Cleanup(func() { reg.Close() })
		return reg, cs
	}
	reg, counted := open()
	other, _ := open()
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	issue := func(name string, ttl time.Duration) string {
		t.Helper()
		tok, err := reg.CreateAdminToken(admin, name, registry.RoleOperator, "", ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok.Secret.Reveal()
	}
	auth := func(bearer string) error {
		_, err := reg.AuthenticateAdmin(context.Background(), bearer)
		return err
	}
	if _, err := reg.LatestSeq(admin); err != nil { // the feed is followed from the first cached read
		t.Fatal(err)
	}
	here, there, short := issue("here", 0), issue("there", 0), issue("short", time.Hour)
	for _, b := range []string{here, there, short} {
		if err := auth(b); err != nil {
			t.Fatal(err)
		}
	}
	before := counted.adminReads.Load()
	for range 20 {
		if err := auth(here); err != nil {
			t.Fatal(err)
		}
	}
	if n := counted.adminReads.Load() - before; n > 1 {
		t.Fatalf("20 requests read their admin token %d times from the store", n)
	}

	if _, err := reg.RevokeAdminToken(admin, "here", "test"); err != nil {
		t.Fatal(err)
	}
	if err := auth(here); registry.ErrorCode(err) != registry.CodeUnauthorized {
		t.Fatalf("a token revoked in this process, at once: %v", err)
	}
	if err := auth(there); err != nil { // cached again
		t.Fatal(err)
	}
	if _, err := other.RevokeAdminToken(admin, "there", "test"); err != nil {
		t.Fatal(err)
	}
	// Well within the cache's own lifetime (2 minutes): the feed evicted it.
	deadline := time.Now().Add(5 * time.Second)
	for registry.ErrorCode(auth(there)) != registry.CodeUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("a token revoked by another process was still accepted 5s later")
		}
		time.Sleep(10 * time.Millisecond)
	}
	clock.Advance(2 * time.Hour)
	if err := auth(short); registry.ErrorCode(err) != registry.CodeUnauthorized {
		t.Fatalf("an expired token: %v", err)
	}
}
