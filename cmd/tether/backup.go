package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

func init() {
	register(newBackupCmd)
	register(newRestoreCmd)
}

// keyFileWarning is said by both commands: the key file seals webhook
// secrets and agents' HMAC keys, and a backup without it cannot use them.
// It names the key file this invocation uses: --key-file, or for SQLite the
// file beside the database.
func keyFileWarning(g *globals) string {
	where := "the file given with --key-file"
	switch {
	case g.keyFile != "":
		where = g.keyFile
	case !isPostgresURL(g.db):
		where = registry.KeyFilePath(g.db)
	}
	return fmt.Sprintf("The key file (%s) is not in the backup: keep a copy of it with the backup; without it, agents' HMAC keys and webhooks' secrets cannot be unsealed.", where)
}

// count says "1 audit entry" or "3 audit entries".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func newBackupCmd(g *globals) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "backup --to FILE",
		Short: "Copy the SQLite database consistently, while tether serve runs",
		Long: `Write a consistent copy of the SQLite database to FILE (VACUUM INTO: a read
transaction, so tether serve keeps answering), check the copy's integrity, and
say what it holds. FILE must not exist; it is created with mode 0600.

For PostgreSQL use pg_dump: tether says how.`,
		Example: `  tether --db /var/lib/tether/tether.db backup --to /backups/tether-$(date +%F).db`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usagef("backup needs --to FILE, where to write the copy")
			}
			if err := checkDBNamed(g); err != nil {
				return err
			}
			if isPostgresURL(g.db) {
				return failf("tether does not copy a PostgreSQL database itself; use PostgreSQL's own tool, for example: pg_dump --format=custom --file=tether.dump 'postgres://USER@HOST/DB' (and pg_restore to restore it). %s", keyFileWarning(g))
			}
			if _, err := os.Stat(g.db); err != nil {
				return failf("there is no database at %s to back up (--db or $TETHER_DB names it)", g.db)
			}
			ctx := cmd.Context()
			a, err := openApp(ctx, g, registry.Config{})
			if err != nil {
				return err
			}
			defer a.Close()
			st, ok := a.store.(*sqlite.Store)
			if !ok {
				return failf("backup works on SQLite databases only")
			}
			info, err := st.Backup(ctx, to)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, info)
			}
			fmt.Fprintf(g.stdout, "Backed up %s to %s: %s, schema version %d, %s, %s, %s; integrity check ok.\n%s\n",
				g.db, info.Path, humanBytes(info.Bytes), info.SchemaVersion, count(info.Clusters, "cluster", "clusters"), count(info.Jobs, "job", "jobs"), count(info.AuditEntries, "audit entry", "audit entries"), keyFileWarning(g))
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the file to write (must not exist)")
	return cmd
}

func newRestoreCmd(g *globals) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "restore --from FILE",
		Short: "Replace the SQLite database with a backup (tether serve must be stopped)",
		Long: `Replace the SQLite database (--db) with the backup FILE, after checking the
backup's integrity and schema version, and that no process (tether serve, a
console) has the database open. The database it replaces is kept next to it as
DB.before-restore-<time>.`,
		Example: `  systemctl stop tether
  tether --db /var/lib/tether/tether.db restore --from /backups/tether-2026-11-24.db
  systemctl start tether`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usagef("restore needs --from FILE, the backup to restore")
			}
			if err := checkDBNamed(g); err != nil {
				return err
			}
			if isPostgresURL(g.db) {
				return failf("tether does not restore a PostgreSQL database itself; use pg_restore with the pg_dump file")
			}
			// The restored file keeps the owner of the one it replaces: a
			// restore run as root (the systemd unit's state directory is
			// root's only) must not leave a database the service's own
			// user cannot open.
			was := fileOwner(g.db)
			info, kept, err := sqlite.Restore(cmd.Context(), from, g.db)
			if err != nil {
				return err
			}
			if err := was.give(g.db); err != nil {
				return failf("restored %s, but could not give it the owner of the database it replaced (%v): change its owner to tether's user before starting tether", g.db, err)
			}
			if g.output == "json" {
				return printJSON(g.stdout, map[string]any{"restored": info, "previous": kept})
			}
			fmt.Fprintf(g.stdout, "Restored %s from %s: schema version %d, %s, %s.\n", g.db, from, info.SchemaVersion, count(info.Clusters, "cluster", "clusters"), count(info.Jobs, "job", "jobs"))
			if kept != "" {
				fmt.Fprintf(g.stdout, "The database it replaced is kept as %s.\n", kept)
			}
			fmt.Fprintln(g.stdout, keyFileWarning(g))
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the backup file to restore")
	return cmd
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
