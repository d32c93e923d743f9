package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"

	"github.com/tetherhq/tether/registry"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func migrationNames() []string {
	names, _ := fs.Glob(migrationFiles, "migrations/*.sql")
	sort.Strings(names)
	return names
}

func migrate(ctx context.Context, db *sql.DB, path string) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return openError(path, err)
	}
	names := migrationNames()
	for {
		tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one process migrates at a time
		if err != nil {
			return openError(path, err)
		}
		var current int
		if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
			tx.Rollback()
			return openError(path, err)
		}
		if current > len(names) {
			tx.Rollback()
			return registry.Errorf(registry.CodeInvalid,
				"database %s has schema version %d, but this tether knows only up to version %d: it was written by a newer tether; upgrade this binary (the database was not changed)",
				path, current, len(names))
		}
		if current == len(names) {
			return tx.Rollback()
		}
		name := names[current]
		body, err := migrationFiles.ReadFile(name)
		if err == nil {
			_, err = tx.ExecContext(ctx, string(body))
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				current+1, filepath.Base(name), time.Now().UnixMilli())
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			tx.Rollback()
			return &registry.Error{Code: registry.CodeInternal, Message: fmt.Sprintf("cannot apply migration %s to %s", filepath.Base(name), path), Err: err}
		}
	}
}
