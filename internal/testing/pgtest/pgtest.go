// Package pgtest gives a test a PostgreSQL schema of its own, on the server
// that $TETHER_TEST_POSTGRES_DSN names, so that tests of several packages
// share one database without seeing each other's tables.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that points the tests at a PostgreSQL database.
const Env = "TETHER_TEST_POSTGRES_DSN"

// DSN returns $TETHER_TEST_POSTGRES_DSN, or skips tb when it is not set.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(Env)
	if dsn == "" {
		tb.Skip(Env + " is not set: the PostgreSQL run is skipped (set it to a database the tests may create schemas in, " +
			"e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return dsn
}

var sharedExtensions sync.Once

// keepExtensionsInPublic installs pg_trgm (migration 0023) in the public
// schema, or moves it there. Otherwise the first migration to run creates
// it in its own test schema, whose DROP ... CASCADE at the test's end drops
// the extension and with it the other tests' indexes that use it, failing
// whatever migrates at that moment ("referenced operator class was
// concurrently dropped"). Errors are ignored: another test process may be
// doing the same, and where pg_trgm is not available the migration runs
// without it.
func keepExtensionsInPublic(ctx context.Context, conn *pgx.Conn) {
	var schema string
	err := conn.QueryRow(ctx, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").Scan(&schema)
	switch {
	case err == pgx.ErrNoRows:
		conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
	case err == nil && schema != "public":
		conn.Exec(ctx, "ALTER EXTENSION pg_trgm SET SCHEMA public")
	}
}

// Schema creates an empty schema named prefix_ and 12 random hex digits and
// returns a DSN whose search_path is that schema, and its name. The schema
// is dropped when tb ends, after whatever tb opened on it later is closed
// (cleanups run last-registered first). Without the variable tb is skipped.
func Schema(tb testing.TB, prefix string) (dsn, schema string) {
	tb.Helper()
	server := DSN(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		tb.Fatalf("connect to %s: %v", Env, err)
	}
	sharedExtensions.Do(func() { keepExtensionsInPublic(ctx, conn) })
	b := make([]byte, 6)
	rand.Read(b)
	schema = prefix + "_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(context.Background())
		tb.Fatalf("create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(context.Background())
	})
	if !strings.Contains(server, "://") { // key=value form
		return server + " search_path=" + schema, schema
	}
	u, err := url.Parse(server)
	if err != nil {
		tb.Fatalf("%s is not a URL: %v", Env, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema
}
