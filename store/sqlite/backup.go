package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// BackupInfo describes a database file: what tether needs to know before it
// trusts or restores it.
// Its JSON is what tether backup and restore print with -o json.
type BackupInfo struct {
	Path          string `json:"path"`
	Bytes         int64  `json:"bytes"`
	SchemaVersion int    `json:"schemaVersion"`
	Clusters      int    `json:"clusters"`
	Jobs          int    `json:"jobs"`
	AuditEntries  int    `json:"auditEntries"`
}

// Backup writes a consistent copy of the live database to dst (VACUUM INTO:
// a read transaction, so the store keeps serving meanwhile), checks the
// copy's integrity and returns what it holds. dst must not exist. The copy is
// created with mode 0600.
func (s *Store) Backup(ctx context.Context, dst string) (*BackupInfo, error) {
	// The file is created here, empty and with mode 0600, rather than by
	// VACUUM INTO (which takes an empty file): VACUUM INTO would create it
	// with the umask's mode, readable by others until the chmod below, and
	// a destination that cannot be created would surface as SQLite's "cannot
	// open" of the database itself.
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil, registry.Errorf(registry.CodeConflict, "%s already exists; choose a new file (a backup never overwrites one)", dst)
	case err != nil:
		return nil, registry.Errorf(registry.CodeInvalid, "cannot create the backup file %s: %v", dst, pathCause(err))
	}
	f.Close()
	// A connection of its own: the store's readers are read-only (which
	// VACUUM INTO refuses) and its writer must not wait on a backup. In WAL
	// mode this read transaction blocks no writer.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+s.path+"?"+q.Encode())
	if err != nil {
		os.Remove(dst)
		return nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		os.Remove(dst)
		return nil, s.wrap(err, "write the backup")
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
	_, err = os.Stat(path)
	exists := err == nil
	if exists {
		if err := ensureUnused(ctx, path); err != nil {
			return nil, "", err
		}
	}
	// The copy is made beside the database before the database is moved
	// aside, so that a copy that fails (no space, no permission) leaves the
	// database where it was.
	tmp := path + ".restoring"
	if err := copyFile(from, tmp); err != nil {
		os.Remove(tmp)
		return nil, "", registry.Errorf(registry.CodeUnavailable, "cannot write the restored database beside %s: %v (the database was not changed)", path, pathCause(err))
	}
	if exists {
		kept = path + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(path, kept); err != nil {
			os.Remove(tmp)
			return nil, "", registry.Errorf(registry.CodeUnavailable, "cannot move the database %s aside: %v (the database was not changed)", path, pathCause(err))
		}
		for _, ext := range []string{"-wal", "-shm"} {
			_ = os.Rename(path+ext, kept+ext)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, kept, registry.Errorf(registry.CodeUnavailable, "cannot put the restored database in place at %s: %v (it is at %s; the database it replaces is kept as %s)", path, pathCause(err), tmp, kept)
	}
	return info, kept, nil
}

// pathCause is an *fs.PathError's or *os.LinkError's cause alone
// ("permission denied"): the messages around it name the file already.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
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
		return err
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
