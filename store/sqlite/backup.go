package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// BackupInfo describes a database file: what tether needs to know before it
// trusts or restores it.
type BackupInfo struct {
	Path          string
	Bytes         int64
	SchemaVersion int
	Clusters      int
	Jobs          int
	AuditEntries  int
}

// Backup writes a consistent copy of the live database to dst (VACUUM INTO:
// a read transaction, so the store keeps serving meanwhile), checks the
// copy's integrity and returns what it holds. dst must not exist. The copy is
// created with mode 0600.
func (s *Store) Backup(ctx context.Context, dst string) (*BackupInfo, error) {
	if _, err := os.Stat(dst); err == nil {
		return nil, registry.Errorf(registry.CodeConflict, "%s already exists; choose a new file (a backup never overwrites one)", dst)
	}
	// A connection of its own: the store's readers are read-only (which
	// VACUUM INTO refuses) and its writer must not wait on a backup. In WAL
	// mode this read transaction blocks no writer.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+s.path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		os.Remove(dst)
		return nil, s.wrap(err, "write the backup")
	}
	if err := os.Chmod(dst, 0o600); err != nil {
		return nil, err
	}
	info, err := Inspect(ctx, dst)
	if err != nil {
		os.Remove(dst)
		return nil, err
	}
	return info, nil
}

// Inspect checks a database file's integrity and reads what it holds,
// opening it read-only (it is never migrated or changed).
func Inspect(ctx context.Context, path string) (*BackupInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, registry.Errorf(registry.CodeNotFound, "no database file at %s", path)
	}
	q := url.Values{}
	q.Add("mode", "ro")
	q.Add("_pragma", "busy_timeout(5000)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil {
		return nil, registry.Errorf(registry.CodeInvalid, "%s is not a readable SQLite database: %v", path, err)
	}
	if check != "ok" {
		return nil, registry.Errorf(registry.CodeInvalid, "%s fails its integrity check: %s", path, check)
	}
	info := &BackupInfo{Path: path, Bytes: st.Size()}
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&info.SchemaVersion); err != nil {
		return nil, registry.Errorf(registry.CodeInvalid, "%s is not a tether database (it has no schema version)", path)
	}
	for _, c := range []struct {
		table string
		n     *int
	}{{"clusters", &info.Clusters}, {"jobs", &info.Jobs}, {"audit", &info.AuditEntries}} {
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+c.table).Scan(c.n); err != nil {
			return nil, registry.Errorf(registry.CodeInvalid, "%s is not a tether database: %v", path, err)
		}
	}
	return info, nil
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrationNames()) }

// Restore replaces the database at path with the backup at from, after
// checking the backup (integrity, a schema this build knows) and that no
// other process has the database open. The database it replaces is kept
// next to it as path + ".before-restore-<time>", and returned.
func Restore(ctx context.Context, from, path string) (info *BackupInfo, kept string, err error) {
	info, err = Inspect(ctx, from)
	if err != nil {
		return nil, "", err
	}
	if info.SchemaVersion > SchemaVersion() {
		return nil, "", registry.Errorf(registry.CodeInvalid,
			"the backup has schema version %d, but this tether knows only up to version %d: restore it with the tether that wrote it, or a newer one", info.SchemaVersion, SchemaVersion())
	}
	if _, err := os.Stat(path); err == nil {
		if err := ensureUnused(ctx, path); err != nil {
			return nil, "", err
		}
		kept = path + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(path, kept); err != nil {
			return nil, "", fmt.Errorf("keep the current database aside: %w", err)
		}
		for _, ext := range []string{"-wal", "-shm"} {
			_ = os.Rename(path+ext, kept+ext)
		}
	}
	tmp := path + ".restoring"
	if err := copyFile(from, tmp); err != nil {
		return nil, kept, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, kept, err
	}
	return info, kept, nil
}

// ensureUnused refuses a database another process has open: it takes the
// file's exclusive lock with no waiting, which a process that has it open
// in WAL mode prevents.
func ensureUnused(ctx context.Context, path string) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(0)")
	q.Add("_pragma", "locking_mode(EXCLUSIVE)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	_, err = db.ExecContext(ctx, "BEGIN EXCLUSIVE; COMMIT")
	if err == nil {
		_, err = db.ExecContext(ctx, "SELECT count(*) FROM schema_migrations")
	}
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "locked") || strings.Contains(msg, "busy") || strings.Contains(msg, "SQLITE_BUSY") {
			return registry.Errorf(registry.CodeConflict, "the database %s is in use by another process (tether serve, a console?); stop it before restoring", path)
		}
		return registry.Errorf(registry.CodeInvalid, "cannot check the database %s: %v", path, err)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(to), err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return errors.Join(out.Close())
}
