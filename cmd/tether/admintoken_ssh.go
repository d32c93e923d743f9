package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/registry"
)

// maxSSHKeyFile bounds what --ssh-key-file reads: authorized_keys lines
// are short, and a private key or a wrong file should fail fast.
const maxSSHKeyFile = 64 << 10

// readSSHKeyFiles reads --ssh-key-file files ("-": stdin) whole; the
// registry parses and checks the keys in them.
func readSSHKeyFiles(files []string) ([]string, error) {
	var out []string
	for _, name := range files {
		var b []byte
		var err error
		if name == "-" {
			b, err = io.ReadAll(io.LimitReader(os.Stdin, maxSSHKeyFile+1))
		} else {
			b, err = readLimited(name)
		}
		if err != nil {
			return nil, usagef("--ssh-key-file %s: %v", name, err)
		}
		if len(b) > maxSSHKeyFile {
			return nil, usagef("--ssh-key-file %s is larger than %d KiB: is it an SSH public key file (the .pub next to your key)?", name, maxSSHKeyFile>>10)
		}
		out = append(out, string(b))
	}
	return out, nil
}

func readLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSSHKeyFile+1))
}

func sshKeyCount(keys []registry.SSHKey) string {
	if len(keys) == 0 {
		return ""
	}
	return strconv.Itoa(len(keys))
}

func printSSHKeys(g *globals, t registry.AdminToken) error {
	if len(t.SSHKeys) == 0 {
		_, err := fmt.Fprintf(g.stdout, "%s holds no SSH keys: it cannot open the console over SSH.\n", t.Name)
		return err
	}
	fmt.Fprintf(g.stdout, "SSH keys that open the console as ssh:%s:\n", t.Name)
	for _, k := range t.SSHKeys {
		fmt.Fprintf(g.stdout, "  %s  %s\n", k.Fingerprint, k.Comment)
	}
	return nil
}

func newAdminTokenEditCmd(g *globals) *cobra.Command {
	var (
		keyFiles []string
		noKeys   bool
	)
	cmd := &cobra.Command{
		Use:   "edit NAME (--ssh-key-file KEY.pub ... | --no-ssh-keys)",
		Short: "Change an admin identity's SSH keys",
		Long: `Replace the SSH public keys of an admin identity by those in the
--ssh-key-file files, or take them all away with --no-ssh-keys. Its open
console sessions over SSH whose key it no longer holds end within seconds.
The change is audited with the keys' fingerprints.`,
		Example: `  tether admin-token edit alice --ssh-key-file ~/.ssh/id_ed25519.pub --ssh-key-file laptop.pub
  tether admin-token edit alice --no-ssh-keys`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(keyFiles) > 0) == noKeys {
				return usagef("admin-token edit needs --ssh-key-file FILE (repeat for more) or --no-ssh-keys")
			}
			keys, err := readSSHKeyFiles(keyFiles)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			tok, err := api.SetAdminTokenSSHKeys(adminContext(ctx), args[0], keys)
			if err != nil {
				return err
			}
			g.mutated = true
			if g.output == "json" {
				return printJSON(g.stdout, tok)
			}
			return printSSHKeys(g, *tok)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&keyFiles, "ssh-key-file", nil, "an SSH public key file (authorized_keys form; - reads stdin); the identity's keys become those of these files")
	f.BoolVar(&noKeys, "no-ssh-keys", false, "take every SSH key away: the identity no longer opens the console over SSH")
	return cmd
}
