package main

import (
	"context"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// app is an open registry over the --db database.
type app struct {
	store *sqlite.Store
	reg   *registry.Registry
}

// openApp opens the database (creating it and its schema if needed) and the
// registry over it. The key file for HMAC keys lives next to the database and
// is created on first use.
func openApp(ctx context.Context, g *globals, cfg registry.Config) (*app, error) {
	st, err := sqlite.Open(ctx, g.db, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	if cfg.Keyring == nil {
		cfg.Keyring = registry.NewKeyFile(registry.KeyFilePath(g.db))
	}
	return &app{store: st, reg: registry.New(st, cfg)}, nil
}

func (a *app) Close() {
	a.reg.Close()
	a.store.Close()
}

// adminContext attributes the command's actions to the admin running it.
func adminContext(ctx context.Context) context.Context {
	return registry.WithActor(ctx, adminActor())
}
