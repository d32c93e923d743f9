package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

func init() { register(newKeysCmd) }

func newKeysCmd(g *globals) *cobra.Command {
	return groupCommand("keys", "Manage the key file that seals agents' HMAC keys and webhook secrets", newKeysInitCmd(g), newKeysRotateCmd(g), newKeysRetireCmd(g), newKeysListCmd(g))
}

func newKeysInitCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the key file (never replacing one)",
		Long: `Create the key file: 32 random bytes, base64, after the line prefix
"tether-key-v1:", in a file of mode 0600. tether seals agents' HMAC keys and
webhooks' signing secrets with it (AES-256-GCM).

For SQLite it defaults to the database's path + ".key" (and is created on
first use if the database has sealed nothing yet). For PostgreSQL, create one
with --key-file and give every replica a copy: serve refuses to start without
it. Keep it with your backups; a database restored without it cannot open its
sealed secrets. tether never replaces an existing key file.`,
		Example: `  tether --db postgres://tether@db/tether keys init --key-file /etc/tether/tether.key
  tether --db /var/lib/tether/tether.db keys init`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := g.keyFile
			if path == "" {
				if err := checkDBNamed(g); err != nil {
					return err
				}
				if isPostgresURL(g.db) {
					return usagef("keys init for PostgreSQL needs --key-file FILE: where to write the key every replica will share")
				}
				path = registry.KeyFilePath(g.db)
			}
			if err := registry.CreateKeyFile(path); err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, map[string]string{"keyFile": path})
			}
			fmt.Fprintf(g.stdout, "Created the key file %s (mode 0600). Back it up with the database, and keep it as secret as the database itself.\n", path)
			return nil
		},
	}
}
