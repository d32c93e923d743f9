package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

// keyRing opens the app and its key file for keys rotate/retire/list: the
// file must exist (there is nothing to rotate, retire or list otherwise).
func keyRingApp(cmd *cobra.Command, g *globals) (*app, *registry.KeyFile, error) {
	path := g.keyFile
	if path == "" {
		if err := checkDBNamed(g); err != nil {
			return nil, nil, err
		}
		if isPostgresURL(g.db) {
			return nil, nil, usagef("%s for PostgreSQL needs --key-file FILE: the key file every replica shares", cmd.CommandPath())
		}
		path = registry.KeyFilePath(g.db)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, nil, failf("there is no key file at %s: nothing to %s (tether keys init creates one; --key-file names another)", path, cmd.Name())
	}
	kf := registry.ExistingKeyFile(path)
	a, err := openApp(cmd.Context(), g, registry.Config{Keyring: kf})
	if err != nil {
		return nil, nil, err
	}
	return a, kf, nil
}

// keepKeyFileOwner gives the key file, which rotate and retire write anew,
// back to the user who owned it: run as root next to the systemd unit's
// database, they would otherwise leave a file of mode 0600 that the
// service's own user cannot read, and serve would go on with the old keys
// while the database holds values sealed with the new one.
func keepKeyFileOwner(was *owner, kf *registry.KeyFile) error {
	if err := was.give(kf.Path()); err != nil {
		return failf("the key file %s was rewritten, but could not be given back to its owner (%v): change its owner to tether's user, then run tether keys retire", kf.Path(), err)
	}
	return nil
}

func newKeysRotateCmd(g *globals) *cobra.Command {
	var stage bool
	var batch int
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Seal every secret under a new key, without downtime",
		Long: `Give the key file a new primary key and re-seal every sealed value in the
database under it (agents' HMAC keys, webhook secrets, payload-signing keys,
the CA's key, sealed job payloads), a batch per transaction. The previous key
stays in the file, as "old", to open what it sealed: serving goes on during
and after (serve reads the changed file within seconds, or at SIGHUP). Once
every process uses the new file, 'tether keys retire' drops the old key.

First it checks that the key file opens what the database holds, and changes
nothing if it does not.

With several replicas (PostgreSQL), each has its own copy of the file:
  1. tether keys rotate --stage   adds the new key, which only opens for now;
                                  copy the file to every replica
  2. tether keys rotate           makes it the primary and re-seals;
                                  copy the file to every replica again
  3. tether keys retire           re-seals what a replica sealed meanwhile with
                                  the old key, then drops it; copy the file again`,
		Example: `  tether keys rotate
  tether --db postgres://tether@db/tether --key-file /etc/tether/tether.key keys rotate --stage`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, kf, err := keyRingApp(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			ctx := adminContext(cmd.Context())
			if _, err := a.reg.CheckKeyring(ctx); err != nil {
				return err
			}
			was := fileOwner(kf.Path())
			k, err := kf.Rotate(stage)
			if err != nil {
				return err
			}
			if err := keepKeyFileOwner(was, kf); err != nil {
				return err
			}
			if stage {
				if g.output == "json" {
					return printJSON(g.stdout, map[string]string{"staged": k.ID, "keyFile": kf.Path()})
				}
				_, err := fmt.Fprintf(g.stdout, "Staged key %s in %s: it opens, and seals nothing yet. Copy the file to every replica, then run: tether keys rotate\n", k.ID, kf.Path())
				return err
			}
			rep, err := a.reg.Reseal(ctx, batch)
			if err != nil {
				return fmt.Errorf("key %s is the primary now, but re-sealing stopped (run tether keys rotate's re-seal again with tether keys retire, which resumes it): %w", k.ID, err)
			}
			if g.output == "json" {
				return printJSON(g.stdout, rep)
			}
			_, err = fmt.Fprintf(g.stdout, "Key %s is the primary of %s; re-sealed %d values%s.\nThe previous key stays to open what others still seal with it: once every process uses this file, run: tether keys retire\n",
				k.ID, kf.Path(), rep.Total, describeReseal(rep))
			return err
		},
	}
	cmd.Flags().BoolVar(&stage, "stage", false, "only add the new key (it opens, seals nothing): for several replicas, copy the file to each before rotating")
	cmd.Flags().IntVar(&batch, "batch", registry.DefaultResealBatch, "values re-sealed per transaction")
	return cmd
}

func describeReseal(rep *registry.ResealReport) string {
	var parts []string
	for _, kind := range registry.SealedKinds {
		if n := rep.Resealed[kind]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(string(kind), "_", " "), n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func newKeysRetireCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "retire",
		Short: "Drop the old keys from the key file once no stored value uses them",
		Long: `Re-seal under the primary key whatever is still sealed with an old key (a
replica with an older file may have sealed some since the rotation), then
remove from the key file the old keys no stored value uses. It refuses while
an old key still seals something.`,
		Example: "  tether keys retire",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, kf, err := keyRingApp(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			ctx := adminContext(cmd.Context())
			rep, err := a.reg.Reseal(ctx, 0)
			if err != nil {
				return err
			}
			usage, err := a.reg.SealedKeyUsage(ctx)
			if err != nil {
				return err
			}
			was := fileOwner(kf.Path())
			removed, err := kf.Retire(usage)
			if err != nil {
				return err
			}
			if err := keepKeyFileOwner(was, kf); err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, map[string]any{"retired": removed, "resealed": rep.Total})
			}
			if len(removed) == 0 {
				_, err = fmt.Fprintf(g.stdout, "No old key to retire in %s (re-sealed %d values).\n", kf.Path(), rep.Total)
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "Retired %s from %s (re-sealed %d values first). Copy the file to every replica.\n", strings.Join(removed, ", "), kf.Path(), rep.Total)
			return err
		},
	}
}

func newKeysListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the key file's keys and how many stored values each seals",
		Example: "  tether keys list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a, kf, err := keyRingApp(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			keys, err := kf.Keys()
			if err != nil {
				return err
			}
			usage, err := a.reg.SealedKeyUsage(adminContext(cmd.Context()))
			if err != nil {
				return err
			}
			type row struct {
				registry.RingKey
				Values int `json:"values"`
			}
			rows := make([]row, len(keys))
			for i, k := range keys {
				rows[i] = row{k, usage[k.ID]}
			}
			if g.output == "json" {
				return printJSON(g.stdout, map[string]any{"keys": rows, "unnamed": usage[""]})
			}
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].Role == registry.KeyPrimary && rows[j].Role != registry.KeyPrimary })
			t := newTable(g.stdout, "KEY", "ROLE", "VALUES")
			for _, r := range rows {
				t.row(r.ID, r.Role, fmt.Sprint(r.Values))
			}
			if n := usage[""]; n > 0 {
				t.row("(first format)", "-", fmt.Sprint(n))
			}
			return t.flush()
		},
	}
}
