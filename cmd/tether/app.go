package main

import (
	"context"
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
	var st appStore
	keyFile := g.keyFile
	if isPostgresURL(g.db) {
		pst, err := postgres.Open(ctx, g.db, postgres.Options{})
		if err != nil {
			return nil, err
		}
		st = pst
	} else {
		sst, err := sqlite.Open(ctx, g.db, sqlite.Options{})
		if err != nil {
			return nil, err
		}
		st = sst
		if keyFile == "" {
			keyFile = registry.KeyFilePath(g.db)
		}
	}
	if cfg.Keyring == nil {
		if keyFile != "" {
			cfg.Keyring = registry.NewKeyFile(keyFile)
		} else {
			cfg.Keyring = noKeyFile{}
		}
	}
	return &app{store: st, reg: registry.New(st, cfg)}, nil
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
