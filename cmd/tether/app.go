package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
	"github.com/tetherhq/tether/store/sqlite"
)

// app is an open registry over the --db database.
type app struct {
	store appStore
	reg   *registry.Registry
}

// appStore is the store under an app, either backend. Path names the
// database for logs (a PostgreSQL URL without its password).
type appStore interface {
	registry.Store
	Path() string
}

// isPostgresURL reports whether --db names a PostgreSQL database rather than
// a SQLite file.
func isPostgresURL(db string) bool {
	db = strings.ToLower(db)
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// openApp opens the database (creating it and its schema if needed) and the
// registry over it: PostgreSQL for a postgres:// or postgresql:// URL, else
// the SQLite file at that path. HMAC keys are sealed with the key in
// --key-file, created on first use; for SQLite it defaults to a file next to
// the database. PostgreSQL has no such place: its replicas must share one key
// file, so without --key-file anything that needs a key fails saying so.
func openApp(ctx context.Context, g *globals, cfg registry.Config) (*app, error) {
	return openAppWith(ctx, g, cfg, sqlite.Options{})
}

// openAppWith is openApp with a SQLite database opened with sopts.
func openAppWith(ctx context.Context, g *globals, cfg registry.Config, sopts sqlite.Options) (*app, error) {
	var st appStore
	keyFile := g.keyFile
	if err := checkDBNamed(g); err != nil {
		return nil, err
	}
	if isPostgresURL(g.db) {
		pst, err := postgres.Open(ctx, g.db, postgres.Options{})
		if err != nil {
			return nil, err
		}
		st = pst
	} else {
		_, err := os.Stat(g.db)
		created := errors.Is(err, fs.ErrNotExist)
		if created && !createsDatabase(g.command) {
			// A mistyped --db must not leave an empty database behind.
			return nil, failf("there is no database at %s; point --db (or $TETHER_DB) at yours, or create one with tether cluster create, tether serve or tether console", g.db)
		}
		sst, err := sqlite.Open(ctx, g.db, sopts)
		if err != nil {
			var re *registry.Error
			if errors.As(err, &re) && re.Code == registry.CodeInternal {
				if why := sqlitePathProblem(g.db); why != nil {
					return nil, why
				}
			}
			return nil, err
		}
		st = sst
		if created {
			// The registry holds credentials' hashes, sealed keys and the
			// audit trail: readable by its owner only.
			for _, f := range []string{g.db, g.db + "-wal", g.db + "-shm"} {
				_ = os.Chmod(f, 0o600)
			}
		}
		if keyFile == "" {
			keyFile = registry.KeyFilePath(g.db)
		}
	}
	if cfg.Keyring == nil {
		switch {
		case keyFile == "":
			cfg.Keyring = noKeyFile{}
		case keyFileMissing(keyFile):
			// A key file is created on first use only for a registry that
			// has sealed nothing yet: a new key next to secrets sealed with
			// another one would silently orphan them. The registry is asked
			// then, not here: the look reads every job's payload flag, a
			// second over a million jobs, which a command that seals nothing
			// (the console's start) must not wait for.
			cfg.Keyring = registry.NewKeyFileUnlessSealed(keyFile, func() (bool, error) {
				return st.SealedSecretsExist(context.WithoutCancel(ctx))
			})
		default:
			cfg.Keyring = registry.NewKeyFile(keyFile)
		}
	}
	return &app{store: st, reg: registry.New(st, cfg)}, nil
}

// checkDBNamed refuses an empty --db (--db "$DB" with DB unset) where the
// database is used: SQLite would open a private temporary database for an
// empty name, and all done in it be lost. Over --server or a saved context
// --db is not used, and may be empty.
func checkDBNamed(g *globals) error {
	if strings.TrimSpace(g.db) == "" {
		return usagef("--db is empty: give the SQLite database file or a postgres:// URL (default %s)", defaultDB)
	}
	return nil
}

// noKeyFile is the keyring of a PostgreSQL database opened without
// --key-file.
type noKeyFile struct{}

var errNoKeyFile = registry.Errorf(registry.CodeUnavailable,
	"HMAC keys with a PostgreSQL database need --key-file (or TETHER_KEY_FILE): every replica must use the same key file, so that each can read the keys the others sealed")

func (noKeyFile) Seal(_, _ []byte) ([]byte, error) { return nil, errNoKeyFile }
func (noKeyFile) Open(_, _ []byte) ([]byte, error) { return nil, errNoKeyFile }

func (a *app) Close() {
	a.reg.Close()
	a.store.Close()
}

// adminContext attributes the command's actions to the admin running it.
func adminContext(ctx context.Context) context.Context {
	return registry.WithActor(ctx, adminActor())
}

// createsDatabase reports whether a command may create the SQLite database
// when none exists: the ones that set up a registry or serve it. Every other
// command reads or changes an existing one.
func createsDatabase(command string) bool {
	for _, c := range []string{"serve", "console", "demo", "cluster create", "admin-token create", "webhook create"} {
		if strings.HasSuffix(command, " "+c) {
			return true
		}
	}
	return command == ""
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// sqlitePathProblem says what keeps the SQLite database at path from being
// opened, in words an operator can act on, or nil when the file and its
// directory look usable (the store's own error then stands). It runs only
// after the store failed to open: SQLite's own words for these cases
// ("unable to open database file", "attempt to write a readonly database")
// say neither which file nor why.
func sqlitePathProblem(path string) error {
	dir := filepath.Dir(path)
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return failf("%s is a directory, not a database file: point --db (or $TETHER_DB) at the file, e.g. %s", path, filepath.Join(path, defaultDB))
	case err == nil:
		// tether writes to the database even to read it (the schema, the
		// write-ahead log), so read-only access is not enough.
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return failf("cannot open the database %s for reading and writing (%v); every command needs both: run tether as the user that owns the file, or give that user access", path, pathErrorCause(err))
		}
		header := make([]byte, len(sqliteMagic))
		n, _ := io.ReadFull(f, header)
		f.Close()
		if n > 0 && string(header[:n]) != sqliteMagic {
			return failf("%s is not a SQLite database: point --db (or $TETHER_DB) at tether's database file", path)
		}
		for _, companion := range []string{path + "-wal", path + "-shm"} {
			if f, err := os.OpenFile(companion, os.O_RDWR, 0); err == nil {
				f.Close()
			} else if !errors.Is(err, fs.ErrNotExist) {
				return failf("cannot open %s, which SQLite keeps beside the database (%v): run tether as the user that owns the database, or give that user access", companion, pathErrorCause(err))
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return failf("cannot use the database %s: %v", path, pathErrorCause(err))
	}
	// SQLite creates the database and its -wal and -shm files in dir.
	probe, err := os.CreateTemp(dir, ".tether-write-check-*")
	if err != nil {
		return failf("cannot create files in %s (%v), where SQLite keeps the database's -wal and -shm files: run tether as the user that owns the directory, or give that user access", dir, pathErrorCause(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// pathErrorCause is an *fs.PathError's cause alone ("permission denied"):
// the messages around it name the file already.
func pathErrorCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func keyFileMissing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}
