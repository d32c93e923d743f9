package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tetherhq/tether/registry"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey serializes migrations of concurrent replicas ('tethermi'
// as a big-endian int64). The change feed's lock ('tetherfe') is taken by
// tether_sequence (see writer.go).
const migrateLockKey int64 = 8387237872774835561

func migrationNames() []string {
	names, _ := fs.Glob(migrationFiles, "migrations/*.sql")
	sort.Strings(names)
	return names
}

// migrate applies the missing migrations in one transaction, under an advisory
// lock: a replica that opens the database while another migrates it waits,
// then finds it current.
func migrate(ctx context.Context, pool *pgxpool.Pool, desc string) error {
	names := migrationNames()
	tx, err := pool.Begin(ctx)
	if err != nil {
		return openError(desc, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockKey); err != nil {
		return openError(desc, err)
	}
	// A search_path none of whose schemas exists leaves no schema to create
	// the tables in (current_schema() is NULL): tether creates its tables,
	// not the schema itself.
	var schema *string
	var searchPath string
	if err := tx.QueryRow(ctx, "SELECT current_schema(), current_setting('search_path')").Scan(&schema, &searchPath); err != nil {
		return openError(desc, err)
	}
	if schema == nil {
		return registry.Errorf(registry.CodeInvalid,
			"database %s: schema %s, named by its search_path, does not exist (tether creates its tables, not the schema): create it first with CREATE SCHEMA %s AUTHORIZATION %s, or leave search_path out to use public",
			desc, searchPath, firstSchema(searchPath), pgx.Identifier{pool.Config().ConnConfig.User}.Sanitize())
	}
	// Create the table only when it is missing: CREATE TABLE IF NOT EXISTS
	// is refused by a read-only database (a standby) even when the table
	// exists, and a replica that finds its schema current should start, say
	// it is not ready, and recover once the database takes writes.
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations')").Scan(&exists); err != nil {
		return openError(desc, err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE TABLE schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
			return openError(desc, err)
		}
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return openError(desc, err)
	}
	if current > len(names) {
		return registry.Errorf(registry.CodeInvalid,
			"database %s has schema version %d, but this tether knows only up to version %d: it was written by a newer tether; upgrade this binary (the database was not changed)",
			desc, current, len(names))
	}
	if current == len(names) {
		return nil // the deferred rollback leaves no trace
	}
	for i := current; i < len(names); i++ {
		name := names[i]
		body, err := migrationFiles.ReadFile(name)
		if err == nil {
			_, err = tx.Exec(ctx, string(body))
		}
		if err == nil {
			_, err = tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
				i+1, path.Base(name), time.Now().UnixMilli())
		}
		if err != nil {
			return &registry.Error{Code: registry.CodeInternal, Message: fmt.Sprintf("cannot apply migration %s to %s", path.Base(name), desc), Err: err}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return &registry.Error{Code: registry.CodeInternal, Message: fmt.Sprintf("cannot commit the migrations of %s", desc), Err: err}
	}
	return nil
}

// firstSchema is the first schema a search_path names, as written in it,
// other than the user's own ("$user").
func firstSchema(searchPath string) string {
	for _, name := range strings.Split(searchPath, ",") {
		if name = strings.TrimSpace(name); name != "" && name != `"$user"` && name != "$user" {
			return name
		}
	}
	return "NAME"
}
